"""mptcplab: reproduce published MPTCP/TCP research on a real Linux kernel."""

__version__ = "0.1.0"
