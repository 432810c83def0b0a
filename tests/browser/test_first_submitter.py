"""A first-time submitter in Chromium, from nothing to a submitted result, on the pages they would use:

register the system (its system_desc.json), create a draft, upload three run archives (the page says it is
checking while the last request runs), read the findings (points r<C>, official region ids, rule links to the
rules page grouped by area), fix by uploading the whole curve, compare the two versions, print the summary,
download the report, ask for waivers of what remains and submit.

Screenshots: docs/screenshots/first-submitter-*.png.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from submissions.models import CheckRun, Submission, System
from tests.factories import PASSWORD, RUN_ARCHIVES, BenchmarkFactory

pytestmark = pytest.mark.django_db(transaction=True)
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
FIRST_THREE = [
    p for p in RUN_ARCHIVES if p.name in ("AX-8000_c1.tar.gz", "AX-8000_c2.tar.gz", "AX-8000_c4.tar.gz")
]


@pytest.fixture
def portal(live_server, storage_dir, plain_http, role_users, settings):
    """The live server (checks run inside the upload's last request, as in the demo) and the sample benchmark;
    acme has no system yet."""
    settings.PORTAL_UPLOAD_PART_BYTES = 256 * 1024
    BenchmarkFactory(sample=True)
    return live_server.url


def _system_desc(tmp_path: Path) -> Path:
    """The system_desc.json the run folders carry, as a submitter would take it from one of them."""
    with tarfile.open(RUN_ARCHIVES[0]) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("/system_desc.json"))
        data = tar.extractfile(member).read()
    path = tmp_path / "system_desc.json"
    path.write_bytes(data)
    return path


def _message(page) -> str:
    return page.locator(".messages").inner_text() if page.locator(".messages").count() else ""


def _shot(page, name: str, selector: str | None = None, *, full: bool = False) -> None:
    if selector:
        page.locator(selector).first.evaluate("el => el.scrollIntoView({block: 'start'})")
    else:
        page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(SHOTS / f"first-submitter-{name}.png"), full_page=full)


def _upload(page, files, submission: Submission, version: int) -> None:
    page.set_input_files("[data-file-input]", [str(path) for path in files])
    page.click("[data-start]")
    # While the last request runs the check (no worker), the page says it is checking, with a spinner.
    working = page.locator(".upload-file.working .note", has_text="checking every load point")
    working.wait_for(timeout=120_000)
    assert page.locator(".upload-file.working").count() == 1  # the last file; the others are verified
    assert "Checking version" in page.locator("[data-status]").inner_text()
    if version == 1:
        _shot(page, "03-checking", "#upload")
    page.wait_for_url(f"**/submissions/{submission.pk}/?version={version}#check", timeout=180_000)
    page.locator("#check-section [data-check-status]").wait_for()


def test_first_time_submitter_registers_uploads_fixes_and_submits(chromium, portal, tmp_path):
    SHOTS.mkdir(parents=True, exist_ok=True)
    context = chromium.new_context(viewport={"width": 1280, "height": 1000}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(60_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{portal}/accounts/login/")
    page.fill("input[name=username]", "submitter")
    page.fill("input[name=password]", PASSWORD)
    page.click("main button[type=submit]")
    page.wait_for_url(f"{portal}/dashboard/")

    # --- No system yet: the dashboard sends them to the Systems page to register one. ------------------------
    assert "no system yet" in page.locator("main").inner_text()
    page.click("main >> text=register one on the Systems page")
    page.fill("#id_name", "Acme_AX-8000")
    page.set_input_files("#id_system_desc", str(_system_desc(tmp_path)))
    _shot(page, "01-register-system", "#register")
    page.click("text=Register system")
    assert "System Acme_AX-8000 registered" in _message(page)
    assert System.objects.filter(name="Acme_AX-8000").exists()

    # --- A draft for it, then three run archives: the first look at the findings. ---------------------------
    page.goto(f"{portal}/dashboard/")
    page.select_option("#id_benchmark", label="Llama 3.1 8B Instruct (llama3_1-8b)")
    page.select_option("#id_availability", "available")
    _shot(page, "02-create-draft")
    page.click("text=Create draft")
    page.wait_for_url("**/submissions/*/#upload")
    submission = Submission.objects.get()
    _upload(page, FIRST_THREE, submission, 1)
    first = CheckRun.objects.get(version__submission=submission, version__number=1)
    assert first.status == CheckRun.Status.FAILED
    section = page.locator("#check-section")
    # The official tools' names: r<C> for points, the region id with a label beside it.
    rows = section.locator("table.points tbody th[scope=row]")
    assert [rows.nth(i).inner_text().split()[0] for i in range(rows.count())] == ["r1", "r2", "r4"]
    assert section.locator("table.points th[scope=row] code.region").first.inner_text() in (
        "low_latency",
        "low_concurrency",
        "med_concurrency",
        "high_concurrency",
    )
    errors_shown = section.locator("details.finding-group.sev-error .finding")
    assert errors_shown.count() == first.counts["error"]
    assert section.locator("a.rule", has_text="point-count").count() == 1
    _shot(page, "04-findings", "#check-heading")

    # --- The rule's documentation, one click away, in its area of the rules page. ---------------------------
    section.locator("a.rule", has_text="point-count").click()
    page.wait_for_url("**/rules/#rule-point-count")
    rule = page.locator("#rule-point-count")
    assert rule.is_visible()
    area = page.locator("section.rule-area", has=page.locator("#rule-point-count"))
    assert "Regions" in area.locator("h2").inner_text()
    _shot(page, "05-rule", "#rule-point-count")
    page.fill("#rule-filter", "ttft")
    assert page.locator("section.rule-area:visible").count() < page.locator("section.rule-area").count()
    page.go_back()
    page.wait_for_url(f"**/submissions/{submission.pk}/**")

    # --- The fix: the whole curve, seven archives. Only the short-run accuracy rule is left. ----------------
    page.goto(f"{portal}/submissions/{submission.pk}/#upload")
    _upload(page, RUN_ARCHIVES, submission, 2)
    second = CheckRun.objects.get(version__submission=submission, version__number=2)
    assert set(second.findings.filter(severity="error").values_list("rule", flat=True)) == {
        "accuracy-sample-count"
    }
    assert page.locator("#check-section table.points tbody tr").count() == 7

    # --- What changed between the two versions. --------------------------------------------------------------
    page.click("text=Compare with another version")
    page.wait_for_url(f"**/submissions/{submission.pk}/compare/?b=2")
    removed = page.locator("section[aria-labelledby=removed-heading] .finding")
    assert removed.filter(has_text="point-count").count() >= 1
    compared = page.locator("table.compare-points tbody tr")
    assert compared.count() == 7
    assert "absent" in compared.filter(has_text="r64").first.inner_text()
    _shot(page, "06-compare", full=True)

    # --- The report: a printable page and a JSON download. ----------------------------------------------------
    page.goto(f"{portal}/submissions/{submission.pk}/?version=2#check")
    page.click("text=Printable one-page summary")
    page.wait_for_url(f"**/submissions/{submission.pk}/versions/2/summary/")
    page.emulate_media(media="print")
    assert not page.locator(".site-header").is_visible()  # print CSS: the page alone
    page.set_viewport_size({"width": 794, "height": 1123})  # A4 at 96 dpi
    _shot(page, "07-summary-print", full=True)
    page.emulate_media(media="screen")
    page.set_viewport_size({"width": 1280, "height": 1000})
    page.goto(f"{portal}/submissions/{submission.pk}/?version=2#check")
    with page.expect_download() as download:
        page.click("text=Report as JSON")
    report = json.loads(Path(download.value.path()).read_text())
    assert report["portal"]["version"] == 2 and report["verdict"] == "fail"
    assert {f["rule"] for f in report["findings"] if f["severity"] == "error"} == {"accuracy-sample-count"}

    # --- Ask a waiver for what remains, then submit. ---------------------------------------------------------
    submit = page.locator("[data-action=submit] button")
    assert submit.is_disabled()
    while page.locator("form.waiver-form").count():  # a rule's findings are asked for at once (one form)
        form = page.locator("form.waiver-form").first
        form.locator("textarea").fill("Short sample runs on purpose; the full-length accuracy run follows.")
        form.locator("button").click()
        page.wait_for_load_state()
    page.click("[data-action=submit] button")
    assert "frozen for review" in _message(page)
    submission.refresh_from_db()
    assert submission.status == Submission.Status.SUBMITTED and submission.submitted_version.number == 2
    _shot(page, "08-submitted")
    assert not errors, errors
    context.close()
