"""The emulated network: hosts as namespaces, links as qdiscs, MPTCP endpoints, a place's own latency."""
