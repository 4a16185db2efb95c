"""A reference exported from a merged sweep keeps every shard's setup check (issue 36 item 4: "all
shards' verify manifests"): the merge keeps the first shard's as the sweep's own `verify`, the
others under shards/NAME/verify, which a lab's export does not copy."""

import json

from mptcplab.cli import main
from mptcplab.commands import notebooks
from mptcplab.run.lab import get_lab


def test_every_shards_setup_check_is_kept_beside_the_reference(tmp_path, monkeypatch):
    run = tmp_path / "merged"
    (run / "verify").mkdir(parents=True)
    (run / "lab-summary.json").write_text("{}")
    for shard in ("shard-2-of-3", "shard-3-of-3"):
        check = run / "shards" / shard / "verify"
        check.mkdir(parents=True)
        (check / "manifest.json").write_text(json.dumps({"shard": shard}))
        (check / "summary.json").write_text(json.dumps({"passed": True, "shard": shard}))
    (run / "shards" / "shard-1-of-3").mkdir()  # the first shard's check is the sweep's own verify
    lab = get_lab("lab3")
    monkeypatch.setattr(lab.analysis, "export_reference", lambda out, dest: dest.mkdir(parents=True))
    monkeypatch.setattr(notebooks.claims, "write", lambda lab, dest: None)  # no tables to judge here

    dest = tmp_path / "reference"
    assert main(["notebooks", "reference", "lab3", str(run), "--dest", str(dest)]) == 0
    kept = sorted(str(p.relative_to(dest)) for p in (dest / "shards").rglob("*") if p.is_file())
    assert kept == ["shards/shard-2-of-3/verify-manifest.json", "shards/shard-2-of-3/verify-summary.json",
                    "shards/shard-3-of-3/verify-manifest.json", "shards/shard-3-of-3/verify-summary.json"]
    assert json.loads((dest / "shards" / "shard-3-of-3" / "verify-manifest.json").read_text()) == {"shard": "shard-3-of-3"}
