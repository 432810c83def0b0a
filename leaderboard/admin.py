"""Admin of the leaderboard app (models arrive with the publication issue)."""
