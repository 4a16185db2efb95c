"""MPTCP path-manager configuration: limits and endpoints for exactly N subflows, one per path.

The sender (the connecting host, on the `a` side of the paths) has a `subflow` endpoint on each
extra path, bound to that path's interface (`dev`): the kernel opens one subflow from each to
the receiver's first address. The topology routes every packet by the interface it entered on
(see topology.py), so a subflow stays on its path in both directions.

Why not let the receiver announce its other addresses (`signal`)? On an announcement the
in-kernel path manager opens the new subflow from the *initial* local address, so it leaves
through the first path's interface and the receiver answers over the first path too: MPTCP
then looks healthy while both subflows share one path. Every new namespace starts at
`subflows 2 add_addr_accepted 0`, so the limits are always set explicitly.
"""

from __future__ import annotations


def commands(sender_ns: str, receiver_ns: str, extra_paths: list[tuple[str, str]]) -> list[tuple[list[str], str]]:
    """`ip mptcp` commands for one initial subflow plus one per extra path.

    extra_paths: (sender interface, sender address) of each path after the first.
    Returns (argv, why) pairs.
    """
    n = len(extra_paths)
    cmds: list[tuple[list[str], str]] = [
        (["ip", "-n", receiver_ns, "mptcp", "limits", "set", "subflow", str(n), "add_addr_accepted", "0"],
         f"receiver: accepts at most {n} extra subflow(s)"),
        (["ip", "-n", sender_ns, "mptcp", "limits", "set", "subflow", str(n), "add_addr_accepted", "0"],
         f"sender: opens at most {n} extra subflow(s), ignores announced addresses"),
    ]
    for dev, addr in extra_paths:
        cmds.append((["ip", "-n", sender_ns, "mptcp", "endpoint", "add", addr, "dev", dev, "subflow"],
                     f"sender opens a subflow from {addr} over {dev}"))
    return cmds


def show_command(ns: str) -> tuple[list[str], str]:
    """The command whose output goes into the manifest (read with `parse_show`), and its input:
    the endpoints and the limits listed by one `ip -batch`, one program per host and run where two
    cost twice as much of an emulated CPU."""
    return ["ip", "-n", ns, "-batch", "-"], "mptcp endpoint show\nmptcp limits show\n"


def parse_show(text: str) -> dict[str, list[str]]:
    """show_command's output as `ip mptcp endpoint show` and `ip mptcp limits show` each printed it
    alone (lines, the whole output stripped): an endpoint's line starts with its address, the
    limits' with their names."""
    shown: dict[str, list[str]] = {"endpoints": [], "limits": []}
    for line in text.splitlines():
        shown["limits" if line.startswith(("add_addr_accepted", "subflows")) else "endpoints"].append(line)
    return {k: "\n".join(lines).strip().splitlines() for k, lines in shown.items()}
