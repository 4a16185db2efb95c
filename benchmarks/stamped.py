"""A stream for the benchmark probes' guest output: each line with the host's seconds since t0."""

import time


class Stamped:
    def __init__(self, f, t0):
        self.f, self.t0 = f, t0

    def write(self, text):
        for line in text.splitlines(keepends=True):
            self.f.write(f"[host +{time.time() - self.t0:6.1f} s] {line}")

    def flush(self):
        self.f.flush()
