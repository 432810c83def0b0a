"""RFC 6962 (section 2.1) Merkle tree hashing with SHA-256: leaf and node hashes, the tree head, inclusion and
consistency proofs, and their verification (the algorithms of RFC 9162 section 2.1.3.2 and 2.1.4.2).

Written here because no kept Python library does it; tested against the transparency-dev/merkle test vectors
(tests/checker/evidence/vectors/rfc6962.json)."""

from __future__ import annotations

import hashlib

HASH_SIZE = 32


class ProofError(ValueError):
    """A proof does not prove what it claims."""


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(size: int) -> int:
    """The largest power of two smaller than size (size >= 2)."""
    return 1 << ((size - 1).bit_length() - 1)


def root(leaf_hashes: list[bytes]) -> bytes:
    """MTH(D[n]) over the leaves' hashes; SHA-256 of nothing for the empty tree."""
    if not leaf_hashes:
        return hashlib.sha256(b"").digest()
    if len(leaf_hashes) == 1:
        return leaf_hashes[0]
    k = _split(len(leaf_hashes))
    return node_hash(root(leaf_hashes[:k]), root(leaf_hashes[k:]))


def inclusion_proof(index: int, leaf_hashes: list[bytes]) -> list[bytes]:
    """PATH(m, D[n]): the audit path of leaf `index`, from the leaf's sibling up to the root's child."""
    size = len(leaf_hashes)
    if not 0 <= index < size:
        raise ProofError(f"Leaf {index} is not in a tree of {size} leaves.")
    if size == 1:
        return []
    k = _split(size)
    if index < k:
        return inclusion_proof(index, leaf_hashes[:k]) + [root(leaf_hashes[k:])]
    return inclusion_proof(index - k, leaf_hashes[k:]) + [root(leaf_hashes[:k])]


def consistency_proof(old_size: int, leaf_hashes: list[bytes]) -> list[bytes]:
    """PROOF(m, D[n]): that the tree of the first old_size leaves is a prefix of the tree of all of them."""
    size = len(leaf_hashes)
    if not 0 <= old_size <= size:
        raise ProofError(f"A tree of {size} leaves has no older size {old_size}.")
    if old_size in (0, size):
        return []
    return _subproof(old_size, leaf_hashes, True)


def _subproof(m: int, leaves: list[bytes], whole: bool) -> list[bytes]:
    n = len(leaves)
    if m == n:
        return [] if whole else [root(leaves)]
    k = _split(n)
    if m <= k:
        return _subproof(m, leaves[:k], whole) + [root(leaves[k:])]
    return _subproof(m - k, leaves[k:], False) + [root(leaves[:k])]


def _check_hashes(proof: list[bytes], *hashes: bytes) -> None:
    if any(len(h) != HASH_SIZE for h in (*proof, *hashes)):
        raise ProofError("A hash of the proof is not 32 bytes long.")


def verify_inclusion(index: int, size: int, leaf: bytes, proof: list[bytes], expected_root: bytes) -> None:
    """Raise ProofError unless `proof` proves leaf hash `leaf` at `index` in the tree of `size` with that root."""
    _check_hashes(proof, leaf, expected_root)
    if not 0 <= index < size:
        raise ProofError(f"Leaf {index} is not in a tree of {size} leaves.")
    fn, sn = index, size - 1
    r = leaf
    for p in proof:
        if sn == 0:
            raise ProofError("The inclusion proof is longer than the tree is deep.")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ProofError("The inclusion proof is shorter than the tree is deep.")
    if r != expected_root:
        raise ProofError("The inclusion proof leads to another root than the checkpoint's.")


def verify_consistency(
    old_size: int, new_size: int, old_root: bytes, new_root: bytes, proof: list[bytes]
) -> None:
    """Raise ProofError unless `proof` shows the tree (old_size, old_root) is a prefix of (new_size, new_root)."""
    _check_hashes(proof, old_root, new_root)
    if not 0 <= old_size <= new_size:
        raise ProofError(f"A log does not shrink: size {old_size} cannot come before size {new_size}.")
    if old_size == new_size:
        if proof:
            raise ProofError("Two checkpoints of the same size need an empty proof.")
        if old_root != new_root:
            raise ProofError("Two checkpoints of the same size carry different roots: the log was rewritten.")
        return
    if old_size == 0:
        if proof:
            raise ProofError("A proof from the empty tree is empty.")
        return
    if not proof:
        raise ProofError("The consistency proof is empty.")
    path = list(proof)
    if old_size & (old_size - 1) == 0:  # a power of two: the old root is a node of the new tree
        path.insert(0, old_root)
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise ProofError("The consistency proof is longer than the tree is deep.")
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ProofError("The consistency proof is shorter than the tree is deep.")
    if fr != old_root or sr != new_root:
        raise ProofError(
            f"The tree of size {new_size} does not extend the tree of size {old_size}: the log was rewritten "
            "(or the proof is not one between these two checkpoints)."
        )
