"""--set KEY=VALUE parsing (a guest is handed the resolved parameters as data: places.hand)."""

import pytest

from mptcplab.commands.run import parse_overrides
from mptcplab.core.errors import UsageError
from mptcplab.run.lab import get_lab


def test_values_are_toml_and_keys_may_hold_dots():
    d = parse_overrides(['sweep.repetitions=2', 'sweep.buffers=["64K", "1M"]', 'detail.buffer=auto',
                         'sysctls.snd."net.ipv4.tcp_sack"=0'])
    assert d == {"sweep": {"repetitions": 2, "buffers": ["64K", "1M"]}, "detail": {"buffer": "auto"},
                 "sysctls": {"snd": {"net.ipv4.tcp_sack": 0}}}


def test_bad_override():
    with pytest.raises(UsageError, match="KEY=VALUE"):
        parse_overrides(["repetitions"])


def test_dry_run_lists_the_engines_points_per_setting_and_what_is_done(tmp_path):
    """`mptcplab run --dry-run` plans from the lab's own points (nothing measured): every run is
    counted once under its setting, and a run already done in --out is counted as done."""
    from mptcplab.run.runner import plan
    from mptcplab.run.shards import Shard

    lab = get_lab("lab1")
    params = lab.load_params(True, {"sweep": {"repetitions": 2}})
    points = lab.points(params, None)
    done = tmp_path / points[0].key
    done.mkdir(parents=True)
    for name in ("manifest.json", "summary.json"):
        (done / name).write_text("{}")
    text = plan("lab1", quick=True, out=tmp_path, overrides={"sweep": {"repetitions": 2}})
    assert f"{len(points)} runs, 1 done, {len(points) - 1} to do" in text
    first = points[0].key.rsplit("-r", 1)[0]
    assert any(line.split()[:4] == [first, "2", "runs", "(1"] for line in text.splitlines())
    shard = plan("lab1", quick=True, out=tmp_path / "s", overrides={"sweep": {"repetitions": 2}}, shard=Shard(1, 2))
    assert f"{len(points[::2])} runs, 0 done" in shard


@pytest.mark.parametrize("lab_id", ["lab1", "lab2", "lab3"])
def test_one_path_vocabulary_a_paths_delay_is_set_the_same_way_in_every_lab(lab_id):
    """`--set paths.<p>.delay=...` reaches the lab's network in every lab (issue 38: Lab 1 refused
    it, its delay being written inside `link`); a delay inside `link` is refused with the key to use."""
    lab = get_lab(lab_id)
    first = next(iter(lab.load_params(True)["paths"]))
    params = lab.load_params(True, {"paths": {first: {"delay": "7ms"}}})
    path = lab.topology(params).path(first)
    assert path.link.delay_s == pytest.approx(0.007)
    with pytest.raises(UsageError, match=f"give its delay as paths.{first}.delay"):
        lab.load_params(True, {"paths": {first: {"link": "rate=10mbit,delay=7ms"}}})
