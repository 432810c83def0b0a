"""Writes of the review app (assign, comment, object, approve) arrive with the review issue."""
