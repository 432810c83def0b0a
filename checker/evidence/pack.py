"""What an evidence pack holds and how its parts are sealed together (docs/evidence.md). The portal builds packs
(leaderboard.publishing.evidence) and `portal verify` reads them (checker.evidence.verify) with these names and steps."""

from __future__ import annotations

import math
from typing import Any

from checker.evidence.bag import Fetched, bag_build, bag_finish, bag_zip
from checker.evidence.dsse import canonical_json, envelope_sign, statement
from checker.evidence.note import SignerKey, VerifierKey

RECORD = "data/record.json"  # the frozen publication snapshot, its curve and headline (RFC 8785)
METRICS = "data/metrics.json"  # per point: claimed and recomputed metrics, raw-log and sample hashes
CHECKER_REPORT = "data/checker-report.json"
RAW_LOGS = "data/raw-logs.json"  # the archives holding the raw logs, per revision, with SHA-256
TRAIL = "data/trail.json"  # the public review and audit trail: organisations, roles, actions, times
WAIVERS = "data/waivers.json"
CHALLENGES = "data/challenges.json"
ANNOTATIONS = "data/annotations.json"
SAMPLES_DIR = "data/samples/"  # per point: the per-request arrays goodput is computed from (.npz)
RAW_DIR = "data/raw/"  # the raw archives (held, or listed in fetch.txt)
ENVELOPE = "evidence/statement.dsse.json"
TLOG_PROOF = "evidence/statement.tlog-proof"
KEYS = "evidence/keys.txt"


SAFE_INTEGER = 2**53 - 1


def i_json(value: Any) -> Any:
    """The value as I-JSON (RFC 7493 section 2.2), which RFC 8785 requires: an integer beyond +-(2**53 - 1) (a sum
    of nanoseconds, say) and a non-finite float are written as decimal strings, never rounded."""
    if isinstance(value, dict):
        return {str(key): i_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [i_json(item) for item in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int) and abs(value) > SAFE_INTEGER:
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def json_file(value: Any) -> bytes:
    """A pack's JSON file: RFC 8785 canonical bytes of its I-JSON form."""
    return canonical_json(i_json(value))


def pack_statement(
    *,
    payload: dict[str, bytes],
    info: dict[str, str],
    predicate: dict[str, Any],
    signer: SignerKey,
    fetched: dict[str, Fetched] | None = None,
) -> tuple[dict[str, bytes], bytes]:
    """The bag's files so far and the signed envelope of the in-toto Statement over its payload manifest: the
    envelope's exact bytes are what the log appends."""
    files, manifest = bag_build(payload=payload, info=info, fetched=fetched)
    envelope = envelope_sign(canonical_json(statement(manifest, predicate)), signer)
    return files, envelope


def pack_seal(
    *, name: str, files: dict[str, bytes], envelope: bytes, tlog_proof: str, keys: list[VerifierKey]
) -> bytes:
    """The pack's zip: the bag with the envelope, its proof of inclusion in the log and the portal's public keys
    as tag files, and the tag manifest over them."""
    sealed = {
        **files,
        ENVELOPE: envelope,
        TLOG_PROOF: tlog_proof.encode(),
        KEYS: "".join(f"{key}\n" for key in keys).encode(),
    }
    return bag_zip(name, bag_finish(sealed))
