"""Lab 1: MPTCP send-buffer starvation (Kato et al. 2020). `experiment` defines the lab (`LAB`)."""
