"""The fast reading of handler parameters agrees with ``inspect.signature`` on every shape."""

from __future__ import annotations

import functools
import inspect
from typing import Any

import pytest

from gigi_core.plugins import _parameters, _signature_problems


def f_plain(ctx, text, count=1): ...
def f_kwonly(ctx, *, text, count=2): ...
def f_varargs(ctx, *args, text, **kwargs): ...
def f_posonly(ctx, a, /, b, c=3, *, d, e=5): ...
def f_nothing(): ...
def f_kwargs_only(**kwargs): ...
def f_star(*args): ...
async def f_async(ctx, text, *, n=1): ...


class Holder:
    def method(self, ctx, text): ...
    def star(*args): ...
    def none(): ...
    def kwonly(*, ctx): ...

    @classmethod
    def klass(cls, ctx, text=""): ...


def wrapped(fn: Any) -> Any:
    @functools.wraps(fn)
    def inner(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return inner


HANDLERS = [
    f_plain,
    f_kwonly,
    f_varargs,
    f_posonly,
    f_nothing,
    f_kwargs_only,
    f_star,
    f_async,
    Holder().method,
    Holder().star,
    Holder().none,
    Holder().kwonly,
    Holder.klass,
    wrapped(f_plain),
    functools.partial(f_posonly, None),
    lambda ctx, x=1: x,
]


def expected(handler: Any) -> list[tuple[str, Any, bool]] | None:
    try:
        params = inspect.signature(handler).parameters.values()
    except (TypeError, ValueError):
        return None
    return [(p.name, p.kind, p.default is not p.empty) for p in params]


@pytest.mark.parametrize(
    "handler", HANDLERS, ids=lambda h: getattr(h, "__name__", type(h).__name__)
)
def test_parameters_match_inspect(handler: Any) -> None:
    assert _parameters(handler) == expected(handler)


def test_problems_name_what_the_manifest_and_handler_disagree_on() -> None:
    schema = {"type": "object", "properties": {"text": {"type": "string"}, "n": {}}}
    problems = _signature_problems("p.a", f_plain, schema)
    assert problems == [
        "handler for 'p.a' does not accept argument 'n' from its manifest",
        "handler for 'p.a' requires 'text', which the manifest makes optional without a default",
    ]
    assert _signature_problems("p.a", f_nothing, schema) == [
        "handler for 'p.a' must accept ctx as its first parameter"
    ]
    assert _signature_problems("p.a", f_varargs, schema) == []
