"""Lab 3 analysis: model predictions for every measured run, errors, Plotly figures and the
"paper vs this run" table.

`compact(sweep_dir)` writes the tables the notebook reads next to the runs:
    runs.csv   one row per run: scenario, n, configured loss/capacity, the measured inputs
               (p, p_e, p_r, rtt, T, b; rtt = the kernel's srtt, min_rtt and ack_rtt beside it),
               measured throughput (packets/s), goodput (goodput_window_mbps over the steady window,
               goodput_transfer_mbps over the whole transfer) and what each model predicts
    flows.csv  one row per flow of each run (the same quantities per flow)
    losses.csv one row per loss: run, flow, t = when the lost packet was sent (s after the window start)
    lab3-manifest.json   parameters, platform, network, tools of the run
`load(dir)` reads them from a sweep or from the shipped reference copy (solutions/results/lab3/).

    runs = predict(runs)                # each model's prediction and error, `queued`, the loss graded by
    error_summary(runs); padhye_vs_model1(runs); timeouts_vs_model1(runs); rtt_sensitivity(runs)
    graded_runs(runs); within_band(runs)      # the runs the bands apply to, and who lands inside
    controls = load_controls(dir)       # controlled runs kept in controls/NAME/
    divergences(runs, controls, manifest, claims=doc)   # each departure from the paper: claims.json's, then the setup's
    report(dir)                         # the "paper vs this run" markdown
    figures(dir); write_figures(dir, runs)    # fig_throughput, fig_scatter, fig_error, fig_median_error
    export_reference(sweep, dest); export_controlled(sweep, dest, name)   # a controlled run in dest/controls/NAME/
"""

# The lab's analysis as the engine and the notebook see it (Lab.analysis: compact, load, report,
# figures, export_reference), gathered from the modules that each do one part.
from .predictions import (
    MODELS, GRADED_MAX_LOSS, QUEUED, PAPER_MAX_LOSS, QUEUE_LIMIT, FILL_MIN, BANDS, model_b, predict, groups,
    graded_runs, within_band,
)
from .fit import (
    error_summary, padhye_vs_model1, padhye_sentence, timeouts_vs_model1, RTTS, rtt_sensitivity,
)
from .sweep import COMPACT, RUN_COLUMNS, one_way_delay, compact, load
from .controls import CONTROLS, load_controls, sysctls_applied
from .recovery import (
    RENO_RECOVERY, recovery_arms, recovery_table, timeout_count_effect, timeouts_tried,
)
from .ack_ratio import (
    ACK_MODELS, NO_RATE, ACK_DIVERGENCE, link_rate, paced_controls, ack_ratio_table, ack_ratio_effect, offloads_off,
    rated_runs, ack_ratio_row,
)
from .queued import setup_check_rate, rate_cause
from .divergences import divergences
from .figures import (
    LEGEND_BELOW, fig_throughput, fig_scatter, fig_error, fig_median_error, named_figures, figures, write_figures,
)
from .report import report
from .reference import export_reference, export_controlled

__all__ = [  # the face: what `from mptcplab.labs.lab3 import analysis as la` offers
    "MODELS", "GRADED_MAX_LOSS", "QUEUED", "PAPER_MAX_LOSS", "QUEUE_LIMIT", "FILL_MIN", "BANDS", "model_b", "predict",
    "groups", "graded_runs", "within_band", "error_summary", "padhye_vs_model1", "padhye_sentence",
    "timeouts_vs_model1", "RTTS", "rtt_sensitivity", "COMPACT", "RUN_COLUMNS", "one_way_delay",
    "compact", "load", "CONTROLS", "load_controls", "sysctls_applied", "RENO_RECOVERY", "recovery_arms",
    "recovery_table", "timeout_count_effect", "timeouts_tried", "ACK_MODELS", "NO_RATE",
    "ACK_DIVERGENCE", "link_rate", "paced_controls", "ack_ratio_table", "ack_ratio_effect", "offloads_off",
    "rated_runs", "ack_ratio_row", "setup_check_rate", "rate_cause", "divergences",
    "LEGEND_BELOW", "fig_throughput", "fig_scatter", "fig_error", "fig_median_error", "named_figures", "figures",
    "write_figures", "report", "export_reference", "export_controlled",
]
