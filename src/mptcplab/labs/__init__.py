"""Lab-specific experiments and analyses (the engine layers know nothing of these).

Each lab module defines `LAB = Lab(...)` (see `mptcplab.lab`); `mptcplab run labN` finds it here.
"""
