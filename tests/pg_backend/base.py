"""Django's PostgreSQL backend whose flush (the reset between transactional tests) runs with triggers off."""

from django.db.backends.postgresql import base, operations


class DatabaseOperations(operations.DatabaseOperations):
    def execute_sql_flush(self, sql_list):
        # session_replication_role=replica (superuser only, as the suite connects) skips ordinary triggers, the
        # audit log's TRUNCATE refusal included, until the flush's transaction ends.
        if sql_list:
            sql_list = ["SET LOCAL session_replication_role = replica", *sql_list]
        super().execute_sql_flush(sql_list)


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations
