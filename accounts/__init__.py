"""People and their roles: organisations, memberships, global roles (auditor, chair), API tokens."""
