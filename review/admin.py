"""Admin of the review app (models arrive with the review issue)."""
