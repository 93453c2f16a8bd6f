"""``Sealer.seal_many``: batches of AES-GCM seals with counter nonces that never repeat."""

from __future__ import annotations

import pytest

from gigi_core.errors import SecretsError
from gigi_core.store import sealing
from gigi_core.store.sealing import NonceCounter, Sealed, Sealer, generate_key


def test_a_batch_opens_with_the_ordinary_open_and_binds_its_associated_data() -> None:
    sealer = Sealer(generate_key())
    items = [(f"message {i}", f"gigi-memory:g1:{i}") for i in range(50)]
    sealed = sealer.seal_many(items)
    assert [sealer.open(s, ad) for s, (_, ad) in zip(sealed, items, strict=True)] == [
        text for text, _ in items
    ]
    assert all(s.fingerprint == "" and len(s.nonce) == 12 for s in sealed)
    with pytest.raises(SecretsError, match="integrity"):
        sealer.open(sealed[0], items[1][1])  # moved to another row
    # A single seal and a batch of one are interchangeable for the reader.
    one = sealer.seal_many([("x", "ad")], fingerprint=True)[0]
    assert sealer.open(one, "ad") == "x"
    assert one.fingerprint == sealer.seal("x", "ad").fingerprint != ""


def test_a_fresh_sealer_opens_a_batch_with_the_same_key() -> None:
    key = generate_key()
    sealed = Sealer(key).seal_many([("secret text", "ad")])[0]
    again = Sealed(sealed.key_id, sealed.nonce, sealed.ciphertext, "")
    assert Sealer(None, [key]).open(again, "ad") == "secret text"


def test_nonces_never_repeat_across_batches_and_sealers() -> None:
    sealer = Sealer(generate_key())
    nonces = [s.nonce for n in (1, 7, 100, 1000) for s in sealer.seal_many([("t", "a")] * n)]
    nonces += [s.nonce for s in Sealer(generate_key()).seal_many([("t", "a")] * 100)]
    assert len(set(nonces)) == len(nonces) == 1208
    first = sealer.seal_many([("t", "a")] * 3)
    counters = [int.from_bytes(s.nonce[8:], "big") for s in first]
    assert counters == [1108, 1109, 1110]  # one prefix, counting up


def test_a_new_prefix_before_the_counter_wraps_and_in_a_forked_child(monkeypatch) -> None:
    counter = NonceCounter()
    a = counter.take(2)
    counter._next = NonceCounter.SPAN - 1  # as if 2**32 - 1 nonces had been drawn
    b = counter.take(2)  # would pass 2**32: a new prefix, from 0
    assert b[0][:8] != a[0][:8] and b[0][8:] == (0).to_bytes(4, "big")
    pid = sealing.os.getpid()
    monkeypatch.setattr(sealing.os, "getpid", lambda: pid + 1)  # the same object after fork
    c = counter.take(1)
    assert c[0][:8] not in (a[0][:8], b[0][:8]) and c[0][8:] == (0).to_bytes(4, "big")
    with pytest.raises(ValueError, match="at most"):
        counter.take(NonceCounter.SPAN + 1)
