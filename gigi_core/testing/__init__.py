"""Helpers for testing Gigi and Gigi plugins: fake provider servers and fixtures."""
