"""Progress of a long step that has no count of its own: elapsed time and the time left, from how
long the same step took the last time it finished on this machine.

    with eta.step(say, "setup check", "lab2/vm/setup check", clock=...):
        ...   # every 30 s: "lab2: setup check  [1m00s, about 2m10s left]"

The sweep counts its runs and the UML build its objects (tqdm); a setup check, an analysis or a
compile has no such count, so the only honest estimate is the last time it took here, said as
such, and once a step runs longer than that, "longer than last time" instead of a made-up figure.
Times are kept per step in ~/.cache/mptcplab/steps.json (a lost write only costs one estimate).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from pathlib import Path
from typing import Callable

from . import paths
from .files import replace_file

EVERY_S = 30.0  # a line every 30 s: a step that takes minutes says where it is, a log stays short


def duration(seconds: float) -> str:
    """`2m14s`, `1h05m`: how the kit writes elapsed and remaining times."""
    seconds = max(0, int(seconds))
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


def _file() -> Path:
    return paths.cache_dir("steps.json")


def last_took(key: str) -> float | None:
    """Seconds the step took the last time it finished here, or None."""
    try:
        return float(json.loads(_file().read_text())[key])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def remember(key: str, seconds: float) -> None:
    with contextlib.suppress(OSError, ValueError):
        f = _file()
        f.parent.mkdir(parents=True, exist_ok=True)
        try:
            times = json.loads(f.read_text())
        except (OSError, ValueError):
            times = {}
        times[key] = round(seconds, 1)
        replace_file(f, json.dumps(times, indent=1, sort_keys=True) + "\n")


def progress(elapsed: float, expected: float | None) -> str:
    """`1m00s, about 2m10s left` against the last time; what is known when that is not."""
    if expected is None:
        return f"{duration(elapsed)}, no earlier time here to estimate the rest from"
    if elapsed >= expected:
        return f"{duration(elapsed)}, longer than the {duration(expected)} it took last time"
    return f"{duration(elapsed)}, about {duration(expected - elapsed)} left"


@contextlib.contextmanager
def step(say, what: str, key: str, clock: Callable[[], float] = time.monotonic, every: float = EVERY_S):
    """Say `what` with the time it took last time, then its progress every `every` seconds until
    the block ends; remember how long it took if it finished (an error or interrupt is no measure).
    `clock`: wall-clock seconds as the place reads them (a UML guest's own clock skips idle time)."""
    expected = last_took(key)
    t0 = clock()
    say.info("%s%s", what, f" (last time {duration(expected)})" if expected is not None else "")
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(every):
            with contextlib.suppress(OSError):  # a clock read that failed costs one line, never the step
                say.info("%s  [%s]", what, progress(clock() - t0, expected))

    ticker = threading.Thread(target=tick, name=f"eta {key}", daemon=True)
    ticker.start()
    try:
        yield
    finally:
        stop.set()
        ticker.join()
    remember(key, clock() - t0)
