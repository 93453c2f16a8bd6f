from __future__ import annotations

import pytest

from gigi_core.agent.runtime import AgentRuntime
from gigi_core.testing import open_test_kernel
from gigi_core.testing.scripted import ScriptedModel
from tests.toolbox import Toolbox


@pytest.fixture
async def env(database_url, tmp_path):
    """A kernel with dice and the toolbox enabled in g1, and a runtime factory with a script."""
    toolbox = Toolbox(tmp_path)
    async with open_test_kernel(
        tmp_path, plugins=["dice"], extra_plugins=[("box", toolbox)], database_url=database_url
    ) as kernel:
        await kernel.enable_plugin("g1", "dice")
        await kernel.enable_plugin("g1", "box")

        def runtime(*turns, **kwargs):
            model = ScriptedModel(list(turns))
            return AgentRuntime(kernel, model=model, **kwargs), model

        yield kernel, toolbox, runtime
