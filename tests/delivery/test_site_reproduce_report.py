"""`mptcplab reproduce` orchestration and its HTML report, with stand-in labs (no kernel needed).

The runner is injected so this exercises the ordering, the failure handling and the report; the
real path (runner.run_lab, the same as `mptcplab run`) is what the CLI passes.
"""

import json
from types import SimpleNamespace

import plotly.graph_objects as go

from mptcplab import report
from mptcplab.commands import reproduce as rep
from mptcplab.judge import claims
from mptcplab.places.choice import Choice
from mptcplab.run.lab import Lab


def _lab(id_, needs=(), figures=None):
    analysis = SimpleNamespace(  # a stand-in analysis module: the report and the figures
        report=lambda out: f"# {id_} paper vs run\n\n| quantity | paper | run |\n|---|---|---|\n| x | 1 | {out.name} |\n",
        figures=figures or (lambda out: []))
    return Lab(id=id_, slug=f"0{id_[-1]}-x", title=f"title of {id_}", topology=None, points=None, measure=None,
               finish=None, analysis=analysis, needs=needs)


def test_failures_and_impossible_labs_are_reported_and_the_rest_run(tmp_path, monkeypatch):
    monkeypatch.setattr(Lab, "load_params", lambda self, quick, overrides=None: {})
    monkeypatch.setattr(rep, "place_for", lambda lab, params, where: (_ for _ in ()).throw(
        rep.EnvironmentProblem("needs BPF struct_ops; UML has no BPF JIT")) if "bpf" in lab.needs else
        Choice("native", "the host's kernel offers netem"))
    ran = []

    def runner(lab_id, quick, where, out, picked):
        assert picked.place == "native"  # the decision made once, handed on
        ran.append(lab_id)
        if lab_id == "lab1":
            raise RuntimeError("tc said: Invalid argument")
        run = out / "r1"
        run.mkdir(parents=True)
        (run / "manifest.json").write_text(json.dumps({"platform": {"where": "uml"}, "cmd": "tc qdisc add",
                                                       "clock": {"guest_s": 12.0, "host_wall_s": 40.0}}))
        (run / "summary.json").write_text(json.dumps({"span_s": 4.2}))
        (out / claims.FILE).write_text(json.dumps({"lab": lab_id, "claims": [  # what runner.conclude writes
            {"id": "faster", "statement": "MPTCP is faster", "paper_value": "46.8", "source": "Fig. 3",
             "status": "holds", "interval": [1.0, 2.0], "note": "", "cause": ""},
            {"id": "model", "statement": "the model fits", "paper_value": "-", "source": "Fig. 5",
             "status": "does not hold", "interval": [3.0, 4.0], "note": "", "cause": "not tested",
             "cause_short": "not tested"}]}))
        return 0

    labs = {"lab1": _lab("lab1"), "lab2": _lab("lab2", needs=("bpf",)),
            "lab3": _lab("lab3", figures=lambda out: [go.Figure(go.Scatter(x=[1, 2], y=[3, 4], name="fig-of-lab3"))])}
    outcomes = rep.reproduce(labs, tmp_path, quick=True, runner=runner)
    assert ran == ["lab1", "lab3"]
    by = {o.lab_id: o for o in outcomes}
    assert by["lab1"].status == "failed" and "Invalid argument" in by["lab1"].detail
    assert by["lab2"].status == "cannot-run" and "no BPF JIT" in by["lab2"].detail
    assert by["lab3"].status == "ok" and by["lab3"].where == "native" and by["lab3"].transfer_s == 4.2

    page = report.render(outcomes, labs, quick=True)
    assert "Not reproduced here" in page and "no BPF JIT" in page and "Invalid argument" in page
    # the last lines of `reproduce`: per lab, what held on the run, or why it did not run
    lines = rep.summary(outcomes)
    assert lines[0].split()[:3] == ["lab1", "NOT", "reproduced:"] and "Invalid argument" in lines[0]
    assert "lab2   NOT reproduced: no place here can run it: needs BPF struct_ops" in lines[1]
    assert lines[2].startswith("  lab3   ran natively (")
    assert lines[2].endswith(": 1 of 2 of the paper's claims hold; does not hold: model (not tested) "
                             f"({tmp_path / 'lab3-quick' / 'claims.json'})")
    assert "The paper's claims" in page and "MPTCP is faster" in page  # the verdicts, in lab3's section
    assert rep.record(outcomes, quick=True)["labs"][2]["claims"] == {
        "hold": 1, "of": 2, "verdicts": {"faster": "holds", "model": "does not hold"}}
    assert "<table>" in page and "lab3-quick" in page  # lab3's markdown table, rendered
    assert "fig-of-lab3" in page and "tc qdisc add" in page  # its figure and its manifest
    assert "took 12 s on the UML guest's time-travel clock, 40 s of wall-clock time" in page
    assert "cdn.plot.ly" not in page.split("</script>", 1)[1]  # plotly.js is inline, not fetched
    assert len(page) > 1_000_000  # ... which is why the file is big


def test_report_only_needs_results(tmp_path, monkeypatch):
    monkeypatch.setattr(Lab, "load_params", lambda self, quick, overrides=None: {})
    monkeypatch.setattr(rep, "place_for", lambda *a, **_: Choice("uml", "test"))
    (o,) = rep.reproduce({"lab1": _lab("lab1")}, tmp_path, quick=False, report_only=True)
    assert o.status == "failed" and "no results" in o.detail and o.where == "uml"


def test_the_time_ratio_is_said_at_the_end_written_in_the_report_and_recorded(tmp_path):
    """Wall time over the runs' transfer time, per lab: in `reproduce`'s last lines, the report's
    table and lab section, and reproduce.json (what benchmarks/time_ratio.py records)."""
    ok = report.LabOutcome("lab2", "title of lab2", "ok", where="native", out=tmp_path / "none",
                           seconds=420.0, transfer_s=140.0)
    failed = report.LabOutcome("lab1", "title of lab1", "failed", where="native", detail="exit status 4",
                               seconds=30.0, transfer_s=0.0)
    assert ok.ratio == 3.0 and failed.ratio is None
    lines = rep.summary([ok, failed])
    assert lines[0] == ("  lab2   ran natively (7 min, 3.0x its 2 min of transfers): the paper's claims not judged: "
                        "the lab has no claims ledger yet (see paper-vs-this-run.md)")
    ok.extra["restarts"] = 1  # runner._in_guest started its guest once more
    assert "transfers); its guest stopped 1x and was started again (restarts.json): " in rep.summary([ok])[0]
    ok.extra.clear()
    page = report.render([ok, failed], {}, quick=True)
    assert "420 s, 3.0x its 140 s of transfers" in page
    assert "30 s (its runs record no transfer time)" in page
    rec = json.loads(json.dumps(rep.record([ok, failed], quick=True)))
    assert rec["quick"] is True and rec["cpus"] and "commit" in rec["git"]
    assert rec["labs"][0] == {"lab": "lab2", "status": "ok", "where": "native", "detail": "", "seconds": 420.0,
                              "transfer_s": 140.0, "ratio": 3.0, "claims": None}
    assert rec["labs"][1]["ratio"] is None
