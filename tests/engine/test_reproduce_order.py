"""`reproduce`'s order: the UML kernel builds beside deciding and preparing the other labs' places,
and no lab measures before the places it goes to are ready."""

import threading

import pytest

from mptcplab.commands import reproduce as rep
from mptcplab.core import kernel
from mptcplab.run.lab import get_lab


@pytest.fixture
def host(fake_place, monkeypatch):
    """No netem here; UML (netem, the paper's scheduler) and the test place, which alone offers
    struct_ops: Lab 1 goes to UML, Lab 2 to the test place."""
    monkeypatch.setattr(kernel, "has", lambda c: c in {"tbf"})
    monkeypatch.setattr(kernel, "inside_uml", lambda: False)
    monkeypatch.setattr("mptcplab.places.uml.available", lambda: (True, "test"))
    monkeypatch.setattr("mptcplab.places.vm.available", lambda: (False, "test"))
    monkeypatch.setattr("mptcplab.places.records.load", lambda: [])
    monkeypatch.setattr(fake_place, "OFFERS", {"netem", "tbf", "bpf_struct_ops"})
    return fake_place


def test_the_build_overlaps_only_work_that_measures_nothing(host, monkeypatch, tmp_path):
    events, prepared = [], threading.Event()

    def build():  # returns once Lab 2's guest files were prepared: only if the two overlap
        events.append("build started")
        events.append("build saw lab2 prepared" if prepared.wait(10) else "build alone")
        events.append("build done")

    def prepare(lab):
        events.append(f"prepare {lab.id}")
        prepared.set()

    monkeypatch.setattr("mptcplab.places.uml.ready", build)
    monkeypatch.setattr(host, "prepare", prepare)
    labs = {k: get_lab(k) for k in ("lab1", "lab2")}
    ran = []
    outcomes = rep.reproduce(labs, tmp_path, quick=True,
                             runner=lambda lab_id, *a, picked: ran.append((lab_id, picked.place, list(events))))
    assert [o.status for o in outcomes] == ["ok", "ok"]
    assert "build saw lab2 prepared" in events and host.readied == ["fake"]
    # each lab measures alone, in order, only once every place is ready
    assert [(lab_id, place) for lab_id, place, _ in ran] == [("lab1", "uml"), ("lab2", "fake")]
    assert all("build done" in seen for _, _, seen in ran)


def test_a_failed_build_fails_only_the_labs_that_run_there(host, monkeypatch, tmp_path):
    def build():
        raise RuntimeError("make: *** [vmlinux] Error 2")

    monkeypatch.setattr("mptcplab.places.uml.ready", build)
    ran = []
    outcomes = rep.reproduce({k: get_lab(k) for k in ("lab1", "lab2")}, tmp_path, quick=True,
                             runner=lambda lab_id, *a, picked: ran.append(lab_id))
    assert ran == ["lab2"]
    assert outcomes[0].status == "failed" and "uml place could not be made ready: make" in outcomes[0].detail
