"""Evidence packs and the public log (docs/evidence.md), through the real upload, check and publication services
with the sample run archives: every published revision's pack, downloaded from its public route, verifies with
`portal verify` (recomputing every point from the raw archives it fetches), and fails, naming the cause, on a
changed byte in any file, a changed figure, a swapped signature, a proof against another checkpoint and a log
rewritten under an old checkpoint. The log's checkpoints only grow."""

from __future__ import annotations

import base64
import json
import zipfile
from pathlib import Path

import pytest
from django.test import Client

from checker.cli.local_check import check
from checker.cli.main import main as portal
from checker.evidence import merkle
from checker.evidence.bag import sha256_hex
from checker.evidence.note import Checkpoint, SignerKey, TlogProof, checkpoint_open, note_sign, parse_key_list
from checker.evidence.pack import ENVELOPE, RECORD, TLOG_PROOF
from checker.evidence.verify import verify_pack
from leaderboard.models import EvidencePack, LogCheckpoint, LogLeaf
from leaderboard.publishing import extensions, services
from leaderboard.publishing.evidence import signing_key
from tests.leaderboard.extension_support import archive, checked, published_result, to_audited
from tests.submissions.support import make_catalog

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("storage_dir")]

TOKENIZER = Path(__file__).parents[1] / "checker" / "fixtures" / "tokenizer" / "tokenizer.json"


def _http_fetch(client: Client):
    """What `portal verify --with-raw-logs` does over HTTP, asked of the test server."""

    def fetch(url: str, size: int) -> bytes:
        response = client.get(url.split("://", 1)[1].split("/", 1)[1].join(["/", ""]))
        assert response.status_code == 200, url
        return b"".join(response.streaming_content)

    return fetch


def _download(client: Client, path: str, tmp_path: Path, name: str) -> Path:
    response = client.get(path)
    assert response.status_code == 200, path
    assert "immutable" in response["Cache-Control"]
    out = tmp_path / name
    out.write_bytes(b"".join(response.streaming_content))
    return out


def _rewrite(pack: Path, out: Path, change) -> Path:
    """A copy of the pack's zip with `change(files)` applied to {path inside the bag: bytes}."""
    with zipfile.ZipFile(pack) as source:
        files = {info.filename: source.read(info) for info in source.infolist()}
    top = next(iter(files)).split("/", 1)[0]
    inner = {name.split("/", 1)[1]: data for name, data in files.items()}
    change(inner)
    with zipfile.ZipFile(out, "w") as target:
        for name, data in inner.items():
            target.writestr(f"{top}/{name}", data)
    return out


def _rehash(files: dict[str, bytes]) -> None:
    """What a forger does after editing a figure: make both manifests agree with the edited files again."""
    listed = dict(line.split("  ", 1)[::-1] for line in files["manifest-sha256.txt"].decode().splitlines())
    listed |= {name: sha256_hex(data) for name, data in files.items() if name.startswith("data/")}
    files["manifest-sha256.txt"] = "".join(
        f"{digest}  {name}\n" for name, digest in sorted(listed.items())
    ).encode()
    files["tagmanifest-sha256.txt"] = "".join(
        f"{sha256_hex(data)}  {name}\n"
        for name, data in sorted(files.items())
        if not name.startswith("data/") and name != "tagmanifest-sha256.txt"
    ).encode()


def _failed(report) -> dict[str, str]:
    return {check.name: check.detail for check in report.failed()}


@pytest.fixture
def published(role_users, tmp_path):
    """AX-8000 published from six points (revision 1), then extended by c64 (revision 2); both packs downloaded."""
    submitter = role_users["submitter"]
    benchmark, system = make_catalog(role_users["organisations"]["acme"])
    publication = published_result(submitter, system, benchmark, [archive(c) for c in (1, 2, 4, 8, 16, 32)])
    extension = extensions.extension_open(publication=publication, actor=submitter, stack="acme-serve 1.0")
    checked(submitter, extension, [archive(64)])
    services.publication_schedule(submission=to_audited(extension), actor=submitter, mode="now")
    publication.refresh_from_db()
    client = Client()
    keys = client.get("/log/keys")
    assert keys.status_code == 200
    key_file = tmp_path / "portal.pub"
    key_file.write_text(keys.content.decode())
    packs = {
        n: _download(
            client, f"/results/{publication.public_id}/revisions/{n}/evidence-pack/", tmp_path, f"r{n}.zip"
        )
        for n in (1, 2)
    }
    return {
        "publication": publication,
        "client": client,
        "keys": parse_key_list(key_file.read_text()),
        "key_file": key_file,
        "packs": packs,
    }


def test_a_downloaded_pack_verifies_offline_and_with_its_raw_logs_recomputed(published, tmp_path, capsys):
    pack, keys = published["packs"][2], published["keys"]
    assert portal(["verify", str(pack), "--key", str(published["key_file"])]) == 0
    out = capsys.readouterr().out
    assert "VERIFIED" in out and "raw archive(s) listed in fetch.txt" in out and "warning" not in out
    # Without a pinned key it still verifies, warning that the key came from the pack.
    assert portal(["verify", str(pack)]) == 0
    assert "taken from the pack itself" in capsys.readouterr().out

    report = verify_pack(
        pack,
        keys=keys,
        with_raw_logs=True,
        recompute=lambda paths: check(paths, tokenizer=str(TOKENIZER)),
        fetch=_http_fetch(published["client"]),
    )
    assert report.ok, report.text()
    assert "all 7 recomputed point(s) match" in report.text()
    with zipfile.ZipFile(pack) as archive_file:
        names = {name.split("/", 1)[1] for name in archive_file.namelist()}
        record = json.loads(archive_file.read(next(n for n in archive_file.namelist() if n.endswith(RECORD))))
    assert {
        "bagit.txt",
        "bag-info.txt",
        "manifest-sha256.txt",
        "tagmanifest-sha256.txt",
        "fetch.txt",
        ENVELOPE,
        TLOG_PROOF,
        "evidence/keys.txt",
        "data/metrics.json",
        "data/raw-logs.json",
        "data/trail.json",
    } <= names
    assert record["revision"] == 2 and record["snapshot"] == published["publication"].snapshot
    assert len(record["curve"]["points"]) == 7
    _bagit_validates(pack, tmp_path, published["client"])


def _bagit_validates(pack: Path, tmp_path: Path, client: Client) -> None:
    """The Library of Congress's `bagit` reads the pack as a valid BagIt bag once fetch.txt's files are fetched."""
    import bagit

    with zipfile.ZipFile(pack) as archive_file:
        archive_file.extractall(tmp_path / "unzipped")
    (folder,) = (tmp_path / "unzipped").iterdir()
    fetch = _http_fetch(client)
    for line in (folder / "fetch.txt").read_text().splitlines():
        url, size, path = line.split(" ", 2)
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_bytes(fetch(url, int(size)))
    bag = bagit.Bag(str(folder))
    bag.validate()
    listed = (folder / "manifest-sha256.txt").read_text().splitlines()
    assert len(bag.payload_entries()) == len(listed) and any("  data/raw/" in line for line in listed)


def test_a_tampered_pack_fails_naming_the_cause(published, tmp_path):
    """One publication for the four forgeries (each is a helper below)."""
    _changed_byte_in_any_file(published, tmp_path)
    _changed_figure_with_the_manifests_rehashed(published, tmp_path)
    _swapped_signature(published, tmp_path)
    _proof_against_another_checkpoint(published, tmp_path)


def _changed_byte_in_any_file(published, tmp_path):
    pack, keys = published["packs"][2], published["keys"]
    with zipfile.ZipFile(pack) as source:
        inner = [info.filename.split("/", 1)[1] for info in source.infolist()]
    for name in inner:

        def flip(files, name=name):
            data = bytearray(files[name])
            data[len(data) // 2] ^= 0x01
            files[name] = bytes(data)

        report = verify_pack(_rewrite(pack, tmp_path / "changed.zip", flip), keys=keys)
        assert not report.ok, name
        assert name in report.text() or "tagmanifest" in name, (name, report.text())


def _changed_figure_with_the_manifests_rehashed(published, tmp_path):
    def inflate(files):
        record = json.loads(files[RECORD])
        record["curve"]["points"][0]["system_tps"] *= 1.2
        files[RECORD] = json.dumps(record).encode()
        _rehash(files)

    report = verify_pack(
        _rewrite(published["packs"][2], tmp_path / "figure.zip", inflate), keys=published["keys"]
    )
    failed = _failed(report)
    assert set(failed) == {"statement"} and RECORD in failed["statement"]


def _swapped_signature(published, tmp_path):
    other = json.loads(_inner(published["packs"][1], ENVELOPE))

    def swap(files):
        envelope = json.loads(files[ENVELOPE])
        envelope["signatures"] = other["signatures"]
        files[ENVELOPE] = json.dumps(envelope).encode()
        _rehash(files)

    report = verify_pack(
        _rewrite(published["packs"][2], tmp_path / "swapped.zip", swap), keys=published["keys"]
    )
    assert "does not verify" in _failed(report)["signature"]
    # A pack signed by another key than the pinned one is not trusted.
    stranger = SignerKey.generate("someone-else/log").verifier
    assert (
        "No signature by a trusted key"
        in _failed(verify_pack(published["packs"][2], keys=[stranger]))["signature"]
    )


def _inner(pack: Path, name: str) -> bytes:
    with zipfile.ZipFile(pack) as source:
        return source.read(next(n for n in source.namelist() if n.split("/", 1)[1] == name))


def _proof_against_another_checkpoint(published, tmp_path):
    later = (
        LogCheckpoint.objects.order_by("-size").first().note
    )  # revision 1's proof, under revision 2's checkpoint

    def other_checkpoint(files):
        head = files[TLOG_PROOF].decode().split("\n\n", 1)[0]
        files[TLOG_PROOF] = f"{head}\n\n{later}".encode()
        _rehash(files)

    report = verify_pack(
        _rewrite(published["packs"][1], tmp_path / "proof.zip", other_checkpoint), keys=published["keys"]
    )
    assert "inclusion proof" in _failed(report)["log inclusion"]


def test_the_log_only_grows_and_a_rewritten_log_fails_consistency(published, tmp_path, capsys):
    client, keys, key_file = published["client"], published["keys"], published["key_file"]
    sizes = list(LogCheckpoint.objects.order_by("size").values_list("size", flat=True))
    assert sizes == list(range(1, LogLeaf.objects.count() + 1)) and len(sizes) >= 2
    checkpoints = [checkpoint_open(client.get(f"/log/checkpoints/{s}").content.decode(), keys) for s in sizes]
    for old, new in zip(checkpoints, checkpoints[1:], strict=False):
        body = client.get(f"/log/proof/consistency?old={old.size}&new={new.size}").content.decode()
        merkle.verify_consistency(
            old.size, new.size, old.root, new.root, [base64.b64decode(x) for x in body.split()]
        )
    # The packs' own checkpoints: revision 1's (older) against revision 2's pack, through the CLI.
    older = tmp_path / "older.checkpoint"
    older.write_text(_inner(published["packs"][1], TLOG_PROOF).decode().split("\n\n", 1)[1])
    r1 = checkpoint_open(older.read_text(), keys)
    r2 = checkpoint_open(_inner(published["packs"][2], TLOG_PROOF).decode().split("\n\n", 1)[1], keys)
    proof = tmp_path / "consistency.txt"
    proof.write_bytes(client.get(f"/log/proof/consistency?old={r1.size}&new={r2.size}").content)
    args = [
        "verify",
        str(published["packs"][2]),
        "--key",
        str(key_file),
        "--since",
        str(older),
        "--consistency-proof",
        str(proof),
    ]
    assert portal(args) == 0
    assert "log consistency: the log at size" in capsys.readouterr().out

    # The operator rewrites leaf 0 and signs the rewritten tree: the old checkpoint no longer fits.
    LogLeaf.objects.filter(index=0).update(leaf_hash=merkle.leaf_hash(b"another history").hex())
    hashes = [bytes.fromhex(h) for h in LogLeaf.objects.order_by("index").values_list("leaf_hash", flat=True)]
    rewritten = note_sign(Checkpoint(r2.origin, len(hashes), merkle.root(hashes)).text(), signing_key())
    index = TlogProof.parse(_inner(published["packs"][2], TLOG_PROOF).decode()).index
    reissued = TlogProof(
        index, merkle.inclusion_proof(index, hashes), rewritten
    ).text()  # a proof of the new tree

    def reissue(files):
        files[TLOG_PROOF] = reissued.encode()
        _rehash(files)

    forged = _rewrite(published["packs"][2], tmp_path / "rewritten.zip", reissue)
    proof.write_text(
        "".join(base64.b64encode(h).decode() + "\n" for h in merkle.consistency_proof(r1.size, hashes))
    )
    args[1] = str(forged)
    assert portal(args) == 1
    out = capsys.readouterr().out
    assert "ok    log inclusion" in out and "FAIL  log consistency" in out and "the log was rewritten" in out


def test_an_embargoed_result_has_no_pack_and_its_route_is_a_404(role_users):
    from datetime import timedelta

    from django.utils import timezone

    submitter = role_users["submitter"]
    benchmark, system = make_catalog(role_users["organisations"]["acme"])
    from submissions.services import submission_create

    submission = submission_create(actor=submitter, system=system, benchmark=benchmark, title="embargoed")
    checked(submitter, submission, [archive(c) for c in (1, 2)])
    publication = services.publication_schedule(
        submission=to_audited(submission),
        actor=submitter,
        mode="date",
        publish_at=timezone.now() + timedelta(days=3),
    )
    assert not EvidencePack.objects.exists() and not LogLeaf.objects.exists()
    assert Client().get(f"/results/{publication.public_id}/revisions/1/evidence-pack/").status_code == 404
    empty = Client().get("/log/checkpoint").content.decode()  # the empty log's checkpoint: size 0
    assert empty.split("\n")[1] == "0"
