"""Public pages: published results per benchmark, Pareto step charts, SLO matching, exports."""
