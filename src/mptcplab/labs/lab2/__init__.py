"""Lab 2: CS218 delay-window multipath congestion control as BPF programs. `experiment` defines the
lab (`LAB`); `cc` loads the BPF programs, `ccref` is their Python reference, `cctrace` replays
recorded traces through it."""
