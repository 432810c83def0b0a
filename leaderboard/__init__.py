"""The leaderboard app, in two halves importing one way: the publication workflow (leaderboard.publishing:
publications, revisions, challenges, snapshots, re-checks, the public log) and the public board
(leaderboard.board: pages' reads, SLO and tender answers, exports, caches), which reads the workflow's records.
Beside them: the models and the workflow's tables (models.py, workflow.py), the tasks (which run both), the demo
seed, and the HTTP layer (views/, api/, urls)."""
