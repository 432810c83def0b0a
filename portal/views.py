"""Project-level pages that belong to no single app: the home page."""

from django.shortcuts import render

from leaderboard.views import home_context


def home(request):
    """Benchmarks with their counts of published results and the latest publications (leaderboard.selectors)."""
    return render(request, "home.html", home_context())
