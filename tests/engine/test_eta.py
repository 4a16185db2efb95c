"""Progress of long steps without a count (the setup check, the analysis): against the last time."""

import logging
import time

import pytest

from mptcplab.core import eta, log


def test_progress_says_what_is_known():
    assert eta.progress(60, 190) == "1m00s, about 2m10s left"
    assert eta.progress(200, 190) == "3m20s, longer than the 3m10s it took last time"
    assert eta.progress(60, None) == "1m00s, no earlier time here to estimate the rest from"
    assert eta.duration(3725) == "1h02m"


def test_a_step_ticks_against_the_last_time_and_remembers_only_a_finished_one(caplog, step_times):
    say = log.get("lab2")
    clock = [0.0]
    with caplog.at_level(logging.INFO, logger="mptcplab.lab2"):
        with eta.step(say, "setup check", "lab2/vm/setup check", clock=lambda: clock[0], every=0.02):
            clock[0] = 45.0
            time.sleep(0.1)
            clock[0] = 190.0
    said = [r.getMessage() for r in caplog.records]
    assert said[0] == "setup check"  # nothing to go by yet
    assert "setup check  [0m45s, no earlier time here to estimate the rest from]" in said
    assert eta.last_took("lab2/vm/setup check") == 190.0

    caplog.clear()
    clock[0] = 0.0
    with caplog.at_level(logging.INFO, logger="mptcplab.lab2"), pytest.raises(KeyboardInterrupt):
        with eta.step(say, "setup check", "lab2/vm/setup check", clock=lambda: clock[0], every=0.02):
            clock[0] = 60.0
            time.sleep(0.1)
            raise KeyboardInterrupt
    said = [r.getMessage() for r in caplog.records]
    assert said[0] == "setup check (last time 3m10s)"
    assert "setup check  [1m00s, about 2m10s left]" in said
    assert eta.last_took("lab2/vm/setup check") == 190.0  # an interrupted step is no measure
