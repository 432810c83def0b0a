"""Celery tasks of the audit app."""

import logging

from celery import shared_task

from audit.checkpoints import CheckpointError, checkpoint_latest, checkpoint_write
from audit.selectors import audit_chain_verify
from portal.queues import task_kind

logger = logging.getLogger(__name__)


@shared_task(**task_kind("housekeeping", ignore_result=True))
def audit_chain_verify_task() -> bool:
    """Verify the chain against the newest signed checkpoint; logs an error naming the first break."""
    try:
        checkpoint = checkpoint_latest()
    except CheckpointError as exc:
        logger.error("audit chain cannot be verified: %s", exc)
        return False
    result = audit_chain_verify(
        checkpoint_head=checkpoint.head if checkpoint else None,
        checkpoint_label=str(checkpoint) if checkpoint else "",
    )
    if result.ok:
        logger.info("audit chain verified: %d events", result.checked)
    else:
        logger.error("audit chain BROKEN at %s", result.first_break)
    return result.ok


@shared_task(**task_kind("housekeeping", ignore_result=True))
def audit_checkpoint_task() -> bool:
    """Daily (beat): verify the chain, then write a signed checkpoint of its head to the audit_checkpoints
    storage. A broken chain gets no checkpoint: the last good one keeps vouching for the chain as it was."""
    if not audit_chain_verify_task():
        return False
    checkpoint = checkpoint_write()
    logger.info("audit checkpoint written: %s", checkpoint)
    return True
