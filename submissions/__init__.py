"""Organisations, people's roles, benchmarks, systems; later submissions, versions and the check pipeline."""
