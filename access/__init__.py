"""The visibility table of DESIGN.md as code: visible_to(user, model) per model and can(user, action, obj).

It sits with the HTTP layer on top of every app: pages, API, file downloads and exports ask it; services,
selectors, models and tasks never import it.
"""
