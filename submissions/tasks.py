"""Celery tasks of the submissions app (the check pipeline arrives with later work).

Convention: a task takes ids, calls one service, is safe to run twice, and is queued with
transaction.on_commit / delay_on_commit.
"""
