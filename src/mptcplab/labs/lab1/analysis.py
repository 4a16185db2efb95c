"""Lab 1 analysis: the throughput sweep and the paper's Figures 4, 5, 6/9 and 10, from a run.

Everything here reads a sweep directory written by `mptcplab run lab1` (or the compact reference
copy in solutions/results/lab1/, which has the same layout minus the raw capture):

    sweep = load_sweep(path)            # one row per transfer (compact(path) writes it as sweep.csv)
    bounds = window_bounds(sweep, manifest)   # each single-path run against physics (as `mptcplab check`)
    fig_throughput(sweep, manifest=manifest)  # throughput vs send buffer, degradation region shaded,
                                              # the slow path's window bound, runs above it marked
    mptcp_bounds(sweep, manifest)       # MPTCP against what its send buffer allows
    d = Detail.load(path)               # the degraded run with capture and tracing
    fig4(d); fig5(d); fig6(d); fig10(d)
    waits = wait_table(load_details(path), sweep)   # its send-buffer waits against the control runs,
    fig_waits_compare(load_details(path))           # and the cost of tracing
    runs = load_paper_point(path)       # the paper's point with each scheduler, held at 1 MiB, tso control
    paper_point_markdown(runs)          # their tables and Holm-corrected verdicts
    agreement_markdown(ref)             # MPTCP/TCP in each place (controlled runs beside the reference)
    report(path)                        # the "paper vs this run" markdown table
    export_reference(path, dest)        # the compact copy shipped in solutions/results/lab1/
"""

# The lab's analysis as the engine and the notebook see it (Lab.analysis: compact, load, report,
# figures, export_reference), gathered from the modules that each do one part.
from .sweep import (
    PAPER, LINK_MBPS, GOODPUT_LIMIT, load_sweep, KERNEL_COLUMNS, KERNEL_PER_PATH, compact, t95,
    throughput_table, degradation_region,
)
from .bounds import (
    sweep_manifest, window_bounds, describe_bounds, slow_path_bound_curve, mptcp_bounds, buffer_needed,
    crossing, describe_mptcp_bounds, slow_path_bdp, full_path_mbps,
)
from .detail import (
    Detail, find_details, find_detail, has_detail, load_details, path_names, read_packets, subflow_inflight,
)
from .controls import (
    wait_table, describe_tracing_cost, describe_waits,
)
from .figures import (
    COLORS, fig_throughput, fig_effective_buffer, fig4, fig5, fig6, fig10, fig_waits_compare, FIGURE_NAMES,
    figures, save_images,
)
from .paper_point import (
    load_paper_point, paper_point_table, paper_verdicts, paper_point_markdown, paper_point_setting, divergence,
)
from .second_place import (
    agreement, agreement_markdown,
)
from .report import (
    report,
)
from .reference import (
    export_reference, export_controlled,
)



def load(path) -> dict:
    """The compact tables of a sweep or of a reference copy: the sweep, and where the sweep has them
    the degraded run's packets and send-buffer waits (`Detail.load` has the rest of that run) and
    the paper's point (`load_paper_point`). Grading draws Lab 1's unseen inputs from these."""
    tables = {"sweep": load_sweep(path)}
    try:
        detail = Detail.load(path)
        tables.update(packets=detail.packets, waits=detail.waits)
    except FileNotFoundError:
        pass  # no detailed run (yet)
    runs = load_paper_point(path)
    if len(runs):
        tables["paper_runs"] = runs
    return tables


__all__ = [  # the face: what `from mptcplab.labs.lab1 import analysis as la` offers
    "PAPER", "LINK_MBPS", "GOODPUT_LIMIT", "load_sweep", "KERNEL_COLUMNS", "KERNEL_PER_PATH", "compact", "load",
    "t95", "throughput_table", "degradation_region", "sweep_manifest", "window_bounds", "describe_bounds",
    "slow_path_bound_curve", "mptcp_bounds", "buffer_needed", "crossing", "describe_mptcp_bounds", "slow_path_bdp",
    "full_path_mbps", "Detail", "find_details", "find_detail", "has_detail", "load_details", "path_names", "read_packets",
    "subflow_inflight",
    "wait_table", "describe_tracing_cost", "describe_waits", "COLORS", "fig_throughput", "fig_effective_buffer",
    "fig4", "fig5", "fig6", "fig10", "fig_waits_compare", "FIGURE_NAMES", "figures", "save_images", "report",
    "export_reference", "load_paper_point", "paper_point_table", "paper_verdicts", "paper_point_markdown",
    "paper_point_setting", "divergence", "agreement", "agreement_markdown", "export_controlled",
]
