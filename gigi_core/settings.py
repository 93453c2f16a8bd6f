"""Process settings from the environment; explicit arguments win."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


def default_home() -> Path:
    from platformdirs import user_data_dir

    return Path(user_data_dir("gigi", appauthor=False))


@dataclass(frozen=True)
class Settings:
    home: Path
    database_url: str | None

    @classmethod
    def resolve(cls, database_url: str | None = None, home: str | Path | None = None) -> Settings:
        home_path = Path(home or os.environ.get("GIGI_HOME") or default_home()).expanduser()
        return cls(home_path, database_url or os.environ.get("GIGI_DATABASE_URL") or None)
