"""The public board: what anyone reads of the published results. The pages' and API's reads (selectors), the
public tables and exports (exports), the charts, cliffs and one row per system, the buyer's questions (slo,
goodput, normalised, procurement) and the tender desk (tender, claims, scoring, levels), and the public cache
(cache). It reads the publication workflow's records (leaderboard.publishing), never the reverse."""
