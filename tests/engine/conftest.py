"""Fixtures shared by the engine's tests."""

import pytest


@pytest.fixture
def fake_place(monkeypatch, tmp_path):
    """The test place (tests/engine/fake_place.py), registered like any place, with the runner's
    machine-wide parts (the experiment lock, the sweep of dead runs) kept out of the test."""
    import contextlib

    import fake_place as fake

    from mptcplab import places
    from mptcplab.run import runner

    monkeypatch.setitem(places.REGISTRY, "fake", "fake_place")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("MPTCPLAB_WHERE", raising=False)
    monkeypatch.setattr(runner, "experiment_lock", contextlib.nullcontext)
    monkeypatch.setattr(runner.state, "clean", lambda all_owners: [])
    monkeypatch.setattr(runner.lifetime, "reap_orphan_guests", lambda: [])
    # what the guest measured is analysed here afterwards: the double measures nothing, so only recorded
    monkeypatch.setattr(runner, "analyse", lambda ctx, summary=None: fake.analysed.append(ctx))
    # the kit's bytecode before a guest starts: recorded, not written into the checkout by a test
    monkeypatch.setattr(runner.guest, "byte_compile", lambda package: fake.compiled.append(package))
    fake.compiled.clear()
    fake.calls.clear()
    fake.analysed.clear()
    fake.prepared.clear()
    fake.readied.clear()
    return fake
