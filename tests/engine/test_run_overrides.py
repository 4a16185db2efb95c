"""--set KEY=VALUE parsing (a guest is handed the resolved parameters as data: places.hand)."""

import pytest

from mptcplab.commands.run import parse_overrides
from mptcplab.errors import UsageError


def test_values_are_toml_and_keys_may_hold_dots():
    d = parse_overrides(['sweep.repetitions=2', 'sweep.buffers=["64K", "1M"]', 'detail.buffer=auto',
                         'sysctls.snd."net.ipv4.tcp_sack"=0'])
    assert d == {"sweep": {"repetitions": 2, "buffers": ["64K", "1M"]}, "detail": {"buffer": "auto"},
                 "sysctls": {"snd": {"net.ipv4.tcp_sack": 0}}}


def test_bad_override():
    with pytest.raises(UsageError, match="KEY=VALUE"):
        parse_overrides(["repetitions"])
