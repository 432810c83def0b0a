"""Stage 4, drive: the check pipeline and the `portal` command line that runs it.

The pipeline's steps (pipeline: the portal's workers run each one as a task) and all of them in one process
(local_check: `portal check`), the command line (main), the text report (text_report), bundle assembly
(assemble), the official checker's cross-check (official_cross_check), other tools' output (import_pipeline)
and talking to a portal over HTTP (remote/).
"""
