"""The raw-log browser shows one conversation of an agentic run: its turns with what each carried (the prompt's
messages, the answer or tool call, the HTTP error, the aborted turns), from the real Zephyr ZX-2 HTTP-500 run."""

from __future__ import annotations

import html
from pathlib import Path

from tests.factories import VersionFileFactory
from tests.review.test_reviewer_pages import _browser

AGENTIC = Path(__file__).resolve().parents[1] / "checker" / "fixtures" / "agentic" / "run_archives"
NAME = "ZX-2_agentic_c2_http500.tar.gz"
LOG = "ZX-2_agentic_c2_http500/events.jsonl"


def _with_agentic_run(world):
    VersionFileFactory(
        version=world["version"], original_filename=NAME, content=(AGENTIC / NAME).read_bytes()
    )


def test_a_page_of_the_raw_log_links_its_conversations(review_world):
    _with_agentic_run(review_world)
    page = html.unescape(_browser(review_world, "assigned", f"?member={LOG}", name=NAME).content.decode())
    assert "Conversations on this page:" in page
    assert '&conversation=django__django-13158"' in page


def test_a_conversation_shows_its_turns_tool_calls_failures_and_aborted_turns(review_world):
    _with_agentic_run(review_world)
    failed = _browser(
        review_world, "assigned", f"?member={LOG}&conversation=scikit-learn__scikit-learn-25973", name=NAME
    ).content.decode()
    text = html.unescape(failed)
    assert "Conversation <code>scikit-learn__scikit-learn-25973</code>" in text
    assert (
        "prompt of 2 messages" in text and "prompt of 18 messages" in text
    )  # the history grows turn by turn
    assert "tool_choice required" in text and "tool call <code>bash({})</code>" in text  # turn 9
    assert "HTTP 500" in text  # turn 17 failed
    assert "aborted turn: no prompt" in text and "TurnAbortedByPriorFailure" in text  # turn 19
    assert "no answer (the request failed or the turn was aborted)" in text
    assert 'conversation_id": "sympy' not in text  # no other conversation's lines
