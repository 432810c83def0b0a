"""Compressed answers (issue 39, "Delivery"): pages and JSON go gzipped to a client that accepts it, the same bytes
once unzipped; a client that does not accept gzip gets them plain; what is not text (an image) is sent as it is."""

import gzip

import pytest

from tests.leaderboard.support import publish

pytestmark = pytest.mark.django_db


@pytest.fixture
def board():
    return publish(scale=1.5)


def test_a_page_and_the_api_are_gzipped_for_a_client_that_accepts_it(client, board):
    for url, ratio in (
        (f"/leaderboard/{board.submission.benchmark.model_id}/", 0.35),
        ("/api/v1/public/results/", 0.9),
    ):
        plain = client.get(url)
        zipped = client.get(url, HTTP_ACCEPT_ENCODING="gzip, deflate, br")
        assert plain.status_code == zipped.status_code == 200
        assert not plain.has_header("Content-Encoding")
        assert zipped["Content-Encoding"] == "gzip" and "Accept-Encoding" in zipped["Vary"]
        assert len(zipped.content) < len(plain.content) * ratio, (
            url,
            len(zipped.content),
            len(plain.content),
        )
        assert gzip.decompress(zipped.content).decode().count("EP-") == plain.content.decode().count("EP-")


def test_an_image_is_sent_as_it_is(client):
    response = client.get("/static/img/apple-touch-icon.png", HTTP_ACCEPT_ENCODING="gzip")
    assert response.status_code == 200
    assert not response.has_header("Content-Encoding")
