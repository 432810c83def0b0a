"""Writes of accounts, by topic: `organisations` (organisations, users, memberships, global roles), `invitations`,
`addresses` (verified e-mail), `sign_in` (sign-ins, passwords, two-factor), `tokens` (API tokens), `notifications`.
Every write is audited; callers import the topic module."""
