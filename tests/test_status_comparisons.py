"""No code outside the models and the workflow policy compares or writes a status (issue 19, docs/portal.md "One workflow
policy"): queries ask the model's named state sets (`Submission.states.q("published")`), objects answer
`in_state(...)`, and a compare-and-set goes through `Policy.advance`. This reads every production module's syntax
tree, so a `.status ==` or a `filter(status=...)` added anywhere else fails here with its file and line.

Writes the same: a state changes only through a table's `take` (or `create`, for a row born in a state), which
checks who may, compares-and-sets and writes the audit event (issue 36). `obj.status = ...`, `update(status=...)`,
`create(status=...)`, `Model(status=...)` and `save(update_fields=["status"])` anywhere else fail here.

Tests are held to the write rule too: a test that needs a row in a state the workflow would take many steps to reach
puts it there through `tests/states.py` (`put`), the one module of the suite that writes a state by hand, or builds it
with a factory. Test assertions read states freely: reading what the policy did is what a test is for.

A line may say why it must compare itself with a `# states: <why>` comment (a state the operator named on the
command line; a demo seeder checking it reached the state it was told to)."""

from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STATE_NAME = re.compile(r"^(.*__)?([a-z_]*status)(__in|__exact)?$")
NOT_A_STATE = {"status_code", "http_status", "response_status", "exitstatus"}
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


WRITES = {"update", "create", "update_or_create", "get_or_create", "bulk_update"}


def writes(source: str, filename: str, models: set[str]) -> list[tuple[int, str]]:
    """(line, what) of every status write in one module: an assignment to a status attribute, a status given to
    a query's write or to a model's constructor, a status in `save(update_fields=...)`."""
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found += [
                (node.lineno, ast.unparse(target) + " = ...")
                for target in targets
                if isinstance(target, ast.Attribute) and _is_state(target.attr)
            ]
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in WRITES or name in models:
                found += [
                    (kw.value.lineno, f"{name}({kw.arg}=...)")
                    for kw in node.keywords
                    if kw.arg and _is_state(kw.arg)
                ]
            if name == "save":
                for kw in node.keywords:
                    if kw.arg == "update_fields" and any(
                        isinstance(item, ast.Constant)
                        and isinstance(item.value, str)
                        and _is_state(item.value)
                        for item in ast.walk(kw.value)
                    ):
                        found.append((node.lineno, "save(update_fields=[status])"))
    return [(line, what) for line, what in found if "# states:" not in lines[line - 1]]


def _model_names() -> set[str]:
    from django.apps import apps

    return {model.__name__ for model in apps.get_models()}


def suite_modules():
    """Every test module but `tests/states.py`, the suite's one door for arranging a state by hand."""
    for path in sorted((ROOT / "tests").rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative != "tests/states.py":
            yield relative, path


def test_no_status_write_outside_the_policy():
    models = _model_names()
    offenders = [
        f"{relative}:{line}: {what}"
        for relative, path in itertools.chain(production_modules(), suite_modules())
        for line, what in writes(path.read_text(encoding="utf-8"), relative, models)
    ]
    assert not offenders, "take the table's row instead (Policy.take / Policy.create):\n" + "\n".join(
        offenders
    )


def test_the_write_scan_sees_each_form_of_write():
    source = "\n".join(
        [
            "upload.status = 'aborted'",
            "Upload.objects.filter(pk=1).update(status='aborted')",
            "Upload.objects.create(status='open')",
            "Upload(status='open', filename='x')",
            "upload.save(update_fields=['status', 'updated_at'])",
            "comment.objection_status = 'open'",
            "Publication.objects.update_or_create(pk=1, status='scheduled')",
            "JsonResponse({}, status=400)",  # HTTP, not a state
            "render(request, 'x.html', context, status=status)",  # HTTP
            "upload.filename = 'x'",
            "run.status = wanted  # states: the one the operator named",
        ]
    )
    assert sorted(line for line, _ in writes(source, "example.py", {"Upload", "Publication"})) == [
        1,
        2,
        3,
        4,
        5,
        6,
        7,
    ]


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
