"""Pages of spot-checks, one module per persona: auditor (start one on the audit page, watch it measure), downloads
(the evidence of a spot-check: auditors and the chair; of a published re-measurement: the public where the endpoint
is public), panels (the spot-check panel other apps' pages include).

A submission is looked up through access.visibility first (404 for what the user may not see); the audit pages
are for auditors and the chair (403 for anyone else who may see the submission). A refusal of the service
becomes a message on the page, never a 500."""

from __future__ import annotations
