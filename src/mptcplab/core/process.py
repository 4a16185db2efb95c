"""The one way the kit runs an external command and waits for it.

A failure raises the kit's error (EnvironmentProblem unless told otherwise) with the command line
quoted and the end of what it printed, so the message alone says what to retry by hand. Long-lived
processes (servers, captures, the UML kernel) are started with subprocess.Popen where they are
managed; everything that runs to completion comes through `run`.
"""

from __future__ import annotations

import os
import shlex
import subprocess

from .errors import EnvironmentProblem

# The programs the labs run: {program: (its Debian package, the command that prints its version)}.
# Doctor checks each; every manifest records the version of each package (results.tool_versions).
TOOLS = {
    "ip": ("iproute2", ["ip", "-V"]), "tc": ("iproute2", ["tc", "-V"]),
    "ss": ("iproute2", ["ss", "-V"]), "nstat": ("iproute2", ["nstat", "-V"]),
    "ethtool": ("ethtool", ["ethtool", "--version"]), "tcpdump": ("tcpdump", ["tcpdump", "--version"]),
    "tshark": ("tshark", ["tshark", "--version"]), "iperf3": ("iperf3", ["iperf3", "--version"]),
    "ping": ("iputils-ping", ["ping", "-V"]),
}


def run(argv: list[str], *, check: bool = True, timeout: float | None = None, what: str = "",
        error: type[Exception] = EnvironmentProblem, **kw) -> subprocess.CompletedProcess:
    """Run argv to completion, capturing text output.

    check=True: a non-zero exit, a missing program or a timeout raises `error` naming the command.
    check=False: they come back as a CompletedProcess (returncode 127 for a missing program or a
    timeout, the reason in stderr), for probes that only ask "does this work?".
    """
    line = shlex.join(str(a) for a in argv)
    where = f"{what}: " if what else ""
    try:
        out = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout, **kw)
    except (OSError, subprocess.TimeoutExpired) as exc:
        reason = f"timed out after {timeout:g} s" if isinstance(exc, subprocess.TimeoutExpired) else str(exc)
        if check:
            raise error(f"{where}`{line}` {reason}") from None
        return subprocess.CompletedProcess(argv, 127, "", reason)
    if check and out.returncode != 0:
        said = (out.stderr or out.stdout).strip()[-1500:]
        raise error(f"{where}`{line}` failed ({out.returncode}): {said}")
    return out


def first_line(argv: list[str]) -> str | None:
    """The first line a command prints (e.g. its version), or None when it cannot run."""
    out = run(argv, check=False, timeout=10)
    text = (out.stdout or out.stderr).strip() if out.returncode != 127 else ""
    return text.splitlines()[0] if text else None


def cpu_s(pid: int) -> float | None:
    """CPU seconds (user + system) process `pid` has used so far, with those of its children it
    has waited for; None once it is gone. From /proc/PID/stat, for a process that is killed with
    no report of its own to give (the trace reader, Lab 2's UDP senders and sinks)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()  # after the command's name, which may hold spaces
    except (OSError, IndexError):
        return None
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime stime cutime cstime
