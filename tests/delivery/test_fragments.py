"""Every measured number in the guides and the site comes from a generated fragment (issue 36):
`mptcplab fragments --check` passes on the tree, and fails on a copy with a number typed by hand or
a block that no longer matches the committed tables."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mptcplab import benchmarks
from mptcplab.commands import fragments

REPO = Path(__file__).resolve().parents[2]
GUIDE = "labs/01-send-buffer/README.md"


@pytest.mark.slow
def test_the_tree_passes():
    out = subprocess.run([sys.executable, "-m", "mptcplab", "fragments", "--check"], capture_output=True, text=True,
                         timeout=300, cwd=REPO)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.fixture(scope="module")
def made() -> dict:
    """The fragments of the committed references, made once (Lab 1's read its detailed runs)."""
    return fragments.produce(REPO)


@pytest.fixture
def copy(tmp_path) -> Path:
    """The Markdown the check reads (its fragments are those of the committed references: `made`)."""
    root = tmp_path / "repo"
    root.mkdir()
    shutil.copy(REPO / "README.md", root / "README.md")
    shutil.copytree(REPO / "labs", root / "labs")
    shutil.copytree(REPO / "site", root / "site", ignore=shutil.ignore_patterns("_hooks", "assets"))
    return root


def check(root: Path, made: dict) -> list[str]:
    return [str(f) for f in fragments.refresh(root, write=False, made=made) + fragments.untraced(root, made=made)
            + fragments.broken_marks(root)]


@pytest.mark.slow  # made: Lab 1's fragments read its detailed runs
def test_a_number_typed_by_hand_fails_unless_marked(copy, made):
    guide = copy / GUIDE
    text = guide.read_text()
    assert check(copy, made) == []
    guide.write_text(text + "\nOn the quick run MPTCP carried 123.4 Mbit/s.\n")
    line = len(text.splitlines()) + 2
    assert [f for f in check(copy, made)] == [f"{GUIDE}:{line}: untraced number: generate it, or mark the paper's "
                                             "own values with <!-- paper -->, the kit's settings with <!-- config -->: "
                                             "123.4 Mbit/s"]
    guide.write_text(text + "\nThe paper measured <!-- paper -->123.4 Mbit/s<!-- end paper -->.\n")
    assert check(copy, made) == []


@pytest.mark.slow  # made: Lab 1's fragments read its detailed runs
def test_a_stale_block_fails_and_the_command_rewrites_it(copy, made):
    page = next(p for p in fragments.documents(copy) if fragments.BLOCK.search(p.read_text()))
    text = page.read_text()
    block = fragments.BLOCK.search(text)
    body = block.group("body")
    digit = next(i for i, ch in enumerate(body) if ch.isdigit())
    changed = body[:digit] + str((int(body[digit]) + 1) % 10) + body[digit + 1:]
    page.write_text(text[:block.start("body")] + changed + text[block.end("body"):])
    line = text.count("\n", 0, block.start()) + 1
    assert check(copy, made) == [f"{page.relative_to(copy)}:{line}: {fragments.STALE}: {block.group('name')}"]
    fragments.refresh(copy, write=True, made=made)
    assert page.read_text() == text and check(copy, made) == []


@pytest.mark.slow  # made: Lab 1's fragments read its detailed runs
def test_an_unknown_or_unclosed_block_fails(copy, made):
    guide = copy / GUIDE
    guide.write_text(guide.read_text() + "\n<!-- generated: lab1.nothing -->\nx\n<!-- end generated -->\n"
                     "<!-- generated: lab1.claims -->\n")
    found = " ".join(check(copy, made))
    assert "unknown fragment" in found and "without `<!-- end generated -->`" in found


def test_what_counts_as_a_measured_number():
    text = "\n".join([
        "MPTCP carried 46.8 Mbit/s over 10 s; rho -0.94.",  # three
        "Python 3.11, kernel >= 6.12.117, VirtualBox 7.1+; Lab 1, Q4, Fig. 3, 2 paths.",  # none: versions, names, counts
        "Run `mptcplab run lab1 --set sweep.repetitions=2` (about 40 ms).",  # one: the code span is a command
        "```sh", "sudo tc qdisc add dev x root netem delay 40ms", "```",  # a command block
        "```", "goodput 95.1 Mbit/s", "```",  # output: counted
        "<!-- paper -->100 Mbit/s<!-- end paper --> and <!-- config -->2%<!-- end config -->",  # marked
        "<!-- generated: lab1.x -->", "99.9 ms", "<!-- end generated -->",  # generated
    ])
    found = [(line, q) for line, q, _ in fragments.measured(text)]
    assert found == [(1, "46.8 Mbit/s"), (1, "10 s"), (1, "-0.94"), (3, "40 ms"), (8, "95.1 Mbit/s")]


def test_a_kit_page_is_held_by_the_kit_fragments_not_by_a_labs(tmp_path):
    """A page whose path names no lab (the README, the setup and instructor pages) states the kit's own
    figures: a number that only a lab's fragment holds is untraced there, and traced on that lab's page."""
    text = "The UML build took 287 s; MPTCP carried 123.4 Mbit/s.\n"
    for page in ("site/setup/uml.md", "labs/01-send-buffer/notes.md"):
        (tmp_path / page).parent.mkdir(parents=True)
        (tmp_path / page).write_text(text)
    made = {"kit.uml-build": "took 287 s", "lab1.held": "| 123.4 |"}
    assert [(f.file, f.text) for f in fragments.untraced(tmp_path, made=made)] == [("site/setup/uml.md", "123.4 Mbit/s")]


def test_the_kit_fragments_follow_their_records(tmp_path):
    """Each kit.* fragment is made from its committed record: a changed record changes it, a removed one
    removes it (and a page that still shows it then fails as an unknown block)."""
    for d in (benchmarks.RESULTS, benchmarks.ACCEPTANCE):
        shutil.copytree(REPO / d, tmp_path / d)
    made = benchmarks.fragments(tmp_path)
    assert {"kit.quick-times", "kit.fresh-clone", "kit.uml-build", "kit.uml-soak", "kit.uml-time-travel",
            "kit.minrtt-rp-counters", "kit.box", "kit.vm-setup-checks", "kit.merge", "kit.grading"} <= set(made)
    timed = tmp_path / benchmarks.RESULTS / "time_ratio.json"
    rows = json.loads(timed.read_text())
    newest = max((r for r in rows if r["lab"] == "lab3" and r["quick"] and r["status"] == "ok"), key=lambda r: r["finished"])
    newest["seconds"] = 6000.0
    timed.write_text(json.dumps(rows))
    assert "| Lab 3 | uml | 100.0 min |" in benchmarks.fragments(tmp_path)["kit.quick-times"]
    (tmp_path / benchmarks.RESULTS / "uml_soak.csv").unlink()
    assert "kit.uml-soak" not in benchmarks.fragments(tmp_path)


def test_a_mark_that_starts_a_line_inside_a_paragraph_fails(tmp_path):
    """Python-Markdown takes a line starting with `<!--` for an HTML block: inside a paragraph or a
    list item it splits it on the site. Mid-line, or alone after a blank line (around a table), it is fine."""
    page = tmp_path / "site" / "page.md"
    page.parent.mkdir()
    page.write_text("A network of 18 nodes with\n<!-- paper -->5 Mbit/s<!-- end paper --> links.\n\n"
                    "Nodes with <!-- paper -->5 Mbit/s<!-- end paper -->\nlinks.\n\n<!-- config -->\n\n| a |\n|---|\n| 1 |\n\n"
                    "<!-- end config -->\n")
    assert [(f.file, f.line) for f in fragments.broken_marks(tmp_path)] == [("site/page.md", 2)]
