"""Lab 3: the parallel-TCP throughput equation (Damjanovic et al.). `experiment` defines the lab
(`LAB`); `models` holds the paper's equations, `notebook` the notebook's helpers."""
