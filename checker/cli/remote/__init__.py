"""`portal submit`, `portal status` and `portal preview`: talk to a portal over its HTTP API (stdlib only)."""
