"""Stage 2, recompute: figures derived from what was read, the same everywhere they are shown.

Series statistics and early stopping (stats), goodput and SLO attainment (goodput), curves and their
Pareto front (curve), concurrency regions (regions) and the one reading of a usable number (numbers).
The raw-log replay itself is checker.events (with checker.tokens), which stay at the package root for now.
"""
