"""Lab 2 analysis: the runs' raw records (kernel trace, BPF callbacks, the emulator's capture) made
into their tables, once, after the runs."""

from __future__ import annotations

import json
from pathlib import Path

from . import cctrace
from ...core.errors import ExperimentFailed
from ...core.files import replace_file
from ...measure import observe
from ...run import results
from .cc.loader import events_frame, load_raw
from .measure import link_packets, shared_link_rates


CC_EVENTS_RAW = "cc-events.npy"  # a recorded run's BPF callbacks as the map held them (cc.save_raw)


def write_json(path: Path, obj) -> None:
    """Replaced whole (files.replace_file): convert_raw runs on the host while a guest may still
    read the sweep."""
    replace_file(path, json.dumps(obj, indent=2, default=str) + "\n")


def convert_raw(out: Path) -> list[str]:
    """The runs' raw records made into their tables, once: the kernel's trace into tcp_probe.csv
    (observe.parse_saved_trace) and the recorded BPF callbacks into cc-trace.csv.gz. The runs keep
    them raw because parsing them in an emulated CPU took 20-50 s per run (the VM place, 2026-11),
    in the host's Python a second or two; each manifest's `artefacts` then lists the tables.
    Returns the runs converted."""
    done = []
    for d, s in results.completed(out):
        converted = observe.parse_saved_trace(d) is not None
        raw = d / CC_EVENTS_RAW
        if raw.exists():
            cctrace.save(cctrace.compact(events_frame(load_raw(raw)), s["algo"]), d / "cc-trace.csv.gz")
            raw.unlink()
            converted = True
        if (d / (s.get("link_capture") or {}).get("file", "-")).exists():
            shared_split(d, s)
            converted = True
        if converted:
            manifest = json.loads((d / "manifest.json").read_text())
            manifest["artefacts"] = sorted(p.name for p in d.iterdir())
            write_json(d / "manifest.json", manifest)
            done.append(d.name)
    return done


def shared_split(d: Path, s: dict) -> None:
    """A fairness run's split of the shared link, from the emulator's capture of what the links
    delivered (its `link_capture`): every data segment into links.csv.gz, the split
    (measure.shared_link_rates) into the run's summary, the capture removed."""
    cap = s["link_capture"]
    pkts = link_packets(d / cap["file"])
    split = shared_link_rates(pkts, cap["shared_prefix"], cap["ports"])
    if not split:
        raise ExperimentFailed(f"fairness run {d.name}: the emulator saw no span in which both flows crossed the "
                               f"shared link ({len(pkts)} segments captured; kept: {d / cap['file']})")
    pkts.to_csv(d / "links.csv.gz", index=False)  # every data segment the links delivered, compactly
    s.update({**split, "shared_split_from": "the emulator's capture of its egress (measure.shared_link_rates)"})
    write_json(d / "summary.json", s)
    (d / cap["file"]).unlink()
