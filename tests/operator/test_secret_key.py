"""The embedded default's key file, the missing-key error and the start-up warning."""

from __future__ import annotations

import logging
import stat

import pytest

from gigi_core.errors import SecretsError
from gigi_core.kernel import Kernel
from gigi_core.plugins import LoadOptions, load_plugins
from gigi_core.store.sealing import KEY_FILE, Sealer, generate_key
from gigi_core.store.secrets import unopenable_secrets, warn_unopenable_secrets
from tests.toolbox import Toolbox


def test_embedded_default_creates_a_private_key_file_on_first_use(tmp_path, caplog) -> None:
    home = tmp_path / "home"
    sealer = Sealer.from_env(home=home, database_url=None)
    assert not (home / KEY_FILE).exists()  # nothing is written until a secret is sealed
    with caplog.at_level(logging.INFO, logger="gigi_core.store.sealing"):
        sealed = sealer.seal("sk-1", "ad")
    path = home / KEY_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    said = [r.getMessage() for r in caplog.records if "key file" in r.getMessage()]
    assert len(said) == 1 and str(path) in said[0] and "GIGI_SECRET_KEY" in said[0]
    caplog.clear()
    again = Sealer.from_env(home=home, database_url=None)  # the next process reads it back
    with caplog.at_level(logging.INFO, logger="gigi_core.store.sealing"):
        assert again.open(sealed, "ad") == "sk-1"
        again.seal("sk-2", "ad")
    assert not [r for r in caplog.records if "key file" in r.getMessage()]  # said once


def test_the_environment_key_wins_and_the_key_file_still_opens_old_secrets(
    tmp_path, monkeypatch
) -> None:
    home = tmp_path / "home"
    old = Sealer.from_env(home=home, database_url=None).seal("sk-old", "ad")
    monkeypatch.setenv("GIGI_SECRET_KEY", generate_key())
    sealer = Sealer.from_env(home=home, database_url=None)
    assert sealer.current_key_id != old.key_id
    assert sealer.open(old, "ad") == "sk-old"  # `gigi secrets rotate` can re-seal it


def test_postgresql_never_gets_a_key_file(tmp_path) -> None:
    home = tmp_path / "home"
    sealer = Sealer.from_env(home=home, database_url="postgresql+psycopg://u@h/db")
    with pytest.raises(SecretsError, match="no secret key is set"):
        sealer.seal("x", "ad")
    assert not (home / KEY_FILE).exists()


def test_run_state_and_secrets_share_the_embedded_key(tmp_path) -> None:
    from gigi_core.store.sealing import state_sealer

    home = tmp_path / "home"
    operator = Sealer.from_env(home=home, database_url=None)
    state = state_sealer(home, operator)  # run state is sealed first, on the first request
    assert operator.current_key_id == state.current_key_id
    assert operator.keyed_hash(b"x") == state.keyed_hash(b"x")


def test_missing_key_names_the_key_id_and_how_to_supply_it() -> None:
    key = generate_key()
    sealed = Sealer(key).seal("sk-1", "ad")
    with pytest.raises(SecretsError) as unset:
        Sealer(None).open(sealed, "ad")
    text = str(unset.value)
    assert sealed.key_id in text and "GIGI_SECRET_KEY" in text
    assert "no secret key is configured" in text and "retired" not in text.lower()
    with pytest.raises(SecretsError) as other:
        Sealer(generate_key()).open(sealed, "ad")
    text = str(other.value)
    assert sealed.key_id in text and "GIGI_SECRET_KEYS_RETIRED" in text


async def test_start_up_warns_when_stored_secrets_cannot_be_opened(tmp_path, caplog) -> None:
    old = generate_key()
    loaded = load_plugins(LoadOptions(load=frozenset()), extra=[("box", Toolbox(tmp_path))])
    url = f"sqlite+aiosqlite:///{tmp_path / 'gigi.db'}"
    async with await Kernel.open(url, tmp_path, plugins=loaded, sealer=Sealer(old)) as kernel:
        await kernel.enable_plugin("g1", "box", config={"api_token": "sk-1"})
        assert await unopenable_secrets(kernel.db, kernel.sealer) == []
        kernel.sealer = kernel.secrets.sealer = Sealer(None)
        with caplog.at_level(logging.WARNING):
            [warning] = await warn_unopenable_secrets(kernel)
        key_id = Sealer(old).current_key_id
        assert f"1 stored secret sealed with key {key_id}" in warning
        assert "GIGI_SECRET_KEY" in warning and "sk-1" not in warning
        assert warning in caplog.text
        kernel.sealer = kernel.secrets.sealer = Sealer(generate_key(), [old])
        assert await warn_unopenable_secrets(kernel) == []
