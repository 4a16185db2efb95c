"""Lab 2 analysis: the report's throughput tables and its names for the algorithms, in its order."""

from __future__ import annotations

import math

import pandas as pd


# The report's tables (Mbit/s, mean of 10 runs; ns-3, 5 Mbit/s links, UDP cross traffic).
# "Mobility": the Wi-Fi MANET with random mobility (first table); "static": no mobility (second).
PAPER = pd.DataFrame([
    {"algo": "cs218", "paper_mobility": 25.04, "paper_static": 25.05},
    {"algo": "coupled", "paper_mobility": 24.06, "paper_static": 22.3104},
    {"algo": "uncoupled", "paper_mobility": 24.89, "paper_static": 22.3328},
    {"algo": "lia", "paper_mobility": 24.52, "paper_static": 24.74},
    {"algo": "ewtcp", "paper_mobility": math.nan, "paper_static": math.nan},
])
TITLES = {"uncoupled": "Uncoupled", "ewtcp": "EWTCP", "coupled": "Fully Coupled",
          "lia": "RTT Compensator / LIA", "cs218": "CS218 ALGO",
          # the report's own RTT-compensator rule, a = 1/sqrt(n) (a control, cc.ALGORITHMS)
          "lia_report": "RTT Compensator, the report's a = 1/√n", "cs218_report": "CS218 ALGO on a = 1/√n"}
ORDER = ["uncoupled", "ewtcp", "coupled", "lia", "cs218", "lia_report", "cs218_report"]
