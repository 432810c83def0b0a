"""Append-only, hash-chained audit log; later also attestations and challenges."""
