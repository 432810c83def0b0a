"""Stage 2, recompute: figures derived from what was read, the same everywhere they are shown.

The point replay from the raw log (replay) with its exact token counts (tokens, fastcount), the portal's metrics
of another tool's per-request records (imported), series statistics and early stopping (stats), goodput and SLO
attainment (goodput), curves and their Pareto front (curve), concurrency regions (regions) and the one reading of a
usable number (numbers).
"""
