"""Writes of the review app, one module per topic: conflicts, assignments, reviews (and the quorum), the thread
(and objections), waivers, attestations (and evidence requests), deadlines, and the submitter's transitions.
Every write records its audit event in its own transaction; every status change of a submission goes through
the tables' `take` (portal.policy), and every write asks the workflow tables (review.lifecycle) first: who may, in
which state, judged now. Callers import the topic module."""
