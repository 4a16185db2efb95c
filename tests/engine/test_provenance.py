"""judge.provenance: a results tree whose runs mix commits or kernel builds is refused by `mptcplab check`
unless its Markdown names each; one commit and one kernel need no words."""

import json

import pandas as pd

from mptcplab.cli import main
from mptcplab.judge import provenance
from mptcplab.run.results import RUN_MANIFEST_COLUMNS

UML_OLD = "linux-source-6.12-6.12.117-1_deb12u1-1f45573e244b"
UML_NEW = "linux-source-6.12-6.12.117-1_deb12u1-2721d1a8f5ec"


def runs(folder, commit, build=None, n=3, column=True):
    """A runs-manifest.csv of n runs; the build in its column, or (older references) in the folder's manifest."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = [{"run": f"r{i}", "commit": commit, "kernel": "6.12.117", "where": "uml",
             **({"kernel_build": build} if column else {})} for i in range(n)]
    pd.DataFrame(rows, columns=[c for c in RUN_MANIFEST_COLUMNS if column or c != "kernel_build"]).to_csv(
        folder / provenance.MANIFEST, index=False)
    if not column:
        (folder / "lab3-manifest.json").write_text(json.dumps({"platform": {"uml_kernel": build}}))


def test_one_commit_and_one_kernel_need_no_words(tmp_path):
    runs(tmp_path, "71402d58d20b", UML_NEW)
    runs(tmp_path / "controls" / "a", "71402d58d20b", UML_NEW)
    lines, refused = provenance.lines(tmp_path)
    assert not refused and lines[0] == "provenance: 1 commit: 71402d58d20b (6 runs in ., controls/a)"


def test_a_mixture_is_refused_until_the_report_names_each(tmp_path, capsys):
    runs(tmp_path, "71402d58d20b", UML_NEW)
    runs(tmp_path / "controls" / "a", "ba573391881f", UML_OLD, column=False)  # an older reference's control
    missing = {(s.what, s.value) for s in provenance.unsaid(tmp_path)}
    assert missing == {("commit", "71402d58d20b"), ("commit", "ba573391881f"),
                       ("kernel", "6.12.117 (UML build 2721d1a8f5ec)"), ("kernel", "6.12.117 (UML build 1f45573e244b)")}
    assert main(["check", str(tmp_path)]) == 1
    assert "REFUSED: the runs mix commit 71402d58d20b" in capsys.readouterr().out
    (tmp_path / "paper-vs-this-run.md").write_text("The release alone, 6.12.117, does not tell the builds apart.\n")
    assert len(provenance.unsaid(tmp_path)) == 4
    (tmp_path / "paper-vs-this-run.md").write_text(provenance.markdown(tmp_path))  # what Lab 3's report appends
    assert provenance.unsaid(tmp_path) == [] and main(["check", str(tmp_path)]) == 0


def test_a_second_place_is_named_by_its_release(tmp_path):
    runs(tmp_path / "paper-point", "eb69178e6e4c", UML_NEW)
    vm = tmp_path / "controlled" / "scaled-vm"
    runs(vm, "eb69178e6e4c", None)
    m = pd.read_csv(vm / provenance.MANIFEST).assign(kernel="6.12.117+deb12-amd64", where="vm")
    m.to_csv(vm / provenance.MANIFEST, index=False)
    (tmp_path / "paper-vs-this-run.md").write_text("UML's 6.12.117 here; the VM's 6.12.117+deb12-amd64 there.\n")
    assert provenance.unsaid(tmp_path) == []


def test_runs_from_a_checkout_with_changes_are_said_not_refused(tmp_path):
    """Lab 3's tso2_quick, tso64_quick and n30_loss10 controls ran at commits marked +dirty: `check` named
    them with the clean commit's digits and said nothing more."""
    runs(tmp_path, "71402d58d20b", UML_NEW)
    runs(tmp_path / "controls" / "a", "acc85939aa3c+dirty", UML_NEW, n=2)
    (tmp_path / "paper-vs-this-run.md").write_text(provenance.markdown(tmp_path))
    lines, refused = provenance.lines(tmp_path)
    assert not refused
    assert lines[-1] == ("provenance: 2 runs in controls/a came from a checkout with uncommitted changes (commit+dirty): "
                         "no commit holds the exact code that measured them; re-run from a clean tree for a reference")
    runs(tmp_path / "controls" / "a", "acc85939aa3c", UML_NEW, n=2)
    assert not any("uncommitted" in line for line in provenance.lines(tmp_path)[0])
