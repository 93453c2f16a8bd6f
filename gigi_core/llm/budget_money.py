"""Money budgets: prices on profiles, what a call may cost in money, and the check that a
money budget only covers profiles that declare prices.

Prices are per million input / output tokens, in the profile's currency; a money budget's
limit and counters are kept in millionths of its currency, so a call's cost in them is
``input_tokens x input_price + output_tokens x output_price``, rounded up.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING

from gigi_core.llm.records import LlmConfigError, Owner

if TYPE_CHECKING:
    from gigi_core.llm.profiles import ProfileStore
    from gigi_core.llm.records import ProfileInfo

#: A money budget's amounts are millionths of its currency.
MICROS = 1_000_000
_CURRENCY = re.compile(r"^[A-Z]{3,8}$")


def cost(prices: tuple[float, float] | None, input_tokens: int, output_tokens: int) -> int | None:
    """The cost in millionths of the currency (None: no prices to count it with)."""
    if prices is None:
        return None
    return math.ceil(input_tokens * prices[0] + output_tokens * prices[1])


def check_prices(
    input_price: float | None, output_price: float | None, currency: str | None
) -> tuple[float | None, float | None, str | None]:
    """Both prices or neither, not negative; the currency a code like USD (the default)."""
    if input_price is None and output_price is None:
        if currency:
            raise LlmConfigError(
                "--currency without prices", hint="add --input-price and --output-price"
            )
        return None, None, None
    if input_price is None or output_price is None:
        raise LlmConfigError(
            "a profile's prices come in pairs",
            hint="give both --input-price and --output-price, per million tokens (on "
            "Discord and the console: input_price and output_price)",
        )
    if (
        input_price < 0
        or output_price < 0
        or not all(map(math.isfinite, (input_price, output_price)))
    ):
        raise LlmConfigError(
            "prices cannot be negative", hint="--input-price and --output-price are 0 or more"
        )
    code = (currency or "USD").strip().upper()
    if not _CURRENCY.match(code):
        raise LlmConfigError(
            f"--currency {currency!r} is not a currency code", hint="e.g. USD or EUR"
        )
    return float(input_price), float(output_price), code


def parse_limit(raw: str | int, unit: str) -> int:
    """A budget's stored limit: whole tokens, or an amount of money in millionths."""
    text = str(raw).strip()
    if unit == "tokens":
        if not text.isdigit():
            raise LlmConfigError(
                f"the limit {text!r} is not a whole number of tokens", hint="e.g. 200000"
            )
        return int(text)
    try:
        amount = Decimal(text)
    except InvalidOperation:
        raise LlmConfigError(
            f"the limit {text!r} is not an amount of money", hint="e.g. 5 or 2.50"
        ) from None
    if not amount.is_finite() or amount < 0:
        raise LlmConfigError(f"the limit {text!r} is not an amount of money", hint="use 0 or more")
    return int(amount * MICROS)


def show(amount: int, unit: str, currency: str | None) -> str:
    """An amount as people read it: "1200 tokens" or "2.50 USD"."""
    if unit != "money":
        return f"{amount} tokens"
    text = f"{Decimal(amount) / MICROS:,.6f}".rstrip("0")  # 2.50, 0.0007: never rounded away
    whole, _, cents = text.partition(".")
    return f"{whole}.{cents.ljust(2, '0')} {currency or ''}".rstrip()


def _covers(profile: ProfileInfo, scope_kind: str, scope_id: str) -> bool:
    if scope_kind != "model":
        return True
    return scope_id in (profile.provider, f"{profile.provider}/{profile.model}")


async def money_currency(
    profiles: ProfileStore, guild_id: str, scope_kind: str, scope_id: str
) -> str:
    """The currency a money budget counts in: its guild's profiles (the ones it covers)
    must all declare prices in one currency; the refusal names the profile and the flag."""
    owner = Owner.guild(guild_id)
    found = [p for p in await profiles.find(owner) if _covers(p, scope_kind, scope_id)]
    if not found:
        raise LlmConfigError(
            f"a money budget needs a model profile of {owner} with prices, and it has none",
            hint=f"`gigi llm profile set --owner {owner} --purpose chat ... "
            "--input-price P --output-price Q` (per million tokens)",
        )
    currencies = set()
    for p in found:
        if p.input_price is None or p.output_price is None:
            raise LlmConfigError(
                f"a money budget needs prices on every profile it covers; {owner}'s "
                f"{p.purpose} profile ({p.model}) has none",
                hint=f"`gigi llm profile set --owner {owner} --purpose {p.purpose} --credential "
                f"{p.credential_label} --model {p.model} --input-price P --output-price Q` "
                "(per million tokens; on Discord the input_price and output_price options)",
            )
        currencies.add(p.currency or "USD")
    if len(currencies) > 1:
        raise LlmConfigError(
            f"{owner}'s profiles price in {', '.join(sorted(currencies))}: one money budget "
            "counts in one currency",
            hint="give the profiles one --currency",
        )
    return currencies.pop()
