"""Peer review: assignments, conflicts of interest, comments, typed objections, approvals."""
