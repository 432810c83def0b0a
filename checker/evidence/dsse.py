"""The portal's signed claim about a pack: an in-toto Statement v1 (github.com/in-toto/attestation, spec/v1) naming
every payload file by SHA-256, in a DSSE envelope (github.com/secure-systems-lab/dsse, protocol v1) signed with
Ed25519; the signature's keyid is the signed-note key's name and id (checker.evidence.note)."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

import rfc8785

from checker.evidence.note import SignerKey, VerifierKey

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
PREDICATE_TYPE = "urn:endpoints-portal:evidence-pack:v1"


class EnvelopeError(ValueError):
    """An envelope that cannot be read or whose signature does not hold."""


def canonical_json(value: Any) -> bytes:
    """RFC 8785 (JSON Canonicalization Scheme) bytes of a value."""
    return rfc8785.dumps(value)


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE's pre-authentication encoding: what is signed."""
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def statement(subjects: dict[str, str], predicate: dict[str, Any]) -> dict[str, Any]:
    """An in-toto Statement v1 over files {name: sha256 hex}."""
    return {
        "_type": STATEMENT_TYPE,
        "subject": [
            {"name": name, "digest": {"sha256": digest}} for name, digest in sorted(subjects.items())
        ],
        "predicateType": PREDICATE_TYPE,
        "predicate": predicate,
    }


def envelope_sign(payload: bytes, key: SignerKey, payload_type: str = PAYLOAD_TYPE) -> bytes:
    """The DSSE envelope's bytes (canonical JSON), signed by `key`."""
    signature = key.sign(pae(payload_type, payload))
    return canonical_json(
        {
            "payload": base64.b64encode(payload).decode(),
            "payloadType": payload_type,
            "signatures": [{"keyid": key.verifier.keyid, "sig": base64.b64encode(signature).decode()}],
        }
    )


def envelope_open(envelope: bytes, keys: list[VerifierKey]) -> tuple[dict[str, Any], VerifierKey]:
    """The Statement an envelope carries and the trusted key that signed it; EnvelopeError otherwise."""
    try:
        body = json.loads(envelope)
        payload = base64.b64decode(body["payload"], validate=True)
        payload_type = body["payloadType"]
        signatures = body["signatures"]
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise EnvelopeError(f"The envelope is not a DSSE envelope: {exc}.") from exc
    if payload_type != PAYLOAD_TYPE:
        raise EnvelopeError(f"The envelope carries {payload_type!r}, not an in-toto statement.")
    signed = pae(payload_type, payload)
    known = {key.keyid: key for key in keys}
    for signature in signatures if isinstance(signatures, list) else []:
        key = known.get(str(signature.get("keyid"))) if isinstance(signature, dict) else None
        if key is None:
            continue
        try:
            raw = base64.b64decode(signature.get("sig", ""), validate=True)
        except (binascii.Error, TypeError) as exc:
            raise EnvelopeError(f"The signature of {key.keyid} is not base64.") from exc
        if not key.verify(raw, signed):
            raise EnvelopeError(
                f"The signature of {key.keyid} does not verify: the statement was changed or the signature swapped."
            )
        try:
            claim = json.loads(payload)
        except ValueError as exc:
            raise EnvelopeError("The signed statement is not JSON.") from exc
        if not isinstance(claim, dict) or claim.get("_type") != STATEMENT_TYPE:
            raise EnvelopeError("The signed payload is not an in-toto Statement v1.")
        return claim, key
    names = ", ".join(known) or "none"
    found = (
        ", ".join(str(s.get("keyid")) for s in signatures if isinstance(s, dict))
        if isinstance(signatures, list)
        else ""
    )
    raise EnvelopeError(f"No signature by a trusted key (signed by: {found or 'nobody'}; trusted: {names}).")
