"""The ambient plugin's tests, a package so its conftest never takes the module name ``conftest``."""
