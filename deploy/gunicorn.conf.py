"""gunicorn settings of docker-compose.yml's web service: `gunicorn -c deploy/gunicorn.conf.py portal.wsgi`.

Sync workers are few, and each serves one connection at a time: never expose them to clients directly. nginx
(deploy/nginx.conf) sits in front and buffers whole requests and answers, so a slow client holds an nginx
connection, not a worker.
"""

import os

# Inside the compose network only (no published port); 127.0.0.1 when nginx runs on the same host.
bind = os.environ.get("PORTAL_GUNICORN_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("PORTAL_GUNICORN_WORKERS", "3"))
timeout = int(os.environ.get("PORTAL_GUNICORN_TIMEOUT", "120"))
graceful_timeout = 30
# Whether a request came over https is Django's decision alone (SECURE_PROXY_SSL_HEADER, on only with
# PORTAL_BEHIND_TLS_PROXY=1). gunicorn's default would believe X-Forwarded-Proto: https from 127.0.0.1.
forwarded_allow_ips = ""
secure_scheme_headers: dict[str, str] = {}
accesslog = "-"
