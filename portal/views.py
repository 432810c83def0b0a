"""Project-level pages that belong to no single app: the home page."""

from leaderboard.views.public import home as leaderboard_home


def home(request):
    """Benchmarks with their counts of published results and the latest publications (leaderboard.board.selectors),
    the body cached under the public generation (leaderboard.views.public.home)."""
    return leaderboard_home(request)
