"""`portal preview PATH...`: upload another benchmark tool's output (AIPerf, GuideLLM, inference-perf, vLLM bench)
to a portal as a private *preview* of one of your systems, through /api/v1/previews/ (docs/previews.md).

The paths (files or the tool's output folders) go up as one .tar.gz that keeps their folders, in a JSON body
(base64): the portal checks it like `portal import` does and draws it beside published curves. A preview is never
a submission and never public; it is "not an MLPerf result"."""

from __future__ import annotations

import base64
import gzip
import io
import sys
import tarfile
import time
from pathlib import Path

from checker.cli.remote.client import (
    EXIT_FAIL,
    EXIT_PASS,
    EXIT_USAGE,
    RemoteError,
    client_from_args,
    portal_url,
    token_refused,
)
from checker.cli.remote.commands import add_url_and_token

# The portal's request body cap (DATA_UPLOAD_MAX_MEMORY_SIZE, 10 MiB) less base64's third and the JSON around it.
MAX_PACKED_BYTES = 7 * 1024 * 1024


def _plain(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    if not (info.isfile() or info.isdir()):
        return None  # links and devices are never sent
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = 0
    return info


def pack_preview(paths: list[Path]) -> bytes:
    """One .tar.gz of the files and folders, each under its own name (a folder keeps its files together)."""
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        for path in paths:
            tar.add(path, arcname=path.resolve().name, filter=_plain)
    return buffer.getvalue()


def _print(preview: dict, url: str) -> None:
    print(
        f"preview {preview['id']} ({preview['organisation']}/{preview['system']}/{preview['benchmark']}): "
        f"{preview['status']}, tool {preview.get('tool') or '-'} {preview.get('tool_version') or ''}".rstrip()
    )
    print(f"  {preview['notice']}")
    print(f"  on the web: {url}/previews/{preview['id']}/")
    for point in (preview.get("result") or {}).get("points") or []:
        portal = point.get("portal") or {}
        print(
            f"  {point['label']}: system_tps {_fmt(portal.get('system_tps'))}  tps_per_user "
            f"{_fmt(portal.get('tps_per_user'))}  ttft_p90_ms {_fmt(portal.get('ttft_p90_ms'))}"
        )
    for finding in preview.get("findings") or []:
        print(f"  {finding['severity']} [{finding['rule']}] {finding['message']}")


def _fmt(value) -> str:
    return "-" if value is None else f"{value:.2f}"


def cmd_preview(args) -> int:
    paths = [Path(p) for p in args.paths]
    missing = [str(p) for p in paths if not p.exists() or p.is_symlink()]
    if missing:
        print(f"portal preview: no such file or folder: {', '.join(missing)}", file=sys.stderr)
        return EXIT_USAGE
    packed = pack_preview(paths)
    if len(packed) > MAX_PACKED_BYTES:
        print(
            f"portal preview: the files pack to {len(packed):,} bytes, more than the {MAX_PACKED_BYTES:,} one "
            "preview takes; give only the files the importers read (docs/importers.md).",
            file=sys.stderr,
        )
        return EXIT_USAGE
    name = args.name or ", ".join(p.resolve().name for p in paths)[:120]
    body = {
        "system": args.system,
        "benchmark": args.benchmark,
        "name": name,
        "files": [{"name": "preview.tar.gz", "content": base64.b64encode(packed).decode("ascii")}],
    }
    url = portal_url(args)
    try:
        client = client_from_args(args)
        preview = client.request("POST", "previews/", body=body, retries=0)
        deadline = time.monotonic() + args.timeout
        while preview["status"] == "checking" and time.monotonic() < deadline:
            time.sleep(1.0)
            preview = client.request("GET", f"previews/{preview['id']}/")
    except RemoteError as exc:
        print(f"portal preview: {token_refused(exc, url) or exc}", file=sys.stderr)
        return EXIT_USAGE
    _print(preview, url)
    if preview["status"] == "checking":
        print("portal preview: still checking; see the web page.", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_PASS if preview["status"] == "checked" and not preview.get("error_count") else EXIT_FAIL


def add_command(sub) -> None:
    command = sub.add_parser(
        "preview",
        help="upload another tool's output to a portal as a private preview of a system (not an MLPerf result)",
        description="Upload AIPerf, GuideLLM, inference-perf or vLLM bench output files or folders as a preview: "
        "checked and recomputed by the portal, private to your organisation, drawn beside published curves.",
    )
    command.add_argument("paths", nargs="+", metavar="PATH", help="the tool's output files or folders")
    add_url_and_token(command)
    command.add_argument("--system", required=True, help="your registered system's name (or id)")
    command.add_argument("--benchmark", required=True, help="the benchmark's model id, e.g. llama3_1-8b")
    command.add_argument("--name", help="the preview's name (default: the paths' names)")
    command.add_argument(
        "--timeout", type=float, default=300.0, help="seconds to wait for the check (default 300)"
    )
    command.set_defaults(func=cmd_preview)
