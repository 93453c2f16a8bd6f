"""The deterministic tool-call path and the context handlers receive."""
