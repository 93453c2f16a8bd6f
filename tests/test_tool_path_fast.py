"""The tool path's shortcuts give what the long way gives: one JSON dump, one bounds walk."""

from __future__ import annotations

import json

import pytest

from gigi_core.errors import InvalidArguments, ToolExecutionError
from gigi_core.testing import open_test_kernel
from gigi_core.tools import bounds
from gigi_core.tools.invoke import _as_json, validate_args
from tests.toolbox import Toolbox


class _Spec:
    name = "box.any"
    result = None


def test_one_dump_is_the_plain_copy_and_the_model_text() -> None:
    result = {"b": [1, 2.5, (3, "é")], "a": {"z": None, "y": True}}
    plain, text = _as_json(None, _Spec(), result)  # type: ignore[arg-type]
    assert plain == {"b": [1, 2.5, [3, "é"]], "a": {"z": None, "y": True}}
    assert text == json.dumps(plain, ensure_ascii=False, sort_keys=True)
    result["a"]["z"] = "changed later by the handler"
    assert plain["a"]["z"] is None  # a copy


def test_keys_that_are_not_strings_are_dumped_from_the_plain_copy() -> None:
    plain, text = _as_json(None, _Spec(), {10: "a", 9: "b", "x": [{1: 2}]})  # type: ignore[arg-type]
    assert plain == {"10": "a", "9": "b", "x": [{"1": 2}]}
    assert text is None  # sorting 9 < 10 is not sorting "10" < "9": the caller dumps plain
    with pytest.raises(ToolExecutionError, match="not JSON"):
        _as_json(None, _Spec(), {"x": float("nan")})  # type: ignore[arg-type]


async def test_bounds_are_skipped_only_for_arguments_checked_under_the_same_limits(
    tmp_path, monkeypatch
) -> None:
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("box", Toolbox(tmp_path))]
    ) as kernel:
        spec = kernel.registry.actions["box.echo"]
        deep: dict = {"text": "a"}
        inner = deep
        for _ in range(40):
            inner["x"] = inner = {}
        with pytest.raises(InvalidArguments, match="nested deeper"):
            validate_args(kernel, spec, deep)
        with pytest.raises(InvalidArguments, match="nested deeper"):
            validate_args(kernel, spec, deep, bounded=True)  # no limits given: checked
        with pytest.raises(InvalidArguments, match="nested deeper"):
            validate_args(kernel, spec, deep, limits=bounds.limits())
        # 2.0 where the schema says integer still becomes 2, and defaults are filled
        assert validate_args(kernel, spec, {"text": "a", "n": 2.0}) == {"text": "a", "n": 2}
        assert validate_args(kernel, spec, {"text": "a"}) == {"text": "a", "n": 1}
