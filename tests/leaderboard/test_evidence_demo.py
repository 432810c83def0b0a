"""The demo's evidence (docs/evidence.md): `manage.py seed_demo` publishes through the real services, so every
published revision, the annotation and the retraction have a pack; a pack downloaded from the demo's published
AX-8000 verifies with `portal verify`, its raw logs recomputed; the log's checkpoints only grow across the demo's
publications, each consistent with the next."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

from checker.cli.local_check import check
from checker.cli.main import main as portal
from checker.evidence import merkle
from checker.evidence.note import checkpoint_open, parse_key_list
from checker.evidence.verify import verify_pack
from leaderboard.demo import ANNOTATED_TITLE, AX8000_TITLE, RETRACTED_TITLE
from leaderboard.models import EvidencePack, LogCheckpoint, LogLeaf, Publication, PublicationRevision
from tests.factories import BenchmarkFactory
from tests.leaderboard.test_evidence import TOKENIZER, _download, _http_fetch

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_demo_publishes_a_verifiable_pack_per_fact_and_a_log_that_only_grows(tmp_path, capsys):
    BenchmarkFactory(sample=True)  # the catalog migration ships it; transactional tests flush it
    call_command("seed_demo", stdout=open("/dev/null", "w"))  # noqa: SIM115
    published = PublicationRevision.objects.filter(number__isnull=False, status="published")
    assert set(EvidencePack.objects.filter(kind="revision").values_list("revision", flat=True)) == set(
        published.values_list("pk", flat=True)
    )
    annotated = Publication.objects.get(submission__title=ANNOTATED_TITLE)
    retracted = Publication.objects.get(submission__title=RETRACTED_TITLE)
    assert EvidencePack.objects.get(publication=annotated, kind="annotation").annotation.challenge_id
    assert EvidencePack.objects.filter(publication=retracted, kind="retraction").count() == 1
    assert LogLeaf.objects.count() == EvidencePack.objects.count()

    client = Client()
    keys = parse_key_list(client.get("/log/keys").content.decode())
    sizes = list(LogCheckpoint.objects.order_by("size").values_list("size", flat=True))
    assert sizes == list(range(1, len(sizes) + 1))
    heads = [checkpoint_open(client.get(f"/log/checkpoints/{size}").content.decode(), keys) for size in sizes]
    for old, new in zip(heads, heads[1:], strict=False):
        body = client.get(f"/log/proof/consistency?old={old.size}&new={new.size}").content.decode()
        merkle.verify_consistency(
            old.size, new.size, old.root, new.root, [base64.b64decode(x) for x in body.split()]
        )
    assert client.get("/log/checkpoint").content.decode() == LogCheckpoint.objects.get(size=sizes[-1]).note

    ax8000 = Publication.objects.get(submission__title=AX8000_TITLE)
    pack = _download(
        client, f"/results/{ax8000.public_id}/revisions/2/evidence-pack/", tmp_path, "ax8000-r2.zip"
    )
    key_file = tmp_path / "portal.pub"
    key_file.write_text("".join(f"{key}\n" for key in keys))
    assert portal(["verify", str(pack), "--key", str(key_file)]) == 0
    assert "VERIFIED: every check holds." in capsys.readouterr().out
    report = verify_pack(
        pack,
        keys=keys,
        with_raw_logs=True,
        recompute=lambda paths: check(paths, tokenizer=str(TOKENIZER)),
        fetch=_http_fetch(client),
    )
    assert report.ok, report.text()
    assert "all 7 recomputed point(s) match" in report.text()
    Path(tmp_path / "report.txt").write_text(report.text())
