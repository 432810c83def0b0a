"""C2SP signed notes with Ed25519 (c2sp.org/signed-note), the log's checkpoints (c2sp.org/tlog-checkpoint) and
proofs of inclusion (c2sp.org/tlog-proof@v1). Keys are written as the Go sumdb note package writes them:
a verifier key `<name>+<key id, 8 hex>+<base64(0x01 || public key)>` and a signer key `PRIVATE+KEY+<name>+<key id>+
<base64(0x01 || seed)>`; the key id is SHA-256(name || 0x0A || 0x01 || public key)[:4]."""

from __future__ import annotations

import base64
import binascii
import hashlib
import struct
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

ED25519 = b"\x01"
TLOG_PROOF_HEADER = "c2sp.org/tlog-proof@v1"
MAX_SIGNATURES = 16


class NoteError(ValueError):
    """A key, note, checkpoint or proof that cannot be read or does not verify."""


def _b64decode(text: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise NoteError(f"{text[:40]!r} is not base64.") from exc


def _valid_name(name: str) -> bool:
    return bool(name) and not any(c.isspace() or c == "+" for c in name)


def key_id(name: str, public_key: bytes) -> int:
    return struct.unpack(">I", hashlib.sha256(name.encode() + b"\n" + ED25519 + public_key).digest()[:4])[0]


@dataclass(frozen=True)
class VerifierKey:
    """A public key that checks notes and envelopes signed under its name and id."""

    name: str
    id: int
    public_key: bytes

    @classmethod
    def parse(cls, text: str) -> VerifierKey:
        parts = text.strip().split("+", 2)  # the base64 may hold '+'
        if len(parts) != 3 or not _valid_name(parts[0]) or len(parts[1]) != 8:
            raise NoteError(f"{text.strip()[:80]!r} is not a verifier key (name+keyid+base64).")
        try:
            identifier = int(parts[1], 16)
        except ValueError as exc:
            raise NoteError(f"The key id {parts[1]!r} is not hexadecimal.") from exc
        raw = _b64decode(parts[2])
        if len(raw) != 33 or raw[:1] != ED25519:
            raise NoteError("Only Ed25519 verifier keys (type 0x01, 32 bytes) are accepted.")
        if key_id(parts[0], raw[1:]) != identifier:
            raise NoteError(f"The key id of {parts[0]} does not match its public key.")
        return cls(parts[0], identifier, raw[1:])

    @property
    def keyid(self) -> str:
        """The key's name and id, as envelopes and key lists name it."""
        return f"{self.name}+{self.id:08x}"

    def __str__(self) -> str:
        return f"{self.keyid}+{base64.b64encode(ED25519 + self.public_key).decode()}"

    def verify(self, signature: bytes, message: bytes) -> bool:
        try:
            Ed25519PublicKey.from_public_bytes(self.public_key).verify(signature, message)
        except InvalidSignature:
            return False
        return True


@dataclass(frozen=True)
class SignerKey:
    """A private key that signs under its name and id."""

    name: str
    seed: bytes

    @classmethod
    def generate(cls, name: str) -> SignerKey:
        if not _valid_name(name):
            raise NoteError(f"A key name has no spaces and no '+': {name!r}.")
        private = Ed25519PrivateKey.generate()
        return cls(name, private.private_bytes_raw())

    @classmethod
    def parse(cls, text: str) -> SignerKey:
        parts = text.strip().split("+", 4)
        if len(parts) != 5 or parts[:2] != ["PRIVATE", "KEY"] or not _valid_name(parts[2]):
            raise NoteError("The signing key is not a PRIVATE+KEY+name+keyid+base64 line.")
        raw = _b64decode(parts[4])
        if len(raw) != 33 or raw[:1] != ED25519:
            raise NoteError("The signing key is not an Ed25519 key (type 0x01, 32 bytes).")
        key = cls(parts[2], raw[1:])
        if f"{key.verifier.id:08x}" != parts[3].lower():
            raise NoteError("The signing key's id does not match its key.")
        return key

    def __str__(self) -> str:
        return f"PRIVATE+KEY+{self.verifier.keyid}+{base64.b64encode(ED25519 + self.seed).decode()}"

    @property
    def verifier(self) -> VerifierKey:
        private = Ed25519PrivateKey.from_private_bytes(self.seed)
        public = private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        return VerifierKey(self.name, key_id(self.name, public), public)

    def sign(self, message: bytes) -> bytes:
        return Ed25519PrivateKey.from_private_bytes(self.seed).sign(message)


def parse_key_list(text: str) -> list[VerifierKey]:
    """Verifier keys, one a line; blank lines and lines starting with # are skipped."""
    return [
        VerifierKey.parse(line) for line in text.splitlines() if line.strip() and not line.startswith("#")
    ]


def note_sign(text: str, key: SignerKey) -> str:
    """The signed note of `text` (which ends in a newline)."""
    if not text.endswith("\n"):
        raise NoteError("A note's text ends in a newline.")
    signature = struct.pack(">I", key.verifier.id) + key.sign(text.encode())
    return f"{text}\n\u2014 {key.name} {base64.b64encode(signature).decode()}\n"


def note_open(note: str, keys: list[VerifierKey]) -> tuple[str, list[VerifierKey]]:
    """The text of a signed note and the known keys whose signatures verify. NoteError when a known key's
    signature fails, or when no known key signed it."""
    if any(ord(c) < 0x20 and c != "\n" for c in note):
        raise NoteError("A signed note holds no control characters but newlines.")
    split = note.rfind("\n\n")
    if split < 0 or not note.endswith("\n"):
        raise NoteError("Not a signed note: no blank line before the signatures.")
    text, lines = note[: split + 1], note[split + 2 :].splitlines()
    if not lines or len(lines) > MAX_SIGNATURES:
        raise NoteError(f"A signed note carries 1 to {MAX_SIGNATURES} signatures.")
    known = {(key.name, key.id): key for key in keys}
    verified = []
    for line in lines:
        prefix, _, rest = line.partition(" ")
        name, _, blob = rest.partition(" ")
        if prefix != "\u2014" or not _valid_name(name) or not blob:
            raise NoteError(f"Not a signature line: {line[:80]!r}.")
        raw = _b64decode(blob)
        if len(raw) < 5:
            raise NoteError(f"The signature of {name} is too short.")
        key = known.get((name, struct.unpack(">I", raw[:4])[0]))
        if key is None:
            continue  # an unknown key's signature (a witness, say) is ignored, as the spec says
        if not key.verify(raw[4:], text.encode()):
            raise NoteError(f"The signature of {key.keyid} does not verify: the note was changed or forged.")
        verified.append(key)
    if not verified:
        names = ", ".join(key.keyid for key in keys) or "none"
        raise NoteError(f"No signature by a trusted key (trusted: {names}).")
    return text, verified


@dataclass(frozen=True)
class Checkpoint:
    """A tree head of the log: its origin, size and root hash (c2sp.org/tlog-checkpoint)."""

    origin: str
    size: int
    root: bytes

    def text(self) -> str:
        return f"{self.origin}\n{self.size}\n{base64.b64encode(self.root).decode()}\n"

    @classmethod
    def parse(cls, text: str) -> Checkpoint:
        lines = text.split("\n")
        if len(lines) < 4 or not lines[0]:
            raise NoteError("A checkpoint's text is origin, size and root hash, one a line.")
        size = lines[1]
        if not (size.isascii() and size.isdigit()) or (size.startswith("0") and size != "0"):
            raise NoteError(f"The checkpoint's tree size {size!r} is not a decimal number.")
        root = _b64decode(lines[2])
        if len(root) != 32:
            raise NoteError("The checkpoint's root hash is not 32 bytes.")
        return cls(lines[0], int(size), root)


def checkpoint_open(note: str, keys: list[VerifierKey], origin: str | None = None) -> Checkpoint:
    """A signed checkpoint, verified by one of `keys` (and of the expected origin, when given)."""
    text, _ = note_open(note, keys)
    checkpoint = Checkpoint.parse(text)
    if origin is not None and checkpoint.origin != origin:
        raise NoteError(f"The checkpoint is of log {checkpoint.origin!r}, not {origin!r}.")
    return checkpoint


@dataclass(frozen=True)
class TlogProof:
    """A c2sp.org/tlog-proof@v1 file: the entry's index, its inclusion proof and the signed checkpoint."""

    index: int
    proof: list[bytes]
    checkpoint: str
    extra: bytes | None = None

    def text(self) -> str:
        lines = [TLOG_PROOF_HEADER]
        if self.extra is not None:
            lines.append(f"extra {base64.b64encode(self.extra).decode()}")
        lines.append(f"index {self.index}")
        lines += [base64.b64encode(h).decode() for h in self.proof]
        return "\n".join(lines) + "\n\n" + self.checkpoint

    @classmethod
    def parse(cls, text: str) -> TlogProof:
        head, sep, checkpoint = text.partition("\n\n")
        lines = head.split("\n")
        if not sep or lines[0] != TLOG_PROOF_HEADER:
            raise NoteError(f"Not a tlog proof: the first line is not {TLOG_PROOF_HEADER}.")
        lines = lines[1:]
        extra = None
        if lines and lines[0].startswith("extra "):
            extra = _b64decode(lines.pop(0)[len("extra ") :])
        if not lines or not lines[0].startswith("index "):
            raise NoteError("The tlog proof names no index.")
        index = lines.pop(0)[len("index ") :]
        if not (index.isascii() and index.isdigit()) or (index.startswith("0") and index != "0"):
            raise NoteError(f"The tlog proof's index {index!r} is not a decimal number.")
        proof = [_b64decode(line) for line in lines]
        return cls(int(index), proof, checkpoint, extra)
