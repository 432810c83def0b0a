"""The leaderboard's API, one module per resource: results (the public API of published results) and rechecks
(the chair's)."""
