"""Manifest v1: models, YAML loading with file:line errors, JSON Schema export."""

from gigi_core.manifest.loader import LoadedManifest, load_manifest
from gigi_core.manifest.models import ActionSpec, CapabilitySpec, ConfirmRule, Manifest, Safety

__all__ = [
    "ActionSpec",
    "CapabilitySpec",
    "ConfirmRule",
    "LoadedManifest",
    "Manifest",
    "Safety",
    "load_manifest",
]
