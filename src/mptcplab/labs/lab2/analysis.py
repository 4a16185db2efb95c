"""Lab 2 analysis: compact tables from a sweep, throughput with 95% confidence intervals, the
fairness result, Plotly figures and the "paper vs this run" table.

The design decides the statistics. Cross traffic is seeded by the run number, so run r meets the
same pattern under every algorithm: throughput is compared as *paired* differences to uncoupled
(and CS218 to LIA) per run, with a t interval of the mean difference and the number of runs a
difference of that size would need. The fairness runs have nothing seeded in common, so each
algorithm's TCP share is compared with uncoupled's by Welch's two-sample interval. RFC 6356's
three goals are checked on the fairness runs with the same intervals (`rfc6356_checks`).

    tables = compact(sweep_dir)         # throughput.csv, subflows.csv, fairness.csv, timeseries.csv,
                                        # ..., lab2-manifest.json next to the runs (raw records first)
    tables = load(dir)                  # the same from a sweep or the reference (solutions/results/lab2/)
    throughput_table(tables["throughput"]); paired_table(...); paper_vs_run(...)
    fairness_table(tables["fairness"]); rfc6356_checks(tables["fairness"], best_path_ceiling_mbps(man))
    stalls(tables["goodput-bins"])      # runs whose receiver's goodput stalled
    divergences(tp, controlled_runs(dir), params)   # the report's ratios this run excludes, and why
    report(dir)                         # the "paper vs this run" markdown
    figures(dir)                        # fig_throughput, fig_cwnd, fig_rtt_rto, fig_packets, fig_fairness
    export_reference(sweep, dest); export_controlled(sweep, dest, name)
"""

# The lab's analysis as the engine and the notebook see it (Lab.analysis: compact, load, report,
# figures, export_reference), gathered from the modules that each do one part.
from ...judge import stats
from .paper import PAPER, TITLES, ORDER
from .raw import CC_EVENTS_RAW, write_json, convert_raw, shared_split
from .stalls import GOODPUT_BIN_S, STALL_MBPS, STALL_S, goodput_bins, stalls
from .counters import sum_counters, bpf_counters, counted_vs_recorded
from .sweep import COMPACT, SWEEP_PARAMETERS, BIN_S, FAIRNESS_COLUMNS, ss_on_shared, compact, invocations, load
from .throughput import throughput_table, paired_table, paper_vs_run
from .fairness import tcp_on_shared, fairness_table, RFC6356_GOALS, rfc6356_checks, best_path_ceiling_mbps
from .controlled import CONTROLLED_DIR, controlled_runs, controlled_ratio, cross_change, mechanisms, controlled_section
from .divergences import RUNNABLE, WHY, evidence, divergence_status, divergences
from .report import report
from .figures import fig_throughput, fig_cwnd, fig_rtt_rto, fig_packets, fig_fairness, figures
from .reference import export_reference, export_controlled

# The statistics are mptcplab.judge.stats' (one computation for the log, the report and the notebook);
# t975 and mean_ci are named here too because the notebook calls them as la.t975 and la.mean_ci.
t975, mean_ci = stats.t975, stats.mean_ci

__all__ = [  # the face: what `from mptcplab.labs.lab2 import analysis as la` offers
    "stats", "t975", "mean_ci", "PAPER", "TITLES", "ORDER", "CC_EVENTS_RAW", "write_json", "convert_raw",
    "shared_split", "GOODPUT_BIN_S", "STALL_MBPS", "STALL_S", "goodput_bins", "stalls", "sum_counters",
    "bpf_counters", "counted_vs_recorded", "COMPACT", "SWEEP_PARAMETERS", "BIN_S", "FAIRNESS_COLUMNS",
    "ss_on_shared", "compact", "invocations", "load", "throughput_table", "paired_table", "paper_vs_run",
    "tcp_on_shared", "fairness_table", "RFC6356_GOALS", "rfc6356_checks", "best_path_ceiling_mbps",
    "CONTROLLED_DIR", "controlled_runs", "controlled_ratio", "cross_change", "mechanisms", "controlled_section",
    "RUNNABLE", "WHY", "evidence", "divergence_status", "divergences", "report", "fig_throughput", "fig_cwnd",
    "fig_rtt_rto", "fig_packets", "fig_fairness", "figures", "export_reference", "export_controlled",
]
