"""The review app's pages, one module per persona: reviewer (dashboard, review page, file browser), auditor (the
audit queue, attestation, evidence, waivers), chair (dashboard, assignments, conflicts), submitter (the
submitter's writes from the submission page)."""
