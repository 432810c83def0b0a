"""The leaderboard's pages, one module per persona: public (board, result, compare, history), buyer (the SLO finder
and the procurement report), extensions (an incremental submission's panels), chair (re-checks)."""
