"""The check pipeline's services: create, start, check one point, join, retry, reconcile, re-check.

One CheckRun per (version, request). Each step calls one step of checker.cli.pipeline, the same steps
`portal check` runs in one process, so the portal's verdict is the command's verdict on the same files:

  check_run_start    (one task)  queued -> running; lists the load points file by file
                                 (pipeline.list_points) and fans out a Celery chord:
  check_run_point    (N tasks)   pipeline.check_point on the files that hold the point (and those that
                                 hold none); stores its PointMetric row and its findings (delete-and-insert);
  check_run_finish   (join)      pipeline.judge_version over the whole version on the stored points (no
                                 second recomputation), with the portal-only rules (checker.judge.portal_rules);
                                 the report's findings, curves and document become the run's rows, and the
                                 run ends passed/failed.

Files come through the worker's cache (submissions.storage.fetch_to_folder): a point task reads only
its own archive from storage, and what one task read is not read again by the next on that worker.

Every task carries (check_run_id, attempt). A task whose attempt is not the run's current attempt
(a message re-delivered after its attempt was given up) does nothing, and every state change is
a compare-and-set on (status, attempts), so a run ends exactly once however often messages arrive.
A worker lost mid-run stops the heartbeat; the reconciler (portal.reconcile, the check run's entries in
submissions.workflow.OVERDUE) re-queues the run as the next
attempt, or fails it after max_attempts, and says so in error_message. A queued run whose start
message never reached a worker is handled the same way after PORTAL_CHECK_QUEUED_TIMEOUT_S.

The modules, by topic: `queue` (create, queue through the outbox, re-check), `steps` (start, point, finish),
`common` (what the steps share), `samples` (a point's per-sample arrays), `recovery` (failures, retries, the
reconciler's end of a check run).
"""
