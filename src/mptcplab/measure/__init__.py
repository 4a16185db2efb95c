"""Traffic and what observes it: transfers, the blocking sender, captures, ss and tracefs samplers, tshark."""
