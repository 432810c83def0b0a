"""Public HTML pages of the leaderboard."""

from django.shortcuts import render

from leaderboard.selectors import leaderboard_benchmarks


def index(request):
    return render(request, "leaderboard/index.html", {"benchmarks": leaderboard_benchmarks()})
