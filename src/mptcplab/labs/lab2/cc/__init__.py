"""Multipath congestion controls as BPF struct_ops (Lab 2): build, load, list, unload.

`mptcplab clean` calls `unload_all()`; the Python reference of the same rules is `ccref` (next to this package).
"""

from .loader import (
    ALGORITHMS,
    COUNTS,
    PREFIX,
    RECORD_SLOTS,
    Algorithm,
    Recording,
    available,
    build,
    counted,
    in_use,
    list_loaded,
    load,
    load_raw,
    loaded,
    parse_counters,
    parse_ss_cc,
    recording,
    resolve,
    save_raw,
    stats,
    unload,
    unload_all,
)

__all__ = ["ALGORITHMS", "COUNTS", "counted", "parse_counters", "PREFIX", "RECORD_SLOTS", "Algorithm", "Recording", "available", "build", "in_use",
           "list_loaded", "load", "load_raw", "loaded", "parse_ss_cc", "recording", "resolve", "save_raw", "stats",
           "unload", "unload_all"]
