"""MLPerf Endpoints result checker: safe bundle reading, raw-log recomputation, rules. No Django."""

from checker.cli.local_check import check  # `checker.check(paths, tokenizer=...)` is the entry point
from checker.version import __version__

__all__ = ["__version__", "check"]
