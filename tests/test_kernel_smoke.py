from gigi_core import Actor


async def test_dice_roll_on_both_backends(kernel):
    await kernel.enable_plugin("g1", "dice")
    outcome = await kernel.call_tool(
        "dice.roll", {"sides": 6, "count": 3}, actor=Actor(id="u1"), guild_id="g1"
    )
    assert len(outcome.result["faces"]) == 3
    assert outcome.result["total"] == sum(outcome.result["faces"])
    assert all(1 <= f <= 6 for f in outcome.result["faces"])
