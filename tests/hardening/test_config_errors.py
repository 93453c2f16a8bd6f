"""Config validation errors name the rule and the path; they never quote the config itself."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, field_validator

from gigi_core import hookimpl
from gigi_core.errors import ConfigError
from gigi_core.testing import open_test_kernel
from tests.hardening.plugin_kit import DEFAULT_CONFIG, Kit

CANARY = "sk-CANARY-5e1f0c9a77d2"
PROPS = DEFAULT_CONFIG["properties"]

WHOLE_OBJECT_RULES = {
    "maxProperties": {"maxProperties": 1},
    "minProperties": {"minProperties": 3},
    "anyOf": {"anyOf": [{"required": ["city"]}, {"required": ["zone"]}]},
    "oneOf": {"oneOf": [{"required": ["city"]}, {"required": ["zone"]}]},
    "not": {"not": {"required": ["token"]}},
    "then": {"if": {"required": ["token"]}, "then": {"maxProperties": 1}},
    "dependentRequired": {"dependentRequired": {"token": ["city"]}},
}


@pytest.mark.parametrize("rule", sorted(WHOLE_OBJECT_RULES))
async def test_whole_object_rules_name_the_rule_not_the_config(tmp_path, rule) -> None:
    schema = {"type": "object", "properties": PROPS, **WHOLE_OBJECT_RULES[rule]}
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("kit", Kit(tmp_path, config=schema))]
    ) as kernel:
        with pytest.raises(ConfigError) as caught:
            await kernel.enable_plugin("g1", "kit", config={"token": CANARY, "units": "metric"})
        message = str(caught.value)
        assert CANARY not in message and "metric" not in message
        assert message.startswith("invalid config for kit: (config): ")
        assert rule in message  # the rule is named (with its schema path)
        assert await kernel.plugin_state.get("g1", "kit") is None


async def test_field_errors_name_the_field_and_bound_without_the_value(tmp_path) -> None:
    schema = {
        "type": "object",
        "properties": {**PROPS, "units": {"type": "string", "maxLength": 3}},
    }
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("kit", Kit(tmp_path, config=schema))]
    ) as kernel:
        with pytest.raises(ConfigError) as caught:
            await kernel.configure_plugin("g1", "kit", {"token": "x", "units": "imperial-units"})
    message = str(caught.value)
    assert "imperial-units" not in message
    assert "units" in message and "maxLength" in message and "3" in message


class TokenModel(BaseModel):
    token: str
    units: str = "metric"

    @field_validator("token")
    @classmethod
    def looks_like_a_key(cls, value: str) -> str:
        if not value.startswith("sk-live-"):
            raise ValueError(f"{value} is not a live key")  # an author's message quoting it
        return value


class ModelPlugin(Kit):
    @hookimpl
    def register_config_models(self, register):
        register("kit", TokenModel)


async def test_config_model_errors_do_not_quote_the_value(tmp_path) -> None:
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("kit", ModelPlugin(tmp_path))]
    ) as kernel:
        with pytest.raises(ConfigError) as caught:
            await kernel.enable_plugin("g1", "kit", config={"token": CANARY})
    message = str(caught.value)
    assert CANARY not in message
    assert "token" in message
