"""Evidence packs and the public transparency log (docs/evidence.md). Publishing a revision, an annotation or a
retraction builds that fact's pack in the publishing transaction: the frozen record and its evidence as a BagIt bag,
an in-toto Statement over its files signed in a DSSE envelope, the envelope appended as one leaf of the public log,
a new signed checkpoint, and the envelope's proof of inclusion in it. The formats are checker.evidence's, so
`portal verify` checks a pack without the portal. Packs and leaves are never changed."""

from __future__ import annotations

import io
import os
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connection

from checker.evidence import merkle
from checker.evidence import pack as layout
from checker.evidence.bag import Fetched, sha256_hex
from checker.evidence.note import (
    Checkpoint,
    NoteError,
    SignerKey,
    TlogProof,
    VerifierKey,
    note_sign,
    parse_key_list,
)
from leaderboard.models import (
    Annotation,
    Challenge,
    EvidencePack,
    LogCheckpoint,
    LogLeaf,
    Publication,
    PublicationRevision,
)
from review.models import Attestation, Review
from submissions.models import PointMetric
from submissions.storage import storage_open_stream, storage_save_exact

_LOG_LOCK = 0x45564C47  # the advisory lock that makes appends to the log one at a time (PostgreSQL)


# --- Keys --------------------------------------------------------------------------------------------


def signing_key() -> SignerKey:
    """The portal's signing key: PORTAL_EVIDENCE_KEY(_FILE), else the one generated once under var/."""
    text = settings.PORTAL_EVIDENCE_KEY
    if not text:
        path = settings.PORTAL_EVIDENCE_KEY_PATH
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            draft = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(f"{SignerKey.generate(settings.PORTAL_LOG_ORIGIN)}\n")
            try:
                os.link(draft, path)  # the first process to get here wins; the others read its key
            except FileExistsError:
                pass
            finally:
                draft.unlink()
        text = path.read_text(encoding="utf-8")
    try:
        key = SignerKey.parse(text)
    except NoteError as exc:
        raise ImproperlyConfigured(f"PORTAL_EVIDENCE_KEY: {exc}") from None
    if key.name != settings.PORTAL_LOG_ORIGIN:
        raise ImproperlyConfigured(
            f"The evidence signing key is named {key.name!r} but the log is {settings.PORTAL_LOG_ORIGIN!r}: a "
            "checkpoint is signed under its log's name (set PORTAL_LOG_ORIGIN or generate a key of that name)."
        )
    return key


def public_keys() -> list[VerifierKey]:
    """The current key first, then the retired ones whose signatures stay valid."""
    keys = [signing_key().verifier]
    if settings.PORTAL_EVIDENCE_RETIRED_KEYS_FILE:
        with open(settings.PORTAL_EVIDENCE_RETIRED_KEYS_FILE, encoding="utf-8") as handle:
            keys += [key for key in parse_key_list(handle.read()) if key not in keys]
    return keys


# --- The log -----------------------------------------------------------------------------------------


def leaf_hashes(size: int | None = None) -> list[bytes]:
    rows = LogLeaf.objects.order_by("index").values_list("leaf_hash", flat=True)
    return [bytes.fromhex(h) for h in (rows if size is None else rows[:size])]


def log_append(envelope: bytes, public_id: str) -> tuple[LogLeaf, str]:
    """Append the envelope as the next leaf, sign the new checkpoint; the leaf and its tlog-proof text."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_LOG_LOCK])
    hashes = leaf_hashes()
    leaf = LogLeaf.objects.create(
        index=len(hashes), envelope=envelope, leaf_hash=merkle.leaf_hash(envelope).hex(), public_id=public_id
    )
    hashes.append(bytes.fromhex(leaf.leaf_hash))
    root = merkle.root(hashes)
    note = note_sign(Checkpoint(settings.PORTAL_LOG_ORIGIN, len(hashes), root).text(), signing_key())
    LogCheckpoint.objects.create(size=len(hashes), root_hash=root.hex(), note=note)
    return leaf, TlogProof(leaf.index, merkle.inclusion_proof(leaf.index, hashes), note).text()


def checkpoint_empty() -> str:
    """The checkpoint of the empty log (size 0, the SHA-256 of nothing), before anything is published."""
    return note_sign(Checkpoint(settings.PORTAL_LOG_ORIGIN, 0, merkle.root([])).text(), signing_key())


# --- Packs -------------------------------------------------------------------------------------------


def _site(path: str) -> str:
    return settings.PORTAL_SITE_URL.rstrip("/") + path


def _iso(when: datetime | None) -> str | None:
    return when.isoformat() if when else None


def _read_stored(key: str) -> bytes:
    stream = storage_open_stream(key)
    try:
        return stream.read()
    finally:
        stream.close()


def _revisions_upto(revision: PublicationRevision) -> dict[int, PublicationRevision]:
    rows = PublicationRevision.objects.filter(
        publication_id=revision.publication_id, number__isnull=False, number__lte=revision.number
    ).select_related("version", "check_run", "submission")
    return {row.number: row for row in rows}


def _trail(publication: Publication, revisions: dict[int, PublicationRevision]) -> list[dict[str, Any]]:
    """Who did what, as the public may read it: organisations and roles, never people."""
    submission_ids = {row.submission_id for row in revisions.values()}
    events: list[dict[str, Any]] = []
    for review in Review.objects.filter(assignment__submission_id__in=submission_ids).select_related(
        "assignment__organisation", "version"
    ):
        events.append(
            {
                "at": _iso(review.created_at),
                "role": "reviewer",
                "organisation": review.assignment.organisation.name
                if review.assignment.organisation_id
                else None,
                "action": f"review.{review.decision}",
                "version": review.version.number if review.version_id else None,
            }
        )
    for attestation in Attestation.objects.filter(submission_id__in=submission_ids).select_related("version"):
        events.append(
            {
                "at": _iso(attestation.created_at),
                "role": "auditor",
                "organisation": None,
                "action": "attested",
                "version": attestation.version.number,
            }
        )
    for number, row in revisions.items():
        events.append(
            {
                "at": _iso(row.published_at),
                "role": "submitter",
                "organisation": ((row.snapshot or {}).get("organisation") or {}).get("name"),
                "action": f"published revision {number}",
                "version": row.version.number,
            }
        )
    return sorted(events, key=lambda e: (e["at"] or "", e["action"]))


def _challenges(publication: Publication, upto: datetime | None) -> list[dict[str, Any]]:
    rows = Challenge.objects.filter(publication=publication).exclude(Challenge.states.q("open"))
    if upto is not None:
        rows = rows.filter(resolved_at__lte=upto)
    return [
        {
            "status": c.status,
            "reason": c.reason,
            "resolution": c.resolution,
            "raised_at": _iso(c.created_at),
            "resolved_at": _iso(c.resolved_at),
        }
        for c in rows.order_by("created_at", "pk")
    ]


def _annotations(publication: Publication, upto: datetime | None) -> list[dict[str, Any]]:
    rows = Annotation.objects.filter(publication=publication)
    if upto is not None:
        rows = rows.filter(created_at__lte=upto)
    return [{"id": a.pk, "text": a.text, "at": _iso(a.created_at)} for a in rows.order_by("created_at", "pk")]


def _revision_payload(revision: PublicationRevision) -> tuple[dict[str, bytes], dict[str, Fetched]]:
    publication = revision.publication
    revisions = _revisions_upto(revision)
    points = (revision.curve or {}).get("points") or []
    record = {
        "kind": EvidencePack.Kind.REVISION,
        "public_id": publication.public_id,
        "url": _site(f"/results/{publication.public_id}/?revision={revision.number}"),
        "revision": revision.number,
        "published_at": _iso(revision.published_at),
        "benchmark": publication.submission.benchmark.model_id,
        "stack": revision.stack,
        "changes": revision.changes,
        "replaced": revision.replaced,
        "headline": revision.headline,
        "curve": revision.curve,
        "snapshot": revision.snapshot,  # whatever the frozen record holds flows in as it is
    }
    payload = {layout.RECORD: layout.json_file(record)}
    metrics, reports, raw_groups = [], [], []
    fetched: dict[str, Fetched] = {}
    used = sorted({int(p.get("revision") or 1) for p in points} | {revision.number})
    for number in used:
        row = revisions.get(number)
        if row is None:
            continue
        keys = [p.get("point") for p in points if int(p.get("revision") or 1) == number]
        for metric in PointMetric.objects.filter(check_run_id=row.check_run_id, key__in=keys).order_by("key"):
            entry = {
                "point": metric.key,
                "revision": number,
                "concurrency": metric.concurrency,
                "source": metric.source,
                "claimed": metric.claimed,
                "recomputed": metric.recomputed,
                "extra": metric.extra,
                "raw_log_sha256": metric.raw_log_sha256,
                "tracked_sequence_sha256": metric.tracked_sequence_sha256,
                "samples_sha256": metric.samples_sha256 or None,
                "samples_file": None,
            }
            if metric.samples_key:
                name = f"{layout.SAMPLES_DIR}r{number}-c{metric.concurrency}.npz"
                payload[name] = _read_stored(metric.samples_key)
                entry["samples_file"] = name
            metrics.append(entry)
        if row.check_run is not None:
            run = row.check_run
            reports.append(
                {
                    "revision": number,
                    "ruleset": run.ruleset,
                    "checker_version": run.checker_version,
                    "status": run.status,
                    "counts": run.counts,
                    "report": run.report,
                }
            )
        files = []
        for version_file in row.version.files.order_by("position"):
            path = f"{layout.RAW_DIR}r{number}/{version_file.position}-{_safe_name(version_file.original_filename)}"
            url = _site(f"/results/{publication.public_id}/files/{version_file.position}/?revision={number}")
            fetched[path] = Fetched(url, version_file.size_bytes, version_file.sha256)
            files.append(
                {
                    "path": path,
                    "name": version_file.original_filename,
                    "sha256": version_file.sha256,
                    "size_bytes": version_file.size_bytes,
                    "url": url,
                }
            )
        raw_groups.append(
            {
                "revision": number,
                "version": row.version.number,
                "bundle_sha256": row.version.sha256,
                "files": files,
            }
        )
    payload[layout.METRICS] = layout.json_file({"points": metrics})
    payload[layout.CHECKER_REPORT] = layout.json_file({"check_runs": reports})
    payload[layout.RAW_LOGS] = layout.json_file({"revisions": raw_groups})
    payload[layout.TRAIL] = layout.json_file({"events": _trail(publication, revisions)})
    payload[layout.WAIVERS] = layout.json_file(
        {"waivers": ((revision.snapshot or {}).get("provenance") or {}).get("waivers") or []}
    )
    payload[layout.CHALLENGES] = layout.json_file(
        {"challenges": _challenges(publication, revision.published_at)}
    )
    payload[layout.ANNOTATIONS] = layout.json_file(
        {"annotations": _annotations(publication, revision.published_at)}
    )
    return payload, fetched


def _safe_name(name: str) -> str:
    return (
        "".join(ch if (ch.isascii() and ch.isalnum()) or ch in "._-" else "_" for ch in name)[:120] or "file"
    )


def _build(
    *, publication: Publication, kind: str, name: str, payload, fetched, subject: dict, **link
) -> EvidencePack:
    key = signing_key()
    info = {
        "Source-Organization": "Endpoints Portal",
        "External-Identifier": f"{publication.public_id} {name}",
        "External-Description": f"Evidence pack of {publication.public_id}: {kind} ({subject.get('url')})",
        "Bagging-Date": (publication.published_at or publication.created_at).date().isoformat(),
    }
    predicate = {"portal": settings.PORTAL_SITE_URL.rstrip("/"), "log": settings.PORTAL_LOG_ORIGIN, **subject}
    files, envelope = layout.pack_statement(
        payload=payload, info=info, predicate=predicate, signer=key, fetched=fetched
    )
    leaf, proof = log_append(envelope, publication.public_id)
    data = layout.pack_seal(name=name, files=files, envelope=envelope, tlog_proof=proof, keys=public_keys())
    digest = sha256_hex(data)
    storage_key = storage_save_exact(f"evidence/sha256/{digest[:2]}/{digest}.zip", io.BytesIO(data))
    return EvidencePack.objects.create(
        publication=publication,
        kind=kind,
        leaf=leaf,
        original_filename=f"{name}.zip",
        storage_key=storage_key,
        size_bytes=len(data),
        sha256=digest,
        **link,
    )


def evidence_pack_build_revision(*, revision: PublicationRevision) -> EvidencePack:
    """The pack of a revision just published (the caller's transaction)."""
    publication = revision.publication
    payload, fetched = _revision_payload(revision)
    name = f"{publication.public_id}-r{revision.number}-evidence"
    subject = {
        "kind": EvidencePack.Kind.REVISION,
        "public_id": publication.public_id,
        "revision": revision.number,
        "published_at": _iso(revision.published_at),
        "url": _site(f"/results/{publication.public_id}/?revision={revision.number}"),
    }
    return _build(
        publication=publication,
        kind=EvidencePack.Kind.REVISION,
        name=name,
        payload=payload,
        fetched=fetched,
        subject=subject,
        revision=revision,
    )


def evidence_pack_build_annotation(*, annotation: Annotation, retraction: bool = False) -> EvidencePack:
    """The pack of a public annotation, or of a retraction (its annotation says why), citing the revision pack
    it is about by SHA-256 and log index."""
    publication = annotation.publication
    kind = EvidencePack.Kind.RETRACTION if retraction else EvidencePack.Kind.ANNOTATION
    about = (
        EvidencePack.objects.filter(publication=publication, kind=EvidencePack.Kind.REVISION)
        .order_by("-leaf__index")
        .first()
    )
    subject = {
        "kind": kind,
        "public_id": publication.public_id,
        "annotation": annotation.pk,
        "at": _iso(annotation.created_at),
        "url": _site(f"/results/{publication.public_id}/"),
    }
    record = {
        **subject,
        "text": annotation.text,
        "retracted_at": _iso(publication.retracted_at) if retraction else None,
        "retraction_reason": publication.retraction_reason if retraction else None,
        "challenge": (
            {"reason": annotation.challenge.reason, "raised_at": _iso(annotation.challenge.created_at)}
            if annotation.challenge_id
            else None
        ),
        "about": (
            {"revision": about.revision.number, "pack_sha256": about.sha256, "log_index": about.leaf.index}
            if about is not None and about.revision_id
            else None
        ),
    }
    payload = {
        layout.RECORD: layout.json_file(record),
        layout.CHALLENGES: layout.json_file({"challenges": _challenges(publication, None)}),
        layout.ANNOTATIONS: layout.json_file({"annotations": _annotations(publication, None)}),
    }
    name = f"{publication.public_id}-{kind}-{annotation.pk}-evidence"
    return _build(
        publication=publication,
        kind=kind,
        name=name,
        payload=payload,
        fetched={},
        subject=subject,
        annotation=annotation,
    )
