"""Pages of accounts, one module per path under /accounts/ (`tokens.py` serves /accounts/tokens/, `sign_in.py`
the sign-in and password pages)."""
