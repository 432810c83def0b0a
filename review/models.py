"""Review models (assignments, conflicts, objections) arrive with the review issue."""
