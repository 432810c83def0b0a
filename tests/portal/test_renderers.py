"""The public API's JSON (portal.renderers.FastJSONRenderer) holds the values DRF's renderer writes."""

from __future__ import annotations

import datetime
import decimal
import json
import uuid

import numpy as np
from django.utils.translation import gettext_lazy
from rest_framework.renderers import JSONRenderer
from rest_framework.utils.serializer_helpers import ReturnDict

from portal.renderers import FastJSONRenderer


def _both(data, media_type="application/json"):
    return FastJSONRenderer().render(data, media_type), JSONRenderer().render(data, media_type)


def test_every_kind_of_value_an_answer_holds_reads_back_the_same():
    data = ReturnDict(
        {
            "floats": [0.1, 1e-05, 2.5e-07, 1e16, 1234.5678, -0.0, 5e-324],
            "when": datetime.datetime(2026, 12, 6, 19, 30, 1, 123456, tzinfo=datetime.UTC),
            "day": datetime.date(2026, 12, 6),
            "money": decimal.Decimal("12.50"),
            "id": uuid.UUID("12345678-1234-5678-1234-567812345678"),
            "label": gettext_lazy("Published"),
            "numpy": [np.int64(7), np.float64(0.25), np.int32(3)],
            "text": "Grüße — \u2028 line \u2029 para",
            "nested": {"none": None, "yes": True, "rows": [{"a": 1}]},
        },
        serializer=None,
    )
    fast, drf = _both(data)
    assert json.loads(fast) == json.loads(drf)
    # dates as DRF writes them (ISO 8601, UTC as Z), and the JavaScript line separators escaped
    assert b'"when":"2026-12-06T19:30:01.123456Z"' in fast
    assert b"\\u2028" in fast and b"\\u2029" in fast and "\u2028".encode() not in fast


def test_an_answer_without_small_floats_is_byte_for_byte_drfs():
    data = {"count": 2, "results": [{"system_tps": 1234.5, "name": "Acme AX-8000"}, {"system_tps": None}]}
    fast, drf = _both(data)
    assert fast == drf


def test_what_orjson_cannot_write_is_written_by_drf():
    data = {"big": 2**70, 3: "a key that is not a string"}
    fast, drf = _both(data)
    assert fast == drf
    indented = _both({"a": [1, 2]}, "application/json; indent=2")
    assert indented[0] == indented[1] and b"\n" in indented[0]


def test_a_non_finite_float_is_null_not_a_refused_answer():
    assert json.loads(FastJSONRenderer().render({"ratio": float("nan"), "top": float("inf")})) == {
        "ratio": None,
        "top": None,
    }
