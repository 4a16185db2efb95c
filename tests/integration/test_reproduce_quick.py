"""The README's main job, quick: every lab runs for real where it can, one HTML report."""

import json

import pytest

from mptcplab.judge import claims
from mptcplab.run.lab import all_labs

# The session's quick reproduction (every lab, ~30 min on a slow 2-core host) runs inside the
# first of these tests: it needs more than the suite's default 900 s.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(3600)]


def test_every_lab_ran_and_the_report_has_them(reproduced):
    out, res = reproduced
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-4000:]
    page = (out / "report.html").read_text()
    for lab in all_labs().values():
        sweep = out / f"{lab.id}-quick"
        assert (sweep / "lab-summary.json").exists(), f"{lab.id} did not complete"
        assert (sweep / "paper-vs-this-run.md").exists(), f"{lab.id} has no paper-vs-this-run table"
        assert lab.id in page
        manifests = list(sweep.glob("*/manifest.json"))
        assert manifests and all(json.loads(m.read_text())["platform"]["kernel_release"] for m in manifests)
        if lab.judging.claims is not None:  # issue 36: the ledger judged on every run, and said at the end
            doc = claims.load(sweep)
            assert doc and [c["id"] for c in doc["claims"]] == [c.id for c in lab.judging.claims.CLAIMS], lab.id
            assert f"{claims.summary_line(doc)} ({sweep / claims.FILE})" in res.stdout + res.stderr, lab.id
    assert page.count("<h3>Figures</h3>") == len(all_labs()), "every lab's figures are in the report"
