"""Link-spec parsing and the qdisc arguments it produces."""

import pytest

from mptcplab.core.errors import EnvironmentProblem, UsageError
from mptcplab.net.links import LinkSpec


def test_parse_full_spec():
    s = LinkSpec.parse("rate=100mbit,delay=40ms,jitter=1ms,loss=0.5%,queue=500")
    assert s.rate_bps == 100e6 and s.delay_s == 0.040 and s.jitter_s == 0.001
    assert s.loss == pytest.approx(0.005) and s.queue_pkts == 500


def test_parse_defaults_and_roundtrip():
    s = LinkSpec.parse("rate=5mbit")
    assert s.delay_s == 0 and s.loss == 0 and s.queue_pkts is None
    assert LinkSpec.parse(str(s)) == s
    assert str(LinkSpec.parse("rate=1.5gbit,delay=250us")) == "rate=1.5gbit,delay=250us,queue=auto"


@pytest.mark.parametrize("text, field, words", [
    ("rate=10 mbps", "rate", "bytes per second"),
    ("rate=fast", "rate", "bit|kbit|mbit|gbit"),
    ("delay=-5ms", "delay", "negative"),
    ("delay=40", "delay", "us|ms|s"),
    ("loss=150%", "loss", "out of range"),
    ("loss=0.5", "loss", "percentage"),
    ("queue=-1", "queue", "packets"),
    ("jitter=1ms", "jitter", "needs a delay"),
    ("bandwidth=10mbit", "bandwidth", "fields are"),
    ("rate=1mbit,rate=2mbit", "rate", "twice"),
])
def test_bad_input_names_field_and_form(text, field, words):
    with pytest.raises(UsageError) as exc:
        LinkSpec.parse(text)
    msg = str(exc.value)
    assert field in msg and words in msg
    assert UsageError.exit_status == 2


def test_netem_args_and_limit_covers_bdp():
    s = LinkSpec.parse("rate=100mbit,delay=40ms,loss=1%")
    args = s.qdisc_args(rtt_s=0.080, netem=True)
    assert args[:7] == ["netem", "delay", "40ms", "loss", "1%", "rate", "100mbit"]
    limit = int(args[args.index("limit") + 1])
    bdp = 100e6 * 0.080 / 8 / 1514
    # queue of one BDP plus the packets that sit in the 40 ms delay line at full rate
    assert limit >= bdp + 100e6 * 0.040 / 8 / 1514
    big = LinkSpec.parse("rate=1gbit,delay=50ms").qdisc_args(rtt_s=0.1, netem=True)
    assert int(big[big.index("limit") + 1]) > 1000  # netem's default of 1000 would drop at this BDP


def test_auto_queue_minimum_and_explicit():
    assert LinkSpec.parse("rate=1mbit").queue_for(0.001) == 100
    assert LinkSpec.parse("rate=1mbit,queue=7").queue_for(1.0) == 7


def test_without_netem_rate_only_uses_tbf():
    args = LinkSpec.parse("rate=5mbit,queue=50").qdisc_args(rtt_s=0.0, netem=False)
    assert args[0] == "tbf" and args[args.index("limit") + 1] == str(50 * 1514)


def test_without_netem_delay_is_an_environment_problem_with_fix():
    with pytest.raises(EnvironmentProblem, match="sch_netem.*--where uml"):
        LinkSpec.parse("rate=5mbit,delay=10ms").qdisc_args(rtt_s=0.02, netem=False)
