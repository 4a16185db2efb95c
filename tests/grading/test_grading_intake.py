"""A submission is data, never a path to follow (issue 40, items 4 and 5), without a sandbox (fast):
what the grader reads, what it refuses and why, which files a folder holds, and how a mixed batch
is sorted by lab without any file stopping it."""

import os
import threading
from pathlib import Path

import pytest

from mptcplab.grading import files, intake

NOTEBOOK = b'{"cells": [{"source": "grader = otter.Notebook(\\"01-send-buffer.ipynb\\")"}]}'


def _refusal(path: Path, cap: int = 1 << 20) -> str:
    with pytest.raises(files.Refused) as exc:
        files.read_submission(path, cap)
    return exc.value.args[0]


def test_only_a_regular_file_of_its_own_is_read(tmp_path):
    secret = tmp_path / "secret"
    secret.write_bytes(b"root:$6$hash")
    os.chmod(secret, 0o600)
    ok = tmp_path / "ok.ipynb"
    ok.write_bytes(NOTEBOOK)
    assert files.read_submission(ok, 1 << 20) == NOTEBOOK
    (tmp_path / "link.ipynb").symlink_to(secret)
    (tmp_path / "dangling.ipynb").symlink_to(tmp_path / "gone")
    os.link(secret, tmp_path / "hard.ipynb")
    os.mkfifo(tmp_path / "fifo.ipynb")
    (tmp_path / "dir.ipynb").mkdir()
    assert _refusal(tmp_path / "link.ipynb") == "a symbolic link, not a notebook"
    assert _refusal(tmp_path / "dangling.ipynb") == "a symbolic link, not a notebook"
    assert _refusal(tmp_path / "hard.ipynb") == "a hard link (one of 2 names of one file), not a notebook of its own"
    assert _refusal(tmp_path / "dir.ipynb") == "a directory, not a notebook"
    assert _refusal(tmp_path / "missing.ipynb").startswith("unreadable")
    # A FIFO is never opened (opening one for reading waits for a writer: it hung the batch for ever).
    box = {}
    t = threading.Thread(target=lambda: box.update(why=_refusal(tmp_path / "fifo.ipynb")), daemon=True)
    t.start()
    t.join(5)
    assert box.get("why") == "a FIFO (named pipe), not a notebook"
    if os.geteuid() == 0:
        os.mknod(tmp_path / "dev.ipynb", 0o600 | 0o020000, os.makedev(1, 3))  # /dev/null's numbers
        assert _refusal(tmp_path / "dev.ipynb") == "a device, not a notebook"
    with pytest.raises(files.Oversized):  # the size is read before any byte
        files.read_submission(ok, len(NOTEBOOK) - 1)


def test_folders_are_walked_without_entering_links(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "planted.ipynb").write_bytes(NOTEBOOK)
    subs = tmp_path / "subs"
    (subs / "alice").mkdir(parents=True)
    (subs / "alice" / "01-send-buffer.ipynb").write_bytes(NOTEBOOK)
    (subs / "bob.ipynb").mkdir()  # a folder named like a notebook is a row of its own
    (subs / "carol").symlink_to(outside)
    (subs / "dave.ipynb").symlink_to(outside / "planted.ipynb")
    (subs / ".ipynb_checkpoints").mkdir()
    (subs / ".ipynb_checkpoints" / "x.ipynb").write_bytes(NOTEBOOK)
    found, skipped = files.collect([subs, tmp_path / "nobody.ipynb"])
    assert found == [subs / "alice" / "01-send-buffer.ipynb", subs / "bob.ipynb", subs / "dave.ipynb"]
    assert skipped == [f"{subs / 'carol'}: a link to a folder, not entered", f"{tmp_path / 'nobody.ipynb'}: no such file or directory"]


def test_no_file_stops_a_mixed_batch_from_being_sorted(tmp_path):
    def nb(name: str, lab: str) -> Path:
        p = tmp_path / name
        p.write_bytes(NOTEBOOK.replace(b"01-send-buffer", lab.encode()))
        return p

    one, three = nb("a.ipynb", "01-send-buffer"), nb("b.ipynb", "03-parallel-tcp")
    foreign = nb("c.ipynb", "07-no-such-lab")
    nolab = tmp_path / "d.ipynb"
    nolab.write_bytes(b'{"cells": []}')
    garbage = tmp_path / "e.ipynb"
    garbage.write_bytes(b"\xff\xfe not json")
    link = tmp_path / "02-x.ipynb"
    link.symlink_to(one)  # sorted by its name's prefix, never read
    fifo = tmp_path / "f.ipynb"
    os.mkfifo(fifo)
    groups, unknown = intake.sort_by_lab([one, three, foreign, nolab, garbage, link, fifo], None, 1 << 20)
    assert {m.stem: g for m, g in groups.items()} == {"01-send-buffer": [one], "03-parallel-tcp": [three],
                                                      "02-delay-window-cc": [link]}
    assert unknown[foreign] == "it names lab 07-no-such-lab, which this kit does not have"
    assert unknown[fifo] == "a FIFO (named pipe), not a notebook"
    assert set(unknown) == {foreign, nolab, garbage, fifo}
    # One lab: what names no lab joins it (graded there as what it is); a foreign lab is its own row.
    groups, unknown = intake.sort_by_lab([one, garbage, fifo, foreign], None, 1 << 20)
    assert list(groups.values()) == [[one, garbage, fifo]] and list(unknown) == [foreign]
