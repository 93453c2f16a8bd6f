"""MCP servers the bridge tests run: hostile.py (SDK 2.x) and legacy.py (2025 protocol only)."""
