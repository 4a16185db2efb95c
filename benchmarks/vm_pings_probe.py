"""Run inside the VM guest by vm_start_probe.py: do the paths' pings measure the same lowest
RTT one path after another (as the kit pinged until 2026-11-28) as side by side? On quick Lab 2's
network, as the lab builds it (own latency measured and taken out of netem's delay), ROUNDS rounds
of: each path pinged alone in turn; the four side by side, each started STAGGER s after the one
before, at one interval; the four started at once; the kit's own way (latency.ping_paths: side by
side, each path at its own interval). 20 pings at 0.2 s as the kit (latency.ping_rtt). Writes
JSON to argv[1]."""

import json
import sys
import threading
import time

from mptcplab.net import latency
from mptcplab.run.lab import get_lab

ROUNDS, STAGGER = 2, 0.05
lab = get_lab("lab2")
params = lab.load_params(True)
result = {"rounds": []}


def side_by_side(net, paths, stagger):
    got = {}

    def one(i, p):
        time.sleep(i * stagger)
        got[p.name] = latency.ping_rtt(net, p.a, p.b, p.name)

    threads = [threading.Thread(target=one, args=(i, p)) for i, p in enumerate(paths)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return got, time.monotonic() - t0


t_up = time.monotonic()
with lab.topology(params).up() as net:
    paths = net.topo.paths
    result["up_s"], result["own_latency_s"] = net.up_s, net.own_latency_s
    result["own_latency"] = {p.name: net.topo.own_latency[p.name].ping for p in paths}
    for r in range(ROUNDS):
        t0 = time.monotonic()
        alone = {p.name: latency.ping_rtt(net, p.a, p.b, p.name) for p in paths}
        alone_s = time.monotonic() - t0
        staggered, staggered_s = side_by_side(net, paths, STAGGER)
        at_once, at_once_s = side_by_side(net, paths, 0.0)
        t0 = time.monotonic()
        kit = latency.ping_paths(net, paths)
        kit_s = time.monotonic() - t0
        row = {"alone": alone, "alone_s": alone_s, "staggered": staggered, "staggered_s": staggered_s,
               "at_once": at_once, "at_once_s": at_once_s, "kit": kit, "kit_s": kit_s}
        result["rounds"].append(row)
        for p in paths:
            print(f"round {r + 1} path {p.name}: lowest/median ms alone {alone[p.name]['min_ms']}/{alone[p.name]['median_ms']}"
                  f"  staggered {staggered[p.name]['min_ms']}/{staggered[p.name]['median_ms']}"
                  f"  at once {at_once[p.name]['min_ms']}/{at_once[p.name]['median_ms']}"
                  f"  drifting (the kit's) {kit[p.name]['min_ms']}/{kit[p.name]['median_ms']}", flush=True)
        print(f"round {r + 1}: alone {alone_s:.1f} s, staggered {staggered_s:.1f} s, at once {at_once_s:.1f} s, "
              f"drifting {kit_s:.1f} s", flush=True)
with open(sys.argv[1], "w") as f:
    json.dump(result, f, indent=1)
