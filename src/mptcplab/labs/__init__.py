"""Lab-specific experiments and analyses (the engine layers know nothing of these).

Each lab is a package here whose `experiment` module defines `LAB = Lab(...)` (see `mptcplab.run.lab`);
`mptcplab run labN` finds it. Lab packages do not import each other.
"""
