"""The context modes a request may ask for (imported by the CLI at start-up: keep it light)."""

MODES = ("none", "channel", "memory", "knowledge", "catalog", "auto")
