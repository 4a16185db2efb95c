"""Judging results: the papers' claims, evaluated on a run's tables."""
