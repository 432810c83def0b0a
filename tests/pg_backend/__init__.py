"""PostgreSQL backend for the test suite only: flushing the test database between transactional tests empties the
append-only audit log too, which the TRUNCATE trigger (audit 0003) refuses to anyone else."""
