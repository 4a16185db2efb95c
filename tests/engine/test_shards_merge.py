"""Shards (`run --shard K/N`) and `merge`, with faked run directories: which runs a shard takes, and
each of merge's refusals with its message."""

import json

import pytest

from mptcplab.cli import main
from mptcplab.core.errors import UsageError
from mptcplab.run import engine, merge
from mptcplab.run.lab import Lab, Point, RunContext, get_lab
from mptcplab.run.results import Sweep
from mptcplab.run.shards import SHARD_FILE, Shard, select, share

LAB3 = {"flows": [1, 2, 4], "random": {"loss": ["2%"]}, "droptail": {"capacity": []}}  # 3 runs


def params(**over):
    return get_lab("lab3").load_params(quick=True, overrides={**LAB3, **over})


def fake_shard(root, k, n, p, keys=None, commit="c0ffee", where="uml", kernel="6.12.117-mptcplab", quick=True):
    """A finished shard as `run --shard K/N` leaves it: shard.json, a setup check, its runs."""
    d = root / f"shard-{k}-of-{n}"
    keys = [q.key for q in share(get_lab("lab3"), p, Shard(k, n))] if keys is None else keys
    git = {"commit": commit, "dirty": False}
    for key in ["verify", *keys]:
        (d / key).mkdir(parents=True)
        (d / key / "summary.json").write_text(json.dumps({"key": key}))
        (d / key / "manifest.json").write_text(json.dumps({
            "run": key, "git": git, "parameters": {}, "platform": {"where": where, "kernel_release": kernel,
                                                                   "hostname": f"node{k}"}}))
    (d / SHARD_FILE).write_text(json.dumps({"lab": "lab3", "shard": f"{k}/{n}", "quick": quick, "parameters": p,
                                            "git": git, "runs": keys}))
    return d


def refusal(dirs) -> str:
    with pytest.raises(UsageError) as exc:
        merge.plan(dirs)
    line = str(exc.value)
    assert "\n" not in line
    return line


def test_shards_split_the_points_round_robin_and_together_cover_each_once():
    points = [Point(f"p{i}", {}) for i in range(10)]
    shards = [select(points, Shard(k, 3)) for k in (1, 2, 3)]
    assert [p.key for p in shards[0]] == ["p0", "p3", "p6", "p9"]
    assert sorted(p.key for s in shards for p in s) == sorted(p.key for p in points)
    assert [len(s) for s in shards] == [4, 3, 3]


@pytest.mark.parametrize("text", ["0/3", "4/3", "3", "a/b", "2/0"])
def test_a_bad_shard_is_a_usage_error(text):
    with pytest.raises(UsageError, match="K/N"):
        Shard.parse(text)


def test_more_shards_than_runs_is_refused_before_anything_runs(capsys):
    assert main(["run", "lab3", "--quick", "--set", "flows=[1,2,4]", "--set", 'random.loss=["2%"]',
                 "--set", "droptail.capacity=[]", "--shard", "4/4"]) == 2
    assert "has 3 runs; split it into at most 3 shards" in capsys.readouterr().err


def test_the_engine_runs_only_its_shard_and_records_it(tmp_path, monkeypatch):
    monkeypatch.setattr(engine, "check_paths", lambda net, rd, a, b, **kw: rd.summary.setdefault("checks", {}))
    monkeypatch.setattr(engine, "describe", lambda checks: "")
    measured = []

    class Topo:
        def __init__(self, params):
            pass

        def up(self):
            import contextlib
            from types import SimpleNamespace

            net = SimpleNamespace(topo=SimpleNamespace(paths=[SimpleNamespace(a="snd", b="rcv")]),
                                  record=lambda rd: None)
            return contextlib.nullcontext(net)

    def points(params, sweep):  # like Lab 1: one more point once the whole sweep is done
        base = [Point(f"p{i}", {"i": i}) for i in range(5)]
        return base + [Point("detail", {})] if sweep and all(sweep.done(p.key) for p in base) else base

    lab = Lab(id="toy", slug="00-toy", title="toy", topology=Topo, points=points, analysis=None,
              measure=lambda net, rd, p, params: measured.append(p.key) or "ok",
              finish=lambda ctx: pytest.fail("a shard builds no tables"))
    ctx = RunContext(lab=lab, params={"x": 1}, out=tmp_path, quick=True, where="native", shard=Shard(2, 2))
    info = engine.run(ctx)
    assert measured == ["p1", "p3"]
    assert json.loads((tmp_path / SHARD_FILE).read_text()) == info
    assert info["shard"] == "2/2" and info["runs"] == ["p1", "p3"] and info["parameters"] == {"x": 1}
    assert info["points"] == 5


def test_shards_that_belong_together_merge(tmp_path):
    p = params()
    plan = merge.plan([fake_shard(tmp_path, k, 3, p) for k in (1, 2, 3)])
    assert plan.lab.id == "lab3" and sum(len(s.runs) for s in plan.sources) == 3
    assert plan.place == {"where": "uml", "kernel_release": "6.12.117-mptcplab"}


def test_merge_refuses_mixed_kit_commits(tmp_path):
    p = params()
    line = refusal([fake_shard(tmp_path, 1, 2, p, commit="aaa"), fake_shard(tmp_path, 2, 2, p, commit="bbb")])
    assert line.startswith("cannot merge shards of different kit commits: aaa (")
    assert "bbb (" in line and "one kit" in line


def test_merge_refuses_a_shard_whose_runs_were_resumed_with_another_commit(tmp_path):
    p = params()
    d = fake_shard(tmp_path, 1, 2, p, commit="aaa")
    m = d / "verify" / "manifest.json"
    m.write_text(m.read_text().replace('"aaa"', '"ccc"'))
    assert "different kit commits" in refusal([d, fake_shard(tmp_path, 2, 2, p, commit="aaa")])


def test_merge_refuses_mixed_parameters_and_names_the_difference(tmp_path):
    a = fake_shard(tmp_path, 1, 2, params())
    b = fake_shard(tmp_path, 2, 2, params(steady_s=20))
    line = refusal([a, b])
    assert line == f"cannot merge shards of different lab parameters: {b} differs from {a} in steady_s (12 vs 20)"


def test_merge_refuses_quick_and_full_shards_together(tmp_path):
    p = params()
    assert "--quick (True vs False)" in refusal([fake_shard(tmp_path, 1, 2, p),
                                                 fake_shard(tmp_path, 2, 2, p, quick=False)])


def test_merge_refuses_duplicates(tmp_path):
    p = params()
    a = fake_shard(tmp_path, 1, 2, p)
    b = fake_shard(tmp_path, 2, 2, p, keys=[q.key for q in get_lab("lab3").points(p, None)])
    line = refusal([a, b])
    assert line.startswith("cannot merge: 2 runs measured twice (duplicates): random-2pct-n01-r1 in ")
    assert str(a) in line and str(b) in line


def test_merge_refuses_the_same_shard_given_twice(tmp_path):
    a = fake_shard(tmp_path, 1, 2, params())
    assert "measured twice (duplicates)" in refusal([a, fake_shard(tmp_path, 2, 2, params()), a])


def test_merge_refuses_gaps_and_names_the_missing_shard(tmp_path):
    p = params()
    line = refusal([fake_shard(tmp_path, 1, 3, p), fake_shard(tmp_path, 3, 3, p)])
    assert line == ("cannot merge: 1 of 3 runs missing (gaps): random-2pct-n02-r1; "
                    "run the shards that hold them (shard 2/3)")


def test_merge_refuses_runs_the_sweep_does_not_have(tmp_path):
    p = params()
    a = fake_shard(tmp_path, 1, 1, p, keys=[q.key for q in get_lab("lab3").points(p, None)] + ["random-9pct-n01-r1"])
    assert refusal([a]) == "cannot merge: 1 runs are not in lab3's sweep with these parameters: random-9pct-n01-r1"


def test_merge_keeps_places_and_kernels_apart(tmp_path):
    p = params()
    line = refusal([fake_shard(tmp_path, 1, 2, p), fake_shard(tmp_path, 2, 2, p, where="vm", kernel="6.12.95")])
    assert line.startswith("cannot merge runs measured in different places or kernels: uml kernel 6.12.117-mptcplab (")
    assert "vm kernel 6.12.95 (" in line and "merge each group of shards on its own" in line


def test_merge_refuses_a_directory_that_is_not_a_finished_shard(tmp_path):
    (tmp_path / "half").mkdir()
    assert "not a finished shard (no shard.json)" in refusal([tmp_path / "half"])


def test_merge_lays_the_runs_out_as_one_host_would_and_builds_the_same_tables(tmp_path, monkeypatch):
    """With a toy lab whose table lists its runs: merged == the same runs copied into one directory
    and concluded there (runner.conclude: the summary, provenance, claims and report a run leaves)."""
    import shutil

    from mptcplab.run.runner import conclude

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # conclude's run index, not the user's
    p = params()
    shards = [fake_shard(tmp_path, k, 3, p) for k in (1, 2, 3)]

    def finish(ctx):
        rows = [d.name for d in Sweep(ctx.out).runs()]
        (ctx.out / "table.csv").write_text("\n".join(rows) + "\n")
        return {"runs": len(rows)}

    lab = get_lab("lab3")
    toy = Lab(**{**vars(lab), "finish": finish, "analysis": type("A", (), {"report": staticmethod(lambda out: "r")})})
    monkeypatch.setattr(merge, "get_lab", lambda lab_id: toy)
    out = tmp_path / "merged"
    merge.write(merge.plan(shards), out)
    one = tmp_path / "one"
    for s in shards:
        for d in s.iterdir():
            if d.is_dir() and (d.name != "verify" or s == shards[0]):
                shutil.copytree(d, one / d.name)
    conclude(toy, one, finish(RunContext(toy, p, one, True, "uml")))
    for name in ("table.csv", "lab-summary.json", "runs-manifest.csv", "claims.json", "paper-vs-this-run.md"):
        assert (out / name).read_text().replace(str(out), str(one)) == (one / name).read_text(), name  # claims name the folder
    assert sorted(x.name for x in out.iterdir()) == sorted(["merge.json", "shards", *[x.name for x in one.iterdir()]])
    assert sorted(x.name for x in (out / "shards").iterdir()) == ["shard-1-of-3", "shard-2-of-3", "shard-3-of-3"]
    assert (out / "shards" / "shard-2-of-3" / "verify").is_dir() and not (out / "shards" / "shard-1-of-3" / "verify").exists()
    assert json.loads((out / "merge.json").read_text())["shards"][1]["hosts"] == ["node2"]
    with pytest.raises(UsageError, match="already holds results"):
        merge.write(merge.plan(shards), out)


def test_a_merge_that_needs_runs_of_the_whole_sweep_writes_no_report_yet(tmp_path, monkeypatch, caplog):
    """Lab 1's report reads its detailed run, which only `mptcplab run` on the merged directory adds:
    the merge builds the tables and leaves the report to that run (it crashed on the missing run)."""
    p = params()
    shards = [fake_shard(tmp_path, k, 2, p) for k in (1, 2)]
    lab = get_lab("lab3")

    def points(params, sweep):
        base = lab.points(params, None)
        return base + [Point("detail", {})] if sweep is not None else base

    def report(out):
        raise FileNotFoundError("no detailed run")

    toy = Lab(**{**vars(lab), "points": points, "finish": lambda ctx: {"runs": 3},
                 "analysis": type("A", (), {"report": staticmethod(report)})})
    monkeypatch.setattr(merge, "get_lab", lambda lab_id: toy)
    out = tmp_path / "merged"
    assert merge.write(merge.plan(shards), out) == {"runs": 3}
    assert (out / "merge.json").exists() and not (out / "paper-vs-this-run.md").exists()
    assert "1 runs need the whole sweep (detail)" in caplog.text and "writes the report" in caplog.text


def test_slurm_dry_run_writes_a_job_array_of_shards_and_a_merge_that_waits_for_it(tmp_path, capsys):
    out = tmp_path / "sweep"
    assert main(["slurm", "lab3", "--array", "3", "--quick", "--set", "flows=[1,2,4]", "--out", str(out),
                 "--sbatch=--partition=net", "--dry-run"]) == 0
    shards = (out / "slurm" / "shards.sbatch").read_text()
    merged = (out / "slurm" / "merge.sbatch").read_text()
    assert "#SBATCH --array=1-3\n" in shards and "#SBATCH --exclusive\n" in shards
    assert "#SBATCH --partition=net\n" in shards and "#SBATCH --partition=net\n" in merged
    assert " run lab3 --quick --set 'flows=[1,2,4]' --where auto" in shards
    assert f'--shard "$SLURM_ARRAY_TASK_ID/3" --out "{out}/shard-$SLURM_ARRAY_TASK_ID-of-3"' in shards
    assert (f' merge "{out}/shard-1-of-3" "{out}/shard-2-of-3" "{out}/shard-3-of-3" --out "{out}/merged"'
            in merged)
    assert f'check "{out}/merged"' in merged
    said = capsys.readouterr().out
    assert f"sbatch --dependency=afterok:<its job id> {out}/slurm/merge.sbatch" in said


def test_slurm_refuses_an_array_larger_than_the_sweep_before_writing_anything(tmp_path, capsys):
    assert main(["slurm", "lab3", "--array", "4", "--quick", "--set", "flows=[1,2,4]", "--set", 'random.loss=["2%"]',
                 "--set", "droptail.capacity=[]", "--out", str(tmp_path / "s"), "--dry-run"]) == 2
    assert "at most 3 shards" in capsys.readouterr().err and not (tmp_path / "s").exists()


def test_a_shard_reaches_the_guest_place_as_its_own_option(fake_place, tmp_path, monkeypatch):
    """The fake guest place (tests/engine/fake_place.py) gets `--shard K/N`; the default results
    directory names the shard."""
    from mptcplab.run import runner

    monkeypatch.chdir(tmp_path)
    runner.run_lab("lab3", quick=True, where="fake", overrides=LAB3, shard=Shard(2, 3))
    (argv, results, handed), = fake_place.calls
    assert "--shard=2/3" in argv and results == [tmp_path / "results" / "lab3-quick-shard-2-of-3"]


def test_merge_refuses_a_kit_with_uncommitted_changes_beside_the_clean_commit(tmp_path):
    """A dirty checkout is not the commit it names: its shards are another kit."""
    p = params()
    a, b = fake_shard(tmp_path, 1, 2, p), fake_shard(tmp_path, 2, 2, p)
    for f in [b / SHARD_FILE, *b.glob("*/manifest.json")]:
        f.write_text(f.read_text().replace('"dirty": false', '"dirty": true'))
    line = refusal([a, b])
    assert f"c0ffee ({a}); c0ffee with uncommitted changes ({b})" in line
