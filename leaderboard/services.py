"""Writes of the leaderboard app (publication snapshots) arrive with the publication issue."""
