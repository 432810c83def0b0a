"""MLPerf Endpoints result checker: safe bundle reading, raw-log recomputation, rules. No Django."""

__version__ = "0.1.0"
