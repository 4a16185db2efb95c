"""Checks that teach: a failing public check says, in its own words and in a few lines, what was
expected in kind, what was found and the likely mistake; never its source, never a graded value.

A lab's public checks (`labs/labN/checks.py`) are functions built on `expect`. The master
notebooks' test cells use Otter's exception-based format (ASSIGNMENT CONFIG `tests: ok_format:
false`): a test is a function whose parameters are the notebook names it reads, and a public one
is a single call into the lab's checks. Otter then shows a failure as the one line of the test
that raised and the exception's message (no doctest trace, no check source: 3 lines plus the
message); the grader's report shows the message alone (`summary`).
"""

from __future__ import annotations

import re

MAX_LINES = 6  # of a CheckFailed message: with Otter's 3 lines before it, at most 9 in all


class CheckFailed(AssertionError):
    """A public check's finding, in the checker's own words (at most MAX_LINES lines)."""


def expect(condition: bool, message: str) -> None:
    """Raise CheckFailed(message) when condition is false. A hint that ends in a question, closed by
    the sentence around it ("On ...: {hint}."), ends with its question mark alone."""
    if not condition:
        raise CheckFailed(message[:-1] if message.endswith("?.") else message)


# Otter's exception-based failure: "❌ Test case failed\nError at line N in test qN:\n  <line>\nType: message"
_EXCEPTION_FAILURE = re.compile(r"Error at line \d+ in test [^\n]*:\n[^\n]*\n(?P<type>[\w.]+): ?(?P<msg>.*)", re.S)
_DOCTEST_EXCEPTION = re.compile(r"^\s*(?P<type>[A-Za-z_][\w.]*(Error|Exception|CheckFailed))(: ?(?P<msg>.*))?$")


def summary(message: str, limit: int = 8) -> str:
    """The part of an Otter failure message a student reads in the grader's report: a CheckFailed's
    own message, an AssertionError's prefixed with its type; for any other exception its type only
    (its text may quote the values the test held). At most `limit` lines."""
    m = _EXCEPTION_FAILURE.search(message)
    if m:
        kind, text = m["type"].rsplit(".", 1)[-1], m["msg"].strip()
    else:  # an OK-format (doctest) failure: the first failing example's exception, up to the next example
        lines = message.splitlines()
        at = next((i for i, ln in enumerate(lines) if _DOCTEST_EXCEPTION.match(ln)), None)
        if at is None:
            return "\n".join(ln.strip() for ln in lines if ln.strip())[-500:]
        d = _DOCTEST_EXCEPTION.match(lines[at])
        kind, rest = d["type"].rsplit(".", 1)[-1], []
        for ln in lines[at + 1:]:
            if ln.startswith(("*****", "Trying:")):
                break
            rest.append(ln.strip())
        text = "\n".join([d["msg"] or "", *rest]).strip()
    if kind == "NameError":
        return f"NameError: {text}"
    if kind not in ("CheckFailed", "AssertionError", "StudentCallError"):  # texts the kit wrote
        return f"{kind} (the check could not use this answer)"
    out = [ln for ln in text.splitlines() if ln.strip()][:limit] or ["the check failed (it gave no reason)"]
    return ("AssertionError: " if kind == "AssertionError" else "") + "\n".join(out)
