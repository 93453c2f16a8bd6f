"""The published JSON Schema of manifest v1, generated from the pydantic models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SCHEMA_ID = "https://gigi.dev/schemas/manifest-v1.json"


def manifest_json_schema() -> dict[str, Any]:
    """The manifest JSON Schema; committed as manifests/manifest-v1.schema.json."""
    from gigi_core.manifest.validation import Manifest

    schema = Manifest.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}


def render_schema() -> str:
    return json.dumps(manifest_json_schema(), indent=2, sort_keys=True) + "\n"


def committed_schema_path() -> Path:
    """Where the schema lives: the repo's manifests/ or the wheel's bundled copy."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here.parent / "manifests", here / "_manifests"):
        if (candidate / "manifest-v1.schema.json").exists():
            return candidate / "manifest-v1.schema.json"
    return here.parent / "manifests" / "manifest-v1.schema.json"
