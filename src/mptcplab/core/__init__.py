"""The ground every part stands on: the kit's errors and log, where things are, running a command,
namespaces, what the kernel can do, and what the kit created (so that it can remove it)."""
