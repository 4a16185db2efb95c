"""One quick real reproduction of every lab per test session, shared by the lab tests."""

import subprocess
import sys
import threading

import pytest

TIMEOUT_S = 3600


def run_showing_stderr(argv: list[str], capture, timeout: float, prefix: str) -> subprocess.CompletedProcess:
    """subprocess.run(argv, capture_output=True, text=True) whose stderr also reaches the terminal
    line by line as it comes, past pytest's capture (`capture`: its capturemanager plugin)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    timed_out = threading.Event()
    watchdog = threading.Timer(timeout, lambda: (timed_out.set(), proc.kill()))
    watchdog.start()
    stdout: list[str] = []
    reader = threading.Thread(target=lambda: stdout.extend(proc.stdout), daemon=True)
    reader.start()
    stderr = []
    try:
        for line in proc.stderr:
            stderr.append(line)
            with capture.global_and_fixture_disabled():
                sys.stderr.write(f"{prefix}{line}")
                sys.stderr.flush()
        rc = proc.wait()
        reader.join()
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
    if timed_out.is_set():
        raise subprocess.TimeoutExpired(argv, timeout, "".join(stdout), "".join(stderr))
    return subprocess.CompletedProcess(argv, rc, "".join(stdout), "".join(stderr))


@pytest.fixture(scope="session")
def reproduced(tmp_path_factory, pytestconfig):
    """`mptcplab reproduce --quick` into a fresh directory: every lab's quick run on a real kernel.
    Its log reaches the terminal as it runs (each lab's runs with the time left): half an hour of
    silence reads as a hang."""
    out = tmp_path_factory.mktemp("reproduce")
    res = run_showing_stderr([sys.executable, "-m", "mptcplab.cli", "reproduce", "--quick", "--out", str(out)],
                             pytestconfig.pluginmanager.getplugin("capturemanager"), TIMEOUT_S, "[reproduce] ")
    (out / "pytest-reproduce.log").write_text(res.stdout + res.stderr)
    return out, res
