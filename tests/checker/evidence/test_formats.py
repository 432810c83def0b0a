"""The standard parts of an evidence pack against the standards' published vectors: RFC 6962 hashing and proofs
(transparency-dev/merkle's vectors), C2SP signed notes (the Go sumdb note vector), DSSE's PAE, RFC 8785."""

import json
from pathlib import Path

import pytest

from checker.evidence import merkle
from checker.evidence.dsse import canonical_json, envelope_open, envelope_sign, pae
from checker.evidence.note import (
    Checkpoint,
    NoteError,
    SignerKey,
    TlogProof,
    VerifierKey,
    checkpoint_open,
    note_open,
    note_sign,
)

VECTORS = Path(__file__).parent / "vectors"
TREE = json.loads((VECTORS / "rfc6962.json").read_text())
NOTE = json.loads((VECTORS / "signed_note.json").read_text())
LEAVES = [merkle.leaf_hash(bytes.fromhex(h)) for h in TREE["leaves_hex"]]


def _hashes(hexes):
    return [bytes.fromhex(h) for h in hexes]


def test_leaf_hashes_and_every_tree_head_match_rfc6962_vectors():
    assert [h.hex() for h in LEAVES] == TREE["leaf_hashes_hex"]
    for size, expected in enumerate(TREE["roots_hex"]):
        assert merkle.root(LEAVES[:size]).hex() == expected


@pytest.mark.parametrize("vector", TREE["inclusion"], ids=lambda v: f"{v['index']}-of-{v['size']}")
def test_inclusion_proofs_match_and_verify(vector):
    index, size, proof = vector["index"], vector["size"], _hashes(vector["proof_hex"])
    assert merkle.inclusion_proof(index, LEAVES[:size]) == proof
    root = bytes.fromhex(TREE["roots_hex"][size])
    merkle.verify_inclusion(index, size, LEAVES[index], proof, root)
    for bad_index, bad_size, bad_proof in [
        (index + 1, size, proof),
        (index, size * 2, proof),
        (index, size, proof + [root]),
        (index, size, [bytes(32)] + proof),
        *[
            (index, size, proof[:i] + [bytes([proof[i][0] ^ 8]) + proof[i][1:]] + proof[i + 1 :])
            for i in range(len(proof))
        ],
    ]:
        with pytest.raises(merkle.ProofError):
            merkle.verify_inclusion(bad_index, bad_size, LEAVES[index], bad_proof, root)


@pytest.mark.parametrize("vector", TREE["consistency"], ids=lambda v: f"{v['old']}-to-{v['new']}")
def test_consistency_proofs_match_and_verify(vector):
    old, new, proof = vector["old"], vector["new"], _hashes(vector["proof_hex"])
    assert merkle.consistency_proof(old, LEAVES[:new]) == proof
    old_root, new_root = bytes.fromhex(TREE["roots_hex"][old]), bytes.fromhex(TREE["roots_hex"][new])
    merkle.verify_consistency(old, new, old_root, new_root, proof)
    if not proof:
        return
    for bad in [
        (old, new, new_root, old_root, proof),  # swapped roots
        (old, new, old_root, new_root, proof[:-1]),
        (old, new, old_root, new_root, proof + [old_root]),
        (old + 1, new, old_root, new_root, proof),
        (old, new, bytes(32), new_root, proof),  # a rewritten history under the old size
    ]:
        with pytest.raises(merkle.ProofError):
            merkle.verify_consistency(*bad)


def test_every_pair_of_sizes_proves_consistent_and_every_leaf_included():
    for new in range(1, 9):
        root = merkle.root(LEAVES[:new])
        for old in range(0, new + 1):
            merkle.verify_consistency(
                old, new, merkle.root(LEAVES[:old]), root, merkle.consistency_proof(old, LEAVES[:new])
            )
        for index in range(new):
            merkle.verify_inclusion(
                index, new, LEAVES[index], merkle.inclusion_proof(index, LEAVES[:new]), root
            )


def test_signed_note_reproduces_the_go_sumdb_vector():
    signer = SignerKey.parse(NOTE["signer_key"])
    assert str(signer.verifier) == NOTE["verifier_key"]
    assert str(signer) == NOTE["signer_key"]
    assert note_sign(NOTE["text"], signer) == NOTE["signed"]
    verifier = VerifierKey.parse(NOTE["verifier_key"])
    assert note_open(NOTE["signed"], [verifier]) == (NOTE["text"], [verifier])
    with pytest.raises(NoteError, match="does not verify"):
        note_open(NOTE["signed"].replace("cryptography", "cryptographY"), [verifier])
    other = SignerKey.generate(
        "PeterNeumann"
    ).verifier  # same name, another key: ignored, so nothing trusted signed
    with pytest.raises(NoteError, match="No signature by a trusted key"):
        note_open(NOTE["signed"], [other])


def test_checkpoint_and_tlog_proof_round_trip():
    key = SignerKey.generate("portal.example/log")
    checkpoint = Checkpoint("portal.example/log", 8, bytes.fromhex(TREE["roots_hex"][8]))
    signed = note_sign(checkpoint.text(), key)
    assert checkpoint_open(signed, [key.verifier]) == checkpoint
    with pytest.raises(NoteError, match="not 'elsewhere'"):
        checkpoint_open(signed, [key.verifier], origin="elsewhere")
    proof = TlogProof(5, merkle.inclusion_proof(5, LEAVES), signed)
    text = proof.text()
    assert text.startswith("c2sp.org/tlog-proof@v1\nindex 5\n")
    assert TlogProof.parse(text) == proof


def test_dsse_pae_matches_the_spec_example_and_envelopes_verify():
    assert (
        pae("http://example.com/HelloWorld", b"hello world")
        == b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )
    key = SignerKey.generate("portal.example/log")
    payload = canonical_json({"_type": "https://in-toto.io/Statement/v1", "subject": []})
    envelope = envelope_sign(payload, key)
    claim, signer = envelope_open(envelope, [key.verifier])
    assert signer == key.verifier and claim["_type"] == "https://in-toto.io/Statement/v1"
    assert json.loads(envelope)["signatures"][0]["keyid"] == key.verifier.keyid


def test_canonical_json_is_rfc8785():
    # RFC 8785 section 3.2.2's example: sorted keys, ES6 number forms, minimal string escapes
    value = json.loads(
        '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],'
        ' "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/", "literals": [null, true, false]}'
    )
    assert (
        canonical_json(value)
        == (
            '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
            '"string":"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
        ).encode()
    )
