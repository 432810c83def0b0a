"""Celery tasks of the audit app."""

import logging

from celery import shared_task

from audit.selectors import audit_chain_verify

logger = logging.getLogger(__name__)


@shared_task(ignore_result=True)
def audit_chain_verify_task() -> bool:
    """Daily verification of the chain (scheduled by beat); logs an error naming the first break."""
    result = audit_chain_verify()
    if result.ok:
        logger.info("audit chain verified: %d events", result.checked)
    else:
        logger.error("audit chain BROKEN at %s", result.first_break)
    return result.ok
