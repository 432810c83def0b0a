"""The naive baseline for bench/upload_memory.py: a throwaway Django project (settings, urlconf and WSGI
application in this one module, nothing from the portal) whose only view reads the whole request body
with `request.body`, as a single-request upload endpoint would. Served by gunicorn:

    cd bench && DJANGO_SETTINGS_MODULE=upload_memory_naive gunicorn upload_memory_naive:application

Not part of the product; only the benchmark starts it.
"""

from __future__ import annotations

import hashlib
import os

SECRET_KEY = os.environ.get("NAIVE_SECRET_KEY", "bench-only-" + "x" * 40)
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
ROOT_URLCONF = __name__
INSTALLED_APPS: list[str] = []
MIDDLEWARE: list[str] = []
DATABASES: dict = {}
USE_TZ = True
# Django's default (2.5 MB) refuses a large body in request.body; the naive endpoint lifts the cap, as a
# single-request upload endpoint has to.
DATA_UPLOAD_MAX_MEMORY_SIZE = None


def upload(request):
    from django.http import JsonResponse

    body = request.body  # the whole upload, in memory
    return JsonResponse({"size": len(body), "sha256": hashlib.sha256(body).hexdigest()})


def _urlpatterns():
    from django.urls import path
    from django.views.decorators.csrf import csrf_exempt

    return [path("upload/", csrf_exempt(upload))]


urlpatterns = _urlpatterns()

if os.environ.get("DJANGO_SETTINGS_MODULE") == __name__:
    from django.core.wsgi import get_wsgi_application

    application = get_wsgi_application()
