"""Leaderboard models (published snapshots, annotations) arrive with the publication issue."""
