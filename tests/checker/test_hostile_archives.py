"""Hostile archives built here: every refusal is a finding with a stable rule id, nothing escapes the sandbox."""

from __future__ import annotations

import gzip
import io
import os
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest
import zstandard

from checker.read.inputs import Limits, open_inputs
from checker.report import Findings
from tests.checker.archive_builders import RUN_ARCHIVES, bundle_tar_zst, run_members, snapshot, write_tar_gz


@pytest.fixture
def env(tmp_path):
    """A canary folder next to the sandbox; tests assert it stays empty and nothing else appears."""
    (tmp_path / "canary").mkdir()
    return tmp_path


def _open(env: Path, archive: Path, limits: Limits | None = None):
    before = snapshot(env, env / "work")
    findings = Findings()
    layout = open_inputs([archive], workdir=env / "work", limits=limits or Limits(), findings=findings)
    assert list((env / "canary").iterdir()) == []
    assert snapshot(env, env / "work") == before
    for path in (env / "work").rglob("*"):
        assert not path.is_symlink()
        assert path.is_dir() or path.is_file()
    return layout, findings


def _rules(findings) -> list[str]:
    return [f.rule for f in findings]


def _info(name: str, kind: bytes = tarfile.REGTYPE, size: int = 0, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.size = size
    info.linkname = linkname
    return info


def _point_with(env: Path, extra, name: str = "AX-8000_c1.tar.gz") -> Path:
    return write_tar_gz(env / name, run_members(1), extra)


@pytest.mark.parametrize(
    ("member", "rule"),
    [
        ("../../canary/evil.txt", "archive-path-traversal"),
        ("c1/../../../canary/evil.txt", "archive-path-traversal"),
        ("/tmp/canary-abs/evil.txt", "archive-absolute-path"),
        ("C:/canary/evil.txt", "archive-absolute-path"),
        ("c1\\..\\..\\canary\\evil.txt", "archive-bad-name"),
        ("c1/evil\x01name", "archive-bad-name"),
    ],
)
def test_bad_member_names_are_refused(env, member, rule):
    data = b"pwned"
    layout, findings = _open(env, _point_with(env, [(_info(member, size=len(data)), data)]))
    assert _rules(findings) == [rule]
    # control characters are shown escaped (c1/evil\\x01name), like bytes that are not UTF-8
    assert findings[0].file == f"AX-8000_c1.tar.gz:{member}".replace("\x01", "\\x01")
    assert "not extracted" in findings[0].message and findings[0].fix
    assert len(layout.points) == 1  # the rest of the archive is still read
    assert not Path("/tmp/canary-abs").exists()


def test_symlink_then_write_through_it_is_refused(env):
    data = b"pwned"
    extra = [
        (_info("c1/link", tarfile.SYMTYPE, linkname=str(env / "canary")), None),
        (_info("c1/link/evil.txt", size=len(data)), data),
    ]
    layout, findings = _open(env, _point_with(env, extra))
    assert _rules(findings) == ["archive-link"]
    assert findings[0].file == "AX-8000_c1.tar.gz:c1/link"
    # the later member became a plain file inside the sandbox, never through a link
    assert (Path(layout.points[0].dir) / "link" / "evil.txt").read_bytes() == data


def test_hard_link_is_refused(env):
    _, findings = _open(
        env, _point_with(env, [(_info("c1/passwd", tarfile.LNKTYPE, linkname="/etc/passwd"), None)])
    )
    assert _rules(findings) == ["archive-link"]
    assert "hard link" in findings[0].message


@pytest.mark.parametrize("kind", [tarfile.CHRTYPE, tarfile.BLKTYPE, tarfile.FIFOTYPE])
def test_devices_and_fifos_are_refused(env, kind):
    _, findings = _open(env, _point_with(env, [(_info("c1/dev", kind), None)]))
    assert _rules(findings) == ["archive-special-file"]
    assert findings[0].file == "AX-8000_c1.tar.gz:c1/dev"


def test_duplicate_member_keeps_the_first(env):
    files = run_members(1)
    extra = [(_info("c1/point.yaml", size=5), b"x: 1\n")]
    layout, findings = _open(env, write_tar_gz(env / "a.tar.gz", files, extra))
    assert _rules(findings) == ["archive-duplicate-member"]
    assert layout.points[0].files["point.yaml"].read_bytes() == files["c1/point.yaml"]


def test_tar_bomb_stops_on_stream_ratio(env):
    archive = env / "bomb.tar.gz"
    zeros = b"\0" * (20 * 1024 * 1024)
    write_tar_gz(archive, {"c1/big.bin": zeros})
    layout, findings = _open(env, archive, Limits(max_member_ratio=10))
    assert "archive-ratio" in _rules(findings)
    assert findings[0].file.startswith("bomb.tar.gz")
    written = sum(p.stat().st_size for p in (env / "work").rglob("*") if p.is_file())
    assert written < 2 * 1024 * 1024


def test_total_size_cap(env):
    archive = write_tar_gz(env / "a.tar.gz", {"c1/a.bin": os.urandom(5000), "c1/b.bin": os.urandom(5000)})
    _, findings = _open(env, archive, Limits(max_total_bytes=7000))
    assert "archive-too-large" in _rules(findings)
    assert sum(p.stat().st_size for p in (env / "work").rglob("*") if p.is_file()) <= 7000


def test_zip_bomb_is_refused(env):
    archive = env / "bomb.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("c1/big.bin", b"\0" * (50 * 1024 * 1024))
    _, findings = _open(env, archive, Limits(max_member_ratio=100))
    assert _rules(findings)[0] == "archive-ratio"
    assert findings[0].file == "bomb.zip:c1/big.bin"


def test_zip_total_size_cap(env):
    archive = env / "big.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("c1/big.bin", b"\0" * (4 * 1024 * 1024))
    _, findings = _open(env, archive, Limits(max_total_bytes=1024 * 1024))
    assert "archive-too-large" in _rules(findings)


def test_too_many_members(env):
    files = {f"c1/f{i}.txt": b"x" for i in range(10)}
    _, findings = _open(env, write_tar_gz(env / "many.tar.gz", files), Limits(max_members=5))
    assert _rules(findings).count("archive-too-many-members") == 1
    assert len(list((env / "work").rglob("f*.txt"))) == 5


def test_truncated_gzip_run_archive(env):
    archive = env / "AX-8000_c64.tar.gz"
    data = next(p for p in RUN_ARCHIVES if p.name == "AX-8000_c64.tar.gz").read_bytes()
    archive.write_bytes(data[: len(data) // 2])
    layout, findings = _open(env, archive)
    assert "archive-corrupt" in _rules(findings)
    corrupt = next(f for f in findings if f.rule == "archive-corrupt")
    assert corrupt.file.startswith("AX-8000_c64.tar.gz")
    assert "truncated or corrupt" in corrupt.message


def test_gzip_with_bad_crc(env):
    raw = bytearray(gzip.compress(b"hello" * 1000))
    raw[-8] ^= 0xFF  # CRC32 in the trailer
    archive = env / "bad.tar.gz"
    archive.write_bytes(bytes(raw))
    layout, findings = _open(env, archive)
    assert _rules(findings)[0] == "archive-corrupt"
    assert layout.readable_inputs == 0


def test_truncated_zstd_bundle(env):
    archive = bundle_tar_zst(env / "bundle.tar.zst")
    data = archive.read_bytes()
    archive.write_bytes(data[: len(data) * 2 // 3])
    layout, findings = _open(env, archive)
    assert _rules(findings).count("archive-corrupt") == 1
    assert "zstd" in next(f.message for f in findings if f.rule == "archive-corrupt")
    # what came before the cut is kept and reported on, not lost
    assert layout.kind == "bundle"
    assert "required-file" in _rules(findings)


def test_corrupt_zip_crc(env):
    archive = env / "crc.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr("c1/good.txt", b"fine")
        zf.writestr("c1/bad.txt", b"A" * 100)
    data = bytearray(archive.read_bytes())
    at = data.index(b"A" * 100)
    data[at] = ord("B")
    archive.write_bytes(bytes(data))
    _, findings = _open(env, archive)
    assert _rules(findings)[0] == "archive-corrupt"
    assert findings[0].file == "crc.zip:c1/bad.txt"
    assert not (env / "work").joinpath("000-crc.zip", "c1", "bad.txt").exists()
    assert (env / "work" / "000-crc.zip" / "c1" / "good.txt").read_bytes() == b"fine"


def test_truncated_zip(env):
    archive = env / "cut.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("c1/a.txt", b"a" * 1000)
    archive.write_bytes(archive.read_bytes()[:-30])
    layout, findings = _open(env, archive)
    assert _rules(findings) == ["archive-corrupt"]
    assert layout.readable_inputs == 0


@pytest.mark.parametrize(
    ("mode", "rule"),
    [(stat.S_IFLNK | 0o777, "archive-link"), (stat.S_IFIFO | 0o644, "archive-special-file")],
)
def test_zip_links_and_special_files(env, mode, rule):
    archive = env / "odd.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        info = zipfile.ZipInfo("c1/odd")
        info.create_system = 3
        info.external_attr = mode << 16
        zf.writestr(info, str(env / "canary"))
        zf.writestr("../canary/evil.txt", b"pwned")
        zf.writestr("/abs/evil.txt", b"pwned")
    _, findings = _open(env, archive)
    assert _rules(findings) == [rule, "archive-path-traversal", "archive-absolute-path"]


def test_zip_encrypted_member(env):
    archive = env / "enc.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("c1/secret.txt", b"x")
    data = bytearray(archive.read_bytes())
    data[6] |= 0x1  # local header flag bits
    cd = data.index(b"PK\x01\x02")
    data[cd + 8] |= 0x1  # central directory flag bits
    archive.write_bytes(bytes(data))
    _, findings = _open(env, archive)
    assert _rules(findings) == ["archive-encrypted"]


def test_huge_pax_header_is_refused_without_reading_it(env):
    archive = env / "pax.tar"
    header = _info("c1/x", tarfile.XHDTYPE, size=4 * 1024 * 1024).tobuf(format=tarfile.USTAR_FORMAT)
    archive.write_bytes(header + b"\0" * (4 * 1024 * 1024) + b"\0" * 1024)
    _, findings = _open(env, archive)
    assert _rules(findings) == ["archive-corrupt"]
    assert "extended tar header" in findings[0].message


def test_zstd_ratio_is_watched_too(env):
    tar = io.BytesIO()
    with tarfile.open(fileobj=tar, mode="w") as tf:
        info = _info("c1/zeros.bin", size=30 * 1024 * 1024)
        tf.addfile(info, io.BytesIO(b"\0" * info.size))
    archive = env / "z.tar.zst"
    archive.write_bytes(zstandard.ZstdCompressor(level=19).compress(tar.getvalue()))
    _, findings = _open(env, archive, Limits(max_member_ratio=50))
    assert _rules(findings) == ["archive-ratio"]


def test_random_corruption_never_raises(env):
    import random

    from tests.checker.archive_builders import bundle_zip

    sources = [
        RUN_ARCHIVES[0].read_bytes(),
        bundle_zip(env / "b.zip").read_bytes(),
        bundle_tar_zst(env / "b.tar.zst").read_bytes(),
    ]
    rnd = random.Random(7)
    for i in range(60):
        data = bytearray(rnd.choice(sources))
        for _ in range(rnd.randint(1, 6)):
            data[rnd.randrange(len(data))] = rnd.randrange(256)
        if rnd.random() < 0.3:
            data = data[: rnd.randrange(len(data))]
        path = env / f"fuzz{i}.bin"
        path.write_bytes(bytes(data))
        open_inputs([path], workdir=env / "work" / str(i), limits=Limits(), findings=Findings())
    assert list((env / "canary").iterdir()) == []
