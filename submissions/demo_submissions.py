"""Demo submissions built from the real samples, uploaded and checked through the portal's own services.

- Acme_AX-8000: its seven run archives (with raw logs), so the checker really recomputes every point.
- Acme_AX-8000 on acme-serve 1.1: three more real runs of the same hardware (r16 and r32 re-measured, r48
  new), for the extensions of the published AX-8000 result (`extension/`).
- Nimbus_NB-2: NimbusCloud's seven real run archives (2 accelerators, a real cliff after c16; `second-system/`).
- Acme_AX-4000: the sample bundle's AX-4000 points packed as a bundle archive; they carry no raw log,
  so the check shows `raw-log-missing` findings next to the claimed curve.

Every archive is uploaded byte for byte as the official client and builder wrote it (tests/checker/fixtures/*/
README.md give their SHA-256): no demo result relabels a run as another concurrency. The one exception to "as on
disk" is the embargoed Unreleased-Z9 (review.demo, never published), whose archives are the AX-8000 runs renamed
(run_archives_renamed), which its review thread and docs/review.md say.

Idempotent: a demo submission is recognised by its title and never uploaded twice. Under the demo's
zero-config settings (no REDIS_URL) Celery runs in-process, so the checks finish before seed_demo ends;
with a broker the checks are queued for the workers like any upload.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from catalog.models import Benchmark
from submissions.models import Submission
from submissions.services import submission_create
from submissions.uploads import upload_finish, upload_part, upload_start

SAMPLES_DIR = Path(settings.BASE_DIR) / "tests" / "checker" / "fixtures"
RUN_ARCHIVES_DIR = SAMPLES_DIR / "run_archives"
EXTENSION_DIR = SAMPLES_DIR / "extension"
SECOND_SYSTEM_DIR = SAMPLES_DIR / "second-system"
BUNDLE_PARENT = SAMPLES_DIR / "bundle"
BUNDLE_ROOT = BUNDLE_PARENT / "AcmeCompute" / "acme-2026-12-C0-endpoints-001"
DEMO_MODEL_ID = "llama3_1-8b"


@dataclass(frozen=True)
class DemoFile:
    """One file the demo uploads: its name as the submitter would give it, and its bytes."""

    filename: str
    data: bytes


def _archives(folder: Path, prefix: str, concurrencies=None) -> list[DemoFile]:
    """The run archives `<prefix>_c<C>.tar.gz` in `folder` (only those of `concurrencies` when given), sorted by
    concurrency, as they are on disk."""
    paths = sorted(
        folder.glob(f"{prefix}_c*.tar.gz"), key=lambda p: int(p.name.split("_c")[-1].split(".")[0])
    )
    if concurrencies is not None:
        paths = [p for p in paths if int(p.name.split("_c")[-1].split(".")[0]) in set(concurrencies)]
    if not paths:
        raise FileNotFoundError(f"No {prefix} run archives under {folder}")
    return [DemoFile(path.name, path.read_bytes()) for path in paths]


def run_archive_files() -> list[DemoFile]:
    """The seven AX-8000 run archives (acme-serve 0.9), one per load point, sorted by concurrency."""
    return _archives(RUN_ARCHIVES_DIR, "AX-8000")


def extension_archive_files(*concurrencies: int) -> list[DemoFile]:
    """The real AX-8000 runs on acme-serve 1.1 (r16, r32 re-measured; r48 new), those of `concurrencies`."""
    return _archives(EXTENSION_DIR, "AX-8000-v1.1", concurrencies or None)


AGENTIC_DIR = SAMPLES_DIR / "agentic" / "run_archives"
AGENTIC_MODEL_ID = "qwen3_6-35b-a3b"


def agentic_files() -> list[DemoFile]:
    """Zephyr Silicon's real agentic coding curve of the ZX-2 (Qwen3.6-35B-A3B, r1, r2, r8; fixtures/agentic/)."""
    return [
        DemoFile(path.name, path.read_bytes())
        for path in (AGENTIC_DIR / f"ZX-2_agentic_c{c}.tar.gz" for c in (1, 2, 8))
    ]


def second_system_files() -> list[DemoFile]:
    """NimbusCloud's seven Nimbus NB-2 run archives, sorted by concurrency."""
    return _archives(SECOND_SYSTEM_DIR, "NB-2")


def bundle_archive_for_system(system_name: str) -> DemoFile:
    """The sample bundle reduced to one system's results (plus docs and src), as a .tar.gz.

    Built deterministically (sorted members, fixed times and owners), so the same system always gives
    the same bytes and the same SHA-256.
    """
    keep_prefix = f"results/{system_name}"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=6, format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(BUNDLE_ROOT.rglob("*")):
            relative = path.relative_to(BUNDLE_ROOT).as_posix()
            if (
                relative.startswith("results/")
                and not (relative == keep_prefix or relative.startswith(keep_prefix + "/"))
                and relative != "results"
            ):
                continue
            info = tarfile.TarInfo(path.relative_to(BUNDLE_PARENT).as_posix())
            info.mtime, info.uid, info.gid, info.uname, info.gname = 1_764_460_800, 0, 0, "", ""
            if path.is_dir():
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            elif path.is_file():
                data = path.read_bytes()
                info.size, info.mode = len(data), 0o644
                tar.addfile(info, io.BytesIO(data))
    # gzip writes the time into its header: pin it so the archive's SHA-256 never changes.
    data = bytearray(buffer.getvalue())
    data[4:8] = b"\x00\x00\x00\x00"
    return DemoFile(f"{system_name}_bundle.tar.gz", bytes(data))


def upload_files(*, submission: Submission, files: list[DemoFile], actor, kind: str):
    """Upload files the way the web page and the CLI do (start, parts, finish); the last finish makes
    one version of all of them and queues its check. Returns the version."""

    verified = []
    version = None
    for position, demo_file in enumerate(files):
        sha256 = hashlib.sha256(demo_file.data).hexdigest()
        upload = upload_start(
            actor=actor,
            submission=submission,
            filename=demo_file.filename,
            size=len(demo_file.data),
            sha256=sha256,
        )
        for index in range(upload.parts_expected):
            chunk = demo_file.data[index * upload.part_size : (index + 1) * upload.part_size]
            upload_part(upload=upload, index=index, data_stream=io.BytesIO(chunk), actor=actor)
        last = position == len(files) - 1
        version = upload_finish(
            upload=upload,
            sha256=sha256,
            actor=actor,
            create_version=last,
            include_uploads=verified if last else (),
            kind=kind,
        ).version
        verified.append(upload)
    return version


DEMO_SUBMISSIONS = [
    # system, title (the demo's marker: an existing submission with this title is left alone), kind, files
    (
        "Acme_AX-8000",
        "Demo: AX-8000 from its seven run archives (raw logs, recomputed)",
        "run_archives",
        run_archive_files,
    ),
    (
        "Acme_AX-4000",
        "Demo: AX-4000 from the sample bundle (no raw logs)",
        "bundle",
        lambda: [bundle_archive_for_system("Acme_AX-4000")],
    ),
]


def seed_demo_sample_submissions(seed) -> list[Submission]:
    """One checked draft submission per sample system (see the module docstring). Safe to run again."""

    submitter = seed.users["demo-submitter"]
    benchmark = Benchmark.objects.get(model_id=DEMO_MODEL_ID)
    made = []
    for system_name, title, kind, files in DEMO_SUBMISSIONS:
        system = seed.systems[system_name]
        submission = Submission.objects.filter(
            organisation=system.organisation, system=system, title=title
        ).first()
        if submission is None:
            submission = submission_create(actor=submitter, system=system, benchmark=benchmark, title=title)
        if not submission.versions.exists() and submission.in_state("draft"):
            upload_files(submission=submission, files=files(), actor=submitter, kind=kind)
        made.append(submission)
    return made


def run_archives_renamed(*, system_id: str, system_name: str, organisation_name: str) -> list[DemoFile]:
    """The seven AX-8000 run archives re-labelled as another organisation's system (a generated version whose
    measurements are the sample's): system_power.json names `system_id`, system_desc.json `system_name` and
    the organisation. Deterministic bytes, like bundle_archive_for_system."""
    renamed = []
    for original in run_archive_files():
        source = tarfile.open(fileobj=io.BytesIO(original.data), mode="r:gz")
        buffer = io.BytesIO()
        with (
            source,
            tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=6, format=tarfile.PAX_FORMAT) as tar,
        ):
            for member in source.getmembers():
                data = source.extractfile(member).read() if member.isfile() else None
                if data is not None and member.name.endswith("/system_desc.json"):
                    description = json.loads(data)
                    description.update(
                        system_name=system_name,
                        shortened_system_name=system_name,
                        submitter_org_names=organisation_name,
                    )
                    data = json.dumps(description, indent=2).encode()
                elif data is not None and member.name.endswith("/system_power.json"):
                    power = json.loads(data)
                    power["system_desc_id"] = system_id
                    data = json.dumps(power, indent=2).encode()
                info = tarfile.TarInfo(member.name)
                info.type, info.mode, info.mtime = member.type, member.mode, 1_764_460_800
                info.uid, info.gid, info.uname, info.gname = 0, 0, "", ""
                if data is None:
                    tar.addfile(info)
                else:
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
        data = bytearray(buffer.getvalue())
        data[4:8] = b"\x00\x00\x00\x00"
        renamed.append(DemoFile(original.filename.replace("AX-8000", system_id), bytes(data)))
    return renamed


def system_description_of(files: list[DemoFile]) -> dict:
    """The system_desc.json of the first run archive in `files` (to register the system it describes)."""
    with tarfile.open(fileobj=io.BytesIO(files[0].data), mode="r:gz") as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("/system_desc.json"))
        return json.loads(tar.extractfile(member).read())
