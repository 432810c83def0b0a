"""No code outside the models and the workflow policy compares a status (issue 19, docs/portal.md "One workflow
policy"): queries ask the model's named state sets (`Submission.states.q("published")`), objects answer
`in_state(...)`, and a compare-and-set goes through `Policy.advance`. This reads every production module's syntax
tree, so a `.status ==` or a `filter(status=...)` added anywhere else fails here with its file and line.

A line may say why it must compare itself with a `# states: <why>` comment (a state the operator named on the
command line; a demo seeder checking it reached the state it was told to)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STATE_NAME = re.compile(r"^(.*__)?([a-z_]*status)(__in|__exact)?$")
NOT_A_STATE = {"status_code", "http_status", "response_status"}
QUERIES = {"filter", "exclude", "get", "Q", "get_or_create", "update_or_create"}
ALLOWED = re.compile(
    r"(^|/)(models\.py|models/|migrations/|workflow\.py|lifecycle\.py)|^portal/(policy|states)\.py$"
)
SKIPPED_DIRS = ("tests/", "bench/", ".venv", "var/", "node_modules/")


def _is_state(name: str) -> bool:
    match = STATE_NAME.match(name)
    return bool(match) and match.group(2) not in NOT_A_STATE


def comparisons(source: str, filename: str) -> list[tuple[int, str]]:
    """(line, what) of every status comparison in one module."""
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(side, ast.Attribute) and _is_state(side.attr) for side in sides):
                found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in QUERIES:
                found += [
                    (kw.value.lineno, f"{name}({kw.arg}=...)")
                    for kw in node.keywords
                    if kw.arg and _is_state(kw.arg)
                ]
    return [(line, what) for line, what in found if "# states:" not in lines[line - 1]]


def production_modules():
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith(SKIPPED_DIRS) or ALLOWED.search(relative):
            continue
        yield relative, path


def test_no_status_comparison_outside_the_models_and_the_policy():
    offenders = [
        f"{relative}:{line}: {what}"
        for relative, path in production_modules()
        for line, what in comparisons(path.read_text(encoding="utf-8"), relative)
    ]
    assert not offenders, "ask the model's named states or the policy instead:\n" + "\n".join(offenders)


def test_the_scan_sees_each_form_of_comparison():
    source = "\n".join(
        [
            "if submission.status == 'draft': pass",
            "if comment.objection_status in OPEN: pass",
            "Upload.objects.filter(pk=1, status='open').update(status='aborted')",
            "Submission.objects.exclude(submission__status__in=('draft',))",
            "Q(status='published')",
            "Upload.objects.create(status='open')",  # a state given, not compared
            "if response.status_code == 200: pass",  # HTTP, not a state
            "if run.status != wanted: pass  # states: the one the operator named",
        ]
    )
    assert sorted(line for line, _ in comparisons(source, "example.py")) == [1, 2, 3, 4, 5]


# --- Templates ask the policy (actions) or the model's named states (wording), never compare a status ---------

# `{% if ... %}` / `{% elif ... %}`, possibly across lines.
IF_TAG = re.compile(r"\{%-?\s*(?:if|elif)\b(.*?)-?%\}", re.DOTALL)
# A status-like name (`x.status`, `c.objection_status`, a bare `objection_status`) beside ==, !=, in or not in.
TEMPLATE_STATE = r"(?:[\w.]+\.)?\w*status\b"
TEMPLATE_OPERAND = r"(?:\"[^\"]*\"|'[^']*'|[\w.]+)"
TEMPLATE_COMPARISON = re.compile(
    rf"{TEMPLATE_STATE}\s*(?:==|!=|\bnot\s+in\b|\bin\b)\s*{TEMPLATE_OPERAND}"
    rf"|{TEMPLATE_OPERAND}\s*(?:==|!=|\bnot\s+in\b|\bin\b)\s*{TEMPLATE_STATE}"
)


def template_comparisons(source: str) -> list[tuple[int, str]]:
    """(line, condition) of every status comparison inside an `{% if %}` or `{% elif %}` of one template."""
    found = []
    for tag in IF_TAG.finditer(source):
        for match in TEMPLATE_COMPARISON.finditer(tag.group(1)):
            line = source.count("\n", 0, tag.start(1) + match.start()) + 1
            found.append((line, match.group(0)))
    return found


def template_files():
    for pattern in ("templates/**/*.html", "*/templates/**/*.html"):
        for path in sorted(ROOT.glob(pattern)):
            relative = path.relative_to(ROOT).as_posix()
            if not relative.startswith(SKIPPED_DIRS):
                yield relative, path


def test_no_template_compares_a_status():
    offenders = [
        f"{relative}:{line}: {what}"
        for relative, path in template_files()
        for line, what in template_comparisons(path.read_text(encoding="utf-8"))
    ]
    assert not offenders, (
        'ask the policy (`{% allowed obj "action" as may %}`) for a form or a button, the model\'s named states '
        '(`obj|in_state:"running"`) for wording (access/templatetags/workflow.py):\n' + "\n".join(offenders)
    )


def test_the_template_scan_sees_each_form_of_comparison():
    source = "\n".join(
        [
            '{% if submission.status == "draft" %}',
            "{% elif waiver.status != 'requested' %}",
            '{% if is_chair and challenge.status in "open answered" %}',
            "{% if run.status not in finished %}",
            '{% if c.objection_status == "open" and c.answer_due_at %}',
            '{% if objection_status == "open" %}',
            '{% if "open" == e.status %}',
            '{% if a and\n   a.status == "invited" %}',
            '{% if run|in_state:"running" %}',  # the named states: fine
            "{% if c.objection_status %}",  # only whether it has one
            '<span class="badge status-{{ run.status }}">',  # shown, not compared
            "{% if response.status_code == 200 %}",  # not a state
        ]
    )
    assert [line for line, _ in template_comparisons(source)] == [1, 2, 3, 4, 5, 6, 7, 9]
