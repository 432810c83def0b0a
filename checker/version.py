"""The checker's version: recorded with every check run and in every report (a stage of its own, below every other,
so that reading it imports nothing)."""

__version__ = "0.1.0"
