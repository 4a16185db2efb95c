"""--set KEY=VALUE parsing, and its round trip into the command re-run inside UML."""

import pytest

from mptcplab.commands.run import parse_overrides
from mptcplab.errors import UsageError
from mptcplab.runner import flatten_overrides


def test_values_are_toml_and_keys_may_hold_dots():
    d = parse_overrides(['sweep.repetitions=2', 'sweep.buffers=["64K", "1M"]', 'detail.buffer=auto',
                         'sysctls.snd."net.ipv4.tcp_sack"=0'])
    assert d == {"sweep": {"repetitions": 2, "buffers": ["64K", "1M"]}, "detail": {"buffer": "auto"},
                 "sysctls": {"snd": {"net.ipv4.tcp_sack": 0}}}
    assert parse_overrides([f"{k}={v}" for k, v in flatten_overrides(d)]) == d


def test_bad_override():
    with pytest.raises(UsageError, match="KEY=VALUE"):
        parse_overrides(["repetitions"])
