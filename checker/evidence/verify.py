"""`portal verify PACK`: everything a third party checks of an evidence pack, offline and without Django. Each
check is a line of the report that says what held or what failed; the pack verifies only when every check holds."""

from __future__ import annotations

import hashlib
import json
import tempfile
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from checker.evidence import merkle
from checker.evidence.bag import FETCH, MANIFEST, TAG_MANIFEST, Bag, BagError, bag_read, sha256_hex
from checker.evidence.dsse import EnvelopeError, envelope_open
from checker.evidence.note import NoteError, TlogProof, VerifierKey, checkpoint_open, parse_key_list
from checker.evidence.pack import ENVELOPE, KEYS, RAW_LOGS, RECORD, TLOG_PROOF
from checker.recompute.curve import CURVE_METRICS, official_metrics
from checker.report import Report

MAX_FETCH_BYTES = 8 * 1024**3
# The checker's whole pipeline over some raw archives (`portal check`'s, checker.cli.local_check.check)
Recompute = Callable[[list[Path]], Report]


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


@dataclass
class VerifyReport:
    """The checks of one pack, in order, and warnings that do not fail it."""

    pack: str
    checks: list[Check] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(check.ok for check in self.checks)

    def add(self, name: str, ok: bool, detail: str) -> bool:
        self.checks.append(Check(name, ok, detail))
        return ok

    def failed(self) -> list[Check]:
        return [check for check in self.checks if not check.ok]

    def text(self) -> str:
        lines = [f"Evidence pack {self.pack}"]
        lines += [f"  {'ok  ' if c.ok else 'FAIL'}  {c.name}: {c.detail}" for c in self.checks]
        lines += [f"  warning: {w}" for w in self.warnings]
        if self.ok:
            lines.append("VERIFIED: every check holds.")
        else:
            lines.append(
                f"NOT VERIFIED: {len(self.failed())} check(s) failed: {', '.join(c.name for c in self.failed())}."
            )
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict[str, Any]:
        return {
            "pack": self.pack,
            "verified": self.ok,
            "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in self.checks],
            "warnings": self.warnings,
        }


def _fetch(url: str, size: int) -> bytes:
    if not url.startswith(("https://", "http://")):
        raise OSError(f"{url} is not an http(s) address")
    with urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310 (scheme checked above)
        data = response.read(min(size, MAX_FETCH_BYTES) + 1)
    if len(data) != size:
        raise OSError(f"{url} sent {len(data)} bytes, fetch.txt says {size}")
    return data


def verify_pack(
    path: Path,
    *,
    keys: list[VerifierKey] | None = None,
    with_raw_logs: bool = False,
    recompute: Recompute | None = None,
    older_checkpoint: str | None = None,
    consistency_proof: list[bytes] | None = None,
    fetch: Callable[[str, int], bytes] = _fetch,
) -> VerifyReport:
    """Check a pack: its bag, the signature of its statement, that the statement names every payload file with
    its hash, the inclusion of the envelope in the log's checkpoint, optionally that checkpoint's consistency with
    an older one, and with raw logs (fetched as fetch.txt lists them) every point recomputed by `recompute`."""
    report = VerifyReport(pack=str(path))
    try:
        bag = bag_read(path)
    except (BagError, OSError) as exc:
        report.add("bag", False, str(exc))
        return report
    _check_bag(bag, report, with_raw_logs=with_raw_logs, fetch=fetch)
    trusted = _trusted_keys(bag, keys, report)
    if trusted is None:
        return report
    claim = _check_statement(bag, trusted, report)
    checkpoint = _check_inclusion(bag, trusted, report)
    if older_checkpoint is not None and checkpoint is not None:
        _check_consistency(older_checkpoint, consistency_proof or [], checkpoint, trusted, report)
    if with_raw_logs and recompute is not None and claim is not None and report.ok:
        _check_recompute(bag, report, recompute)
    return report


def _check_bag(bag: Bag, report: VerifyReport, *, with_raw_logs: bool, fetch) -> None:
    version = bag.files.get("bagit.txt", b"").decode("utf-8", "replace")
    report.add(
        "bagit.txt",
        version.startswith("BagIt-Version: 1.0"),
        version.splitlines()[0] if version else "missing",
    )
    bad = []
    for name, digest in sorted(bag.manifest.items()):
        data = bag.files.get(name)
        if data is None and name in bag.fetch:
            if not with_raw_logs:
                continue
            item = bag.fetch[name]
            try:
                data = fetch(item.url, item.size)
            except OSError as exc:
                bad.append(f"{name} could not be fetched ({exc})")
                continue
            bag.files[name] = data
        if data is None:
            bad.append(f"{name} is missing")
        elif sha256_hex(data) != digest:
            bad.append(f"{name} does not match its SHA-256 in {MANIFEST} (the file was changed)")
    unlisted = [name for name in bag.files if name.startswith("data/") and name not in bag.manifest]
    unlisted += [f"{name} (in {FETCH})" for name, item in bag.fetch.items() if not item.sha256]
    bad += [f"{name} is in the pack but not in {MANIFEST}" for name in sorted(unlisted)]
    held = sum(1 for name in bag.manifest if name in bag.files)
    detail = "; ".join(bad) if bad else f"{held} payload file(s) match their SHA-256"
    if not bad and len(bag.fetch) and not with_raw_logs:
        detail += f"; {len(bag.fetch)} raw archive(s) listed in {FETCH}, not fetched (use --with-raw-logs)"
    report.add("payload manifest", not bad, detail)
    tag_bad = []
    for name, digest in sorted(bag.tag_manifest.items()):
        data = bag.files.get(name)
        if data is None:
            tag_bad.append(f"{name} is missing")
        elif sha256_hex(data) != digest:
            tag_bad.append(f"{name} does not match its SHA-256 in {TAG_MANIFEST} (the file was changed)")
    tags = [
        n for n in bag.files if not n.startswith("data/") and n != TAG_MANIFEST and n not in bag.tag_manifest
    ]
    tag_bad += [f"{name} is in the pack but not in {TAG_MANIFEST}" for name in sorted(tags)]
    report.add(
        "tag manifest", not tag_bad, "; ".join(tag_bad) or f"{len(bag.tag_manifest)} tag file(s) match"
    )


def _trusted_keys(bag: Bag, keys: list[VerifierKey] | None, report: VerifyReport) -> list[VerifierKey] | None:
    if keys:
        report.add("key", True, "pinned: " + ", ".join(key.keyid for key in keys))
        return keys
    try:
        listed = parse_key_list(bag.files.get(KEYS, b"").decode("utf-8", "replace"))
    except NoteError as exc:
        report.add("key", False, f"{KEYS}: {exc}")
        return None
    if not listed:
        report.add("key", False, f"no key given with --key and none in {KEYS}")
        return None
    report.warnings.append(
        f"the portal's key was taken from the pack itself ({', '.join(k.keyid for k in listed)}): anyone who "
        "rewrites a pack can replace it; pin the key published by the portal with --key"
    )
    report.add("key", True, "from the pack: " + ", ".join(key.keyid for key in listed))
    return listed


def _check_statement(bag: Bag, keys: list[VerifierKey], report: VerifyReport) -> dict[str, Any] | None:
    envelope = bag.files.get(ENVELOPE)
    if envelope is None:
        report.add("signature", False, f"{ENVELOPE} is missing")
        return None
    try:
        claim, key = envelope_open(envelope, keys)
    except EnvelopeError as exc:
        report.add("signature", False, str(exc))
        return None
    report.add("signature", True, f"the in-toto statement is signed by {key.keyid} (DSSE, Ed25519)")
    subjects: dict[str, str] = {}
    for subject in claim.get("subject") or []:
        if isinstance(subject, dict) and isinstance(subject.get("digest"), dict):
            subjects[str(subject.get("name"))] = str(subject["digest"].get("sha256"))
    differ = sorted(
        name for name in set(subjects) | set(bag.manifest) if subjects.get(name) != bag.manifest.get(name)
    )
    if differ:
        shown = ", ".join(differ[:5]) + (f" and {len(differ) - 5} more" if len(differ) > 5 else "")
        report.add(
            "statement",
            False,
            f"the signed statement and {MANIFEST} disagree on {shown}: a figure or file was changed after signing",
        )
        return None
    report.add(
        "statement",
        True,
        f"the signed statement names all {len(subjects)} payload file(s) with their SHA-256",
    )
    return claim


def _check_inclusion(bag: Bag, keys: list[VerifierKey], report: VerifyReport):
    envelope, text = bag.files.get(ENVELOPE), bag.files.get(TLOG_PROOF)
    if envelope is None or text is None:
        report.add("log inclusion", False, f"{TLOG_PROOF} is missing")
        return None
    try:
        proof = TlogProof.parse(text.decode("utf-8"))
        checkpoint = checkpoint_open(proof.checkpoint, keys)
        merkle.verify_inclusion(
            proof.index, checkpoint.size, merkle.leaf_hash(envelope), proof.proof, checkpoint.root
        )
    except (NoteError, merkle.ProofError, UnicodeDecodeError) as exc:
        report.add("log inclusion", False, f"{exc}")
        return None
    report.add(
        "log inclusion",
        True,
        f"the envelope is leaf {proof.index} of {checkpoint.origin} at size {checkpoint.size} "
        f"(root {checkpoint.root.hex()[:16]}...)",
    )
    return checkpoint


def _check_consistency(older: str, proof: list[bytes], newer, keys, report: VerifyReport) -> None:
    try:
        old = checkpoint_open(older, keys, origin=newer.origin)
        merkle.verify_consistency(old.size, newer.size, old.root, newer.root, proof)
    except (NoteError, merkle.ProofError) as exc:
        report.add("log consistency", False, str(exc))
        return
    report.add(
        "log consistency", True, f"the log at size {newer.size} extends the checkpoint of size {old.size}"
    )


def _check_recompute(bag: Bag, report: VerifyReport, recompute: Recompute) -> None:
    try:
        record = json.loads(bag.files[RECORD])
        raw_logs = json.loads(bag.files[RAW_LOGS])
    except (KeyError, ValueError) as exc:
        report.add("recompute", False, f"{RECORD} or {RAW_LOGS} cannot be read: {exc}")
        return
    published = {p.get("point"): p for p in (record.get("curve") or {}).get("points") or []}
    compared, differ, missing = 0, [], []
    with tempfile.TemporaryDirectory(prefix="portal-verify-") as tmp:
        for group in raw_logs.get("revisions") or []:
            paths = []
            for item in group.get("files") or []:
                data = bag.files.get(item.get("path"))
                if data is None:
                    missing.append(item.get("path"))
                    continue
                target = Path(tmp) / f"r{group.get('revision')}" / hashlib.sha256(data).hexdigest()[:16]
                target.mkdir(parents=True, exist_ok=True)
                (target / Path(str(item.get("name"))).name).write_bytes(data)
                paths.append(target / Path(str(item.get("name"))).name)
            if not paths:
                continue
            recomputed = {
                point.key: point for point in recompute(paths).points if isinstance(point.recomputed, dict)
            }
            for key, point in published.items():
                if (point.get("revision") or 1) != group.get("revision") or point.get(
                    "basis"
                ) != "recomputed":
                    continue
                again = recomputed.get(key)
                if again is None:
                    missing.append(f"{key} (no raw log recomputed)")
                    continue
                compared += 1
                metrics, _ = official_metrics(again.claimed, again.recomputed)
                metrics["concurrency"] = again.concurrency
                for metric in CURVE_METRICS:
                    want, got = point.get(metric), metrics.get(metric)
                    if want is None and got is None:
                        continue
                    if (
                        want is None
                        or got is None
                        or abs(float(want) - float(got)) > 1e-9 * max(1.0, abs(float(want)))
                    ):
                        differ.append(f"{key} {metric}: published {want}, recomputed {got}")
    recomputable = [p for p in published.values() if p.get("basis") == "recomputed"]
    problems = differ + [f"{m} missing" for m in missing]
    if compared < len(recomputable) and not missing:
        problems.append(
            f"only {compared} of {len(recomputable)} recomputed points were found in the raw logs"
        )
    report.add(
        "recompute",
        not problems,
        "; ".join(problems[:10]) or f"all {compared} recomputed point(s) match the published figures",
    )
