"""`mptcplab doctor`: check what the labs need, print each failure with its fix."""

from __future__ import annotations

from .. import doctor


def register(sub) -> None:
    p = sub.add_parser("doctor", help="check this machine for everything the labs need, with fixes")
    p.set_defaults(func=_doctor)


def _doctor(_args) -> int:
    print(doctor.AHEAD, flush=True)
    _, ok = doctor.report(emit=lambda line: print(line, flush=True))
    return 0 if ok else 1
