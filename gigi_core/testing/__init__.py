"""Helpers for testing Gigi and Gigi plugins: fake provider servers and fixtures."""

from typing import Any

__all__ = ["open_test_kernel"]


def __getattr__(name: str) -> Any:
    if name == "open_test_kernel":
        from gigi_core.testing.kernel import open_test_kernel

        return open_test_kernel
    raise AttributeError(f"module 'gigi_core.testing' has no attribute {name!r}")
