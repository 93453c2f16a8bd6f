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


def test_a_real_fork_draws_a_new_prefix_even_with_the_lock_held() -> None:
    """A child forked while another thread holds the counter's lock neither deadlocks nor
    continues the parent's prefix (the at-fork hook resets every counter)."""
    import os
    import select
    import signal
    import threading

    counter = sealing.NonceCounter()
    parent = counter.take(1)[0]
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with counter._lock:
            held.set()
            release.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait(10)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: one nonce, written to the parent, then gone
        try:
            os.write(write, counter.take(1)[0])
        finally:
            os._exit(0)
    release.set()
    thread.join()
    os.close(write)
    ready, _, _ = select.select([read], [], [], 10)
    if not ready:  # the child is stuck on the copied lock
        os.kill(pid, signal.SIGKILL)
    child = os.read(read, 12) if ready else b""
    os.close(read)
    os.waitpid(pid, 0)
    assert len(child) == 12 and child[:8] != parent[:8]
