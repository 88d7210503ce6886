"""Audit: recording a run's transitions (off the main path) and the HTML page over them."""
