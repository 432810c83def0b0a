"""Public downloads of evidence packs and the public transparency log (docs/evidence.md). Everything here is
public and cacheable: a pack, a leaf, a proof between fixed sizes and a checkpoint of a given size never change;
only the latest checkpoint moves."""

from __future__ import annotations

import base64

from django.http import HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404
from django.utils.cache import patch_cache_control
from django.views.decorators.http import require_GET

from checker.evidence import merkle
from leaderboard.board import selectors
from leaderboard.models import EvidencePack, LogCheckpoint, LogLeaf
from leaderboard.publishing.evidence import checkpoint_empty, leaf_hashes, public_keys
from portal.downloads import stored_download
from submissions.storage import storage_iter_chunks

IMMUTABLE = {"public": True, "max_age": 31536000, "immutable": True}


def _pack_response(pack: EvidencePack):
    response = stored_download(storage_iter_chunks(pack.storage_key), pack)
    response["Content-Type"] = "application/zip"
    patch_cache_control(response, **IMMUTABLE)
    return response


@require_GET
def evidence_pack_revision(request, public_id: str, number: int):
    """The evidence pack of one published revision of a result."""
    publication = selectors.publication_public(public_id)
    pack = get_object_or_404(
        EvidencePack.objects.visible_to(None), publication=publication, revision__number=number
    )
    return _pack_response(pack)


@require_GET
def evidence_pack_annotation(request, public_id: str, annotation_id: int):
    """The evidence pack of one public annotation or retraction of a result."""
    publication = selectors.publication_public(public_id)
    pack = get_object_or_404(
        EvidencePack.objects.visible_to(None), publication=publication, annotation_id=annotation_id
    )
    return _pack_response(pack)


def _text(body: str, *, cache: dict) -> HttpResponse:
    response = HttpResponse(body, content_type="text/plain; charset=utf-8")
    patch_cache_control(response, **cache)
    return response


def _size(request, name: str) -> int:
    value = request.GET.get(name, "")
    if not (value.isascii() and value.isdigit()) or len(value) > 15:
        raise ValueError(f"'{name}' must be a whole number.")
    return int(value)


@require_GET
def log_checkpoint(request):
    """The latest signed checkpoint (c2sp.org/tlog-checkpoint)."""
    checkpoint = LogCheckpoint.objects.order_by("-size").first()
    note = checkpoint.note if checkpoint is not None else checkpoint_empty()
    return _text(note, cache={"public": True, "max_age": 60})


@require_GET
def log_checkpoint_at(request, size: int):
    """The checkpoint the log signed when it reached `size` (for mirrors that check it only grew)."""
    if size == 0:
        return _text(checkpoint_empty(), cache=IMMUTABLE)
    checkpoint = get_object_or_404(LogCheckpoint, size=size)
    return _text(checkpoint.note, cache=IMMUTABLE)


@require_GET
def log_keys(request):
    """The log's public keys (signed-note verifier keys), current first; pin one with `portal verify --key`."""
    return _text("".join(f"{key}\n" for key in public_keys()), cache={"public": True, "max_age": 3600})


@require_GET
def log_leaf(request, index: int):
    """A leaf's exact bytes: the signed envelope of one published fact."""
    leaf = get_object_or_404(LogLeaf, index=index)
    response = HttpResponse(bytes(leaf.envelope), content_type="application/json")
    patch_cache_control(response, **IMMUTABLE)
    return response


def _proof_body(hashes: list[bytes]) -> str:
    return "".join(base64.b64encode(h).decode() + "\n" for h in hashes)


@require_GET
def log_proof_inclusion(request):
    """?index=I&size=N: the RFC 6962 inclusion proof of leaf I in the tree of size N, one base64 hash a line."""
    try:
        index, size = _size(request, "index"), _size(request, "size")
        if not LogCheckpoint.objects.filter(size=size).exists():
            raise ValueError(f"The log has no checkpoint of size {size}.")
        proof = merkle.inclusion_proof(index, leaf_hashes(size))
    except (ValueError, merkle.ProofError) as exc:
        return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")
    return _text(_proof_body(proof), cache=IMMUTABLE)


@require_GET
def log_proof_consistency(request):
    """?old=M&new=N: the RFC 6962 consistency proof between the checkpoints of sizes M and N."""
    try:
        old, new = _size(request, "old"), _size(request, "new")
        if old > new:
            raise ValueError("'old' is a size the log had before 'new'.")
        if new and not LogCheckpoint.objects.filter(size=new).exists():
            raise ValueError(f"The log has no checkpoint of size {new}.")
        proof = merkle.consistency_proof(old, leaf_hashes(new))
    except (ValueError, merkle.ProofError) as exc:
        return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")
    return _text(_proof_body(proof), cache=IMMUTABLE)
