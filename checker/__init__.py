"""MLPerf Endpoints result checker: safe bundle reading, raw-log recomputation, rules. No Django."""

__version__ = "0.1.0"

from checker.cli.local_check import check  # noqa: E402  - `checker.check(paths, tokenizer=...)` is the entry point

__all__ = ["__version__", "check"]
