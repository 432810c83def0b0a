"""Safe loaders: bad descriptors become findings with line / pointer; the raw-log reader is bounded."""

from __future__ import annotations

import pytest
import zstandard

from checker.read.inputs import Limits, open_inputs
from checker.read.loaders import load_json, load_yaml
from checker.read.raw_logs import CorruptStream, LineTooLong, open_events
from checker.read.schema_check import check_layout_descriptors
from checker.report import Findings
from tests.checker.archive_builders import run_members, write_tar_gz


def _load(tmp_path, name: str, data: bytes, limits: Limits | None = None):
    path = tmp_path / name
    path.write_bytes(data)
    findings = Findings()
    loader = load_yaml if name.endswith(".yaml") else load_json
    obj = loader(path, display=f"x/{name}", findings=findings, limits=limits or Limits(), point="S/M/r1")
    return obj, findings


def test_valid_json_loads(tmp_path):
    obj, findings = _load(tmp_path, "a.json", b'\xef\xbb\xbf{"a": [1, 2.5, null]}')
    assert obj == {"a": [1, 2.5, None]} and list(findings) == []


def test_invalid_utf8_reports_the_line(tmp_path):
    obj, findings = _load(tmp_path, "a.json", b'{\n"a": 1,\n"b": "caf\xe9"\n}')
    assert obj is None
    (f,) = findings
    assert (f.rule, f.line, f.file, f.point) == ("invalid-utf8", 3, "x/a.json", "S/M/r1")


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_nonfinite_numbers_are_refused_with_line_and_pointer(tmp_path, token):
    obj, findings = _load(tmp_path, "a.json", f'{{"ttft": {{\n "avg": 1,\n "p": [0, {token}]}}}}'.encode())
    assert obj is None
    (f,) = findings
    assert (f.rule, f.severity, f.line, f.pointer) == ("json-nonfinite", "error", 3, "/ttft/p/1")


def test_nan_inside_a_string_is_not_a_number(tmp_path):
    obj, findings = _load(tmp_path, "a.json", b'{"note": "NaN Infinity", "v": 1}')
    assert obj == {"note": "NaN Infinity", "v": 1} and list(findings) == []


def test_duplicate_keys_warn_and_last_wins(tmp_path):
    obj, findings = _load(tmp_path, "a.json", b'{"a": {"k": 1,\n "k": 2}}')
    assert obj == {"a": {"k": 2}}
    (f,) = findings
    assert (f.rule, f.severity, f.pointer, f.line) == ("json-duplicate-key", "warning", "/a/k", 2)


def test_syntax_error_line_and_not_object(tmp_path):
    obj, findings = _load(tmp_path, "a.json", b'{\n"a": 1,\n}')
    assert obj is None and findings[0].rule == "json-syntax" and findings[0].line == 3
    obj, findings = _load(tmp_path, "b.json", b"[1, 2]")
    assert obj is None and findings[0].rule == "descriptor-not-object"


def test_file_too_large(tmp_path):
    obj, findings = _load(
        tmp_path, "a.json", b'{"a": "' + b"x" * 200 + b'"}', Limits(max_descriptor_bytes=100)
    )
    assert obj is None and [f.rule for f in findings] == ["file-too-large"]


def test_yaml_problems(tmp_path):
    obj, findings = _load(tmp_path, "a.yaml", b"a: 1\nb: 2\nc: d: e\n")
    assert obj is None and findings[0].rule == "yaml-syntax" and findings[0].line == 3
    obj, findings = _load(tmp_path, "b.yaml", b"a: 1\nb: .inf\n")
    assert obj is None and (findings[0].rule, findings[0].line) == ("yaml-nonfinite", 2)
    obj, findings = _load(tmp_path, "c.yaml", b"a: &x [1]\nb: *x\n")
    assert obj is None and findings[0].rule == "yaml-alias"
    obj, findings = _load(tmp_path, "d.yaml", b"a: 1\na: 2\n")
    assert obj == {"a": 2} and (findings[0].rule, findings[0].line) == ("yaml-duplicate-key", 2)
    obj, findings = _load(tmp_path, "e.yaml", b"- 1\n")
    assert obj is None and findings[0].rule == "descriptor-not-object"
    obj, findings = _load(tmp_path, "f.yaml", b"a: \xff\n")
    assert obj is None and findings[0].rule == "invalid-utf8"


def test_bad_descriptors_inside_a_run_archive(tmp_path):
    files = run_members(1)
    files["c1/system_desc.json"] = files["c1/system_desc.json"].replace(b"Acme AX-8000", b"Acme \xff AX", 1)
    files["c1/performance/result_summary.json"] = files["c1/performance/result_summary.json"].replace(
        b'"qps": ', b'"qps": NaN, "x": ', 1
    )
    archive = write_tar_gz(tmp_path / "AX-8000_c1.tar.gz", files)
    findings = Findings()
    layout = open_inputs([archive], workdir=tmp_path / "work", limits=Limits(), findings=findings)
    assert list(findings) == []  # open_inputs only groups; descriptors are reported by the check below
    check_layout_descriptors(layout, findings=findings, limits=Limits())
    got = {(f.rule, f.file) for f in findings}
    assert got == {
        ("invalid-utf8", "AX-8000_c1.tar.gz:c1/system_desc.json"),
        ("json-nonfinite", "AX-8000_c1.tar.gz:c1/performance/result_summary.json"),
    }


LINES = [b'{"event_type": "sample.issued", "i": %d}\n' % i for i in range(5000)]


def test_open_events_plain_and_multi_frame_zstd(tmp_path):
    plain = tmp_path / "events.jsonl"
    plain.write_bytes(b"".join(LINES))
    assert list(open_events(plain)) == LINES
    compressed = tmp_path / "events.jsonl.zst"
    cctx = zstandard.ZstdCompressor()
    compressed.write_bytes(cctx.compress(b"".join(LINES[:100])) + cctx.compress(b"".join(LINES[100:])))
    assert list(open_events(compressed)) == LINES


def test_open_events_truncated_zstd_raises_corrupt_stream(tmp_path):
    path = tmp_path / "events.jsonl.zst"
    data = zstandard.ZstdCompressor().compress(b"".join(LINES))
    path.write_bytes(data[:-20])
    got = []
    with pytest.raises(CorruptStream) as err:
        for line in open_events(path):
            got.append(line)
    assert err.value.rule == "events-corrupt-compression"
    assert err.value.line == len(got)
    assert got == LINES[: len(got)]


def test_open_events_line_too_long(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"short\n" + b"x" * 1000 + b"\nafter\n")
    lines = []
    with pytest.raises(LineTooLong) as err:
        for line in open_events(path, max_line_bytes=100):
            lines.append(line)
    assert lines == [b"short\n"] and err.value.line == 1 and err.value.rule == "events-line-too-long"


@pytest.mark.parametrize(
    ("data", "rules"),
    [
        (b"a: 1\nb: {c: [1, 2]}\na: 3\n", ["yaml-duplicate-key"]),
        (b"a: &x 1\nb: *x\n", ["yaml-alias"]),
        (b"a: .nan\n", ["yaml-nonfinite"]),
        (b"a: [1,\n", ["yaml-syntax"]),
        (b'a: "x\\0y"\n', ["yaml-nul"]),
    ],
)
def test_the_same_yaml_read_again_gives_the_same_findings_and_its_own_object(tmp_path, data, rules):
    """A check reads each YAML descriptor at several stages and the parse of a text is kept in the process: every
    read still reports every finding with its line, and each caller's object is its own (changing one changes
    no later read)."""
    first, first_findings = _load(tmp_path, "a.yaml", data)
    assert [f.rule for f in first_findings] == rules
    if isinstance(first, dict):
        first["b"]["c"].append("changed")
    again, again_findings = _load(tmp_path, "b.yaml", data)
    assert [(f.rule, f.line, f.message.replace("b.yaml", "a.yaml")) for f in again_findings] == [
        (f.rule, f.line, f.message) for f in first_findings
    ]
    if again is not None:
        assert again == {"a": 3, "b": {"c": [1, 2]}}
