"""Django's PostgreSQL backend whose flush (the reset between transactional tests) runs with triggers off and puts
back the rows the migrations seed."""

import importlib

from django.db.backends.postgresql import base, operations

# The data migrations that seed rows every database starts with (the benchmark catalog): a flush empties their tables
# too, and a test that runs after a transactional test in the same process would find no benchmark. One process runs
# the transactional tests last (pytest-django orders them so); `make test-fast` spreads files over processes, where a
# transactional test can come first.
SEEDS = (
    ("catalog.migrations.0002_benchmark_catalog", "load_catalog"),
    ("catalog.migrations.0003_llama3_packaged_tokenizer", "use_package"),
)


class DatabaseOperations(operations.DatabaseOperations):
    def execute_sql_flush(self, sql_list):
        # session_replication_role=replica (superuser only, as the suite connects) skips ordinary triggers, the
        # audit log's TRUNCATE refusal included, until the flush's transaction ends.
        if not sql_list:
            return
        super().execute_sql_flush(["SET LOCAL session_replication_role = replica", *sql_list])
        from django.apps import apps

        for module, function in SEEDS:
            getattr(importlib.import_module(module), function)(apps, None)


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations
