"""What every kernel the kit builds shares: the distribution's source, and make with progress.

Two kernels are built from the same `linux-source-6.*` package: the UML kernel (uml_kernel.py, a
place of its own) and the kit's box kernel (box_kernel.py, Debian's own config with the paper's
scheduler patch, for the Vagrant box and Lima).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from ..core import process
from ..core.errors import EnvironmentProblem


def find_source() -> tuple[Path, str]:
    """The newest /usr/src/linux-source-6.*.tar.xz and its package version."""
    tarballs = sorted(
        Path("/usr/src").glob("linux-source-6.*.tar.xz"),
        key=lambda p: [int(x) for x in re.findall(r"\d+", p.name)],
    )
    if not tarballs:
        raise EnvironmentProblem(
            "no kernel source found in /usr/src: install it with "
            "`apt-get install linux-source-6.12` (Debian 12; any linux-source-6.x works), "
            "or run scripts/install-deps.sh"
        )
    tarball = tarballs[-1]
    pkg = tarball.name.removesuffix(".tar.xz")
    version = process.run(["dpkg-query", "-W", "-f=${Version}", pkg], check=False, timeout=30).stdout.strip()
    version = version or f"{pkg}-{int(tarball.stat().st_mtime)}"
    return tarball, version



# kbuild's short line for each object it compiles or links ("  CC      net/mptcp/protocol.o"); a
# dry run prints it inside the command that would echo it ("set -e; echo '  CC      ...'; gcc ...").
OBJECT_LINE = re.compile(r"(?:^|echo ')  (?:CC|AS|LD) +\S", re.M)


class _LogLines:
    """A file for tqdm in a log: each redraw becomes its own line. tqdm redraws a bar in place by
    starting each with a carriage return, which a log (CI, nohup) keeps as one endless line."""

    def __init__(self, out):
        self.out = out

    def write(self, s: str) -> None:
        s = s.replace("\r", "").rstrip()
        if s:
            self.out.write(s + "\n")

    def flush(self) -> None:
        self.out.flush()


def enable_options(src: Path, make: list[str], options: list[str], what: str, extra: list[str] = ()) -> None:
    """Build `options` in (=y) on top of src/.config (with `scripts/config` arguments `extra`), let
    kconfig settle the rest, and refuse a config that dropped any (a dependency missing)."""
    process.run([str(src / "scripts" / "config"), "--file", str(src / ".config"), *extra]
                + [a for o in options for a in ("--enable", o)])
    process.run(make + ["olddefconfig"])
    config = (src / ".config").read_text()
    lost = [o for o in options if f"CONFIG_{o}=y" not in config]
    if lost:
        raise EnvironmentProblem(f"{what} config dropped {', '.join(lost)} (dependencies missing?)")


def make_with_progress(argv: list[str], quiet: bool, desc: str, what: str, total: int | None | str = "dry run") -> int:
    """Run make, showing the objects compiled out of the total, and an ETA; returns how many it made.

    The total is `total` where the caller knows it (the box kernel: its last build's count; None:
    unknown, so no ETA), else (`"dry run"`) kbuild's own: a dry run (`make -n`, seconds) of the same target lists every object this config
    builds (1109 for the kit's UML config of linux-source-6.12). It ends in an error where the final
    link needs the objects it did not make, so the few link steps after that point come on top (the
    total grows to match: the build makes 1118). For x86's `all` that dry run stops after 4 objects
    (it needs files the build generates first), hence the box kernel's own count.
    """
    from tqdm import tqdm

    if total == "dry run":
        # One job: parallel sub-makes write their long command lines into the pipe in blocks that
        # interleave, which cut 2-17 of them at -j2 here; serially the count is the same every time.
        serial = [a for a in argv if not a.startswith("-j")]
        dry = subprocess.run(serial + ["-n"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        total = len(OBJECT_LINE.findall(dry.stdout)) or None
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    tail: list[str] = []
    # In a log (CI, nohup) a bar redrawn every 2 s is one endless line: redraw once a minute there.
    # miniters=1 keeps tqdm's monitor thread out: with its dynamic miniters, objects arriving in
    # bursts made it print a second line seconds after each.
    tty = sys.stderr.isatty()
    with tqdm(total=total, unit="obj", desc=desc, disable=quiet, mininterval=2 if tty else 60,
              miniters=1, file=sys.stderr if tty else _LogLines(sys.stderr)) as bar:
        for line in child.stdout:
            tail = (tail + [line])[-40:]
            if OBJECT_LINE.match(line):
                if total and bar.n >= bar.total:
                    bar.total = bar.n + 1
                bar.update(1)
        made = bar.n
    if child.wait() != 0:
        raise EnvironmentProblem(f"{what} build failed:\n" + "".join(tail))
    return made
