"""`portal verify PACK`: check an evidence pack offline (checker.evidence.verify, docs/evidence.md)."""

from __future__ import annotations

import base64
import binascii
import json
import sys
from pathlib import Path

from checker.evidence.note import NoteError, VerifierKey, parse_key_list

EXIT_VERIFIED, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _keys(values: list[str]) -> list[VerifierKey]:
    keys = []
    for value in values:
        path = Path(value)
        keys += (
            parse_key_list(path.read_text(encoding="utf-8")) if path.is_file() else [VerifierKey.parse(value)]
        )
    return keys


def _proof_lines(text: str) -> list[bytes]:
    return [base64.b64decode(line, validate=True) for line in text.split() if line]


def cmd_verify(args) -> int:
    from checker.evidence.verify import verify_pack

    try:
        keys = _keys(args.key or [])
    except (NoteError, OSError, UnicodeDecodeError) as exc:
        print(f"portal verify: --key: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not Path(args.pack).exists():
        print(f"portal verify: no such pack: {args.pack}", file=sys.stderr)
        return EXIT_USAGE
    if args.with_raw_logs and not args.tokenizer:
        print(
            "portal verify: --with-raw-logs recomputes every point: give the benchmark's --tokenizer",
            file=sys.stderr,
        )
        return EXIT_USAGE
    older = proof = None
    if args.since:
        if not args.consistency_proof:
            print(
                "portal verify: --since needs --consistency-proof (GET /log/proof/consistency)",
                file=sys.stderr,
            )
            return EXIT_USAGE
        try:
            older = Path(args.since).read_text(encoding="utf-8")
            proof = _proof_lines(Path(args.consistency_proof).read_text(encoding="ascii"))
        except (OSError, UnicodeDecodeError, binascii.Error) as exc:
            print(f"portal verify: {exc}", file=sys.stderr)
            return EXIT_USAGE
    recompute = None
    if args.with_raw_logs:
        from checker.cli.local_check import TokenizerError, check, load_tokenizer

        try:
            tokenizer = load_tokenizer(args.tokenizer)
        except TokenizerError as exc:
            print(f"portal verify: {exc}", file=sys.stderr)
            return EXIT_USAGE

        def recompute(paths):
            return check(paths, tokenizer=tokenizer)

    report = verify_pack(
        Path(args.pack),
        keys=keys,
        with_raw_logs=args.with_raw_logs,
        recompute=recompute,
        older_checkpoint=older,
        consistency_proof=proof,
    )
    if args.json:
        Path(args.json).write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
    sys.stdout.write(report.text())
    return EXIT_VERIFIED if report.ok else EXIT_FAILED


def add_command(sub) -> None:
    command = sub.add_parser(
        "verify",
        help="verify an evidence pack offline: manifest, signature, log inclusion, every hash",
        description="Check an evidence pack downloaded from the portal (docs/evidence.md). Exit 0 only when "
        "every check holds, 1 when one fails (the report names it), 2 on a usage error.",
    )
    command.add_argument("pack", metavar="PACK", help="the pack's .zip, or the folder it unzips to")
    command.add_argument(
        "--key",
        action="append",
        metavar="KEY",
        help="the portal's public key (name+keyid+base64, from /log/keys), or a file of them; without it the "
        "pack's own keys are used, with a warning",
    )
    command.add_argument(
        "--with-raw-logs",
        action="store_true",
        help="fetch the raw archives listed in fetch.txt (unless the pack holds them) and recompute every point",
    )
    command.add_argument(
        "--tokenizer", metavar="PATH", help="the benchmark's tokenizer.json, for --with-raw-logs"
    )
    command.add_argument(
        "--since",
        metavar="CHECKPOINT",
        help="an older checkpoint of the log (a file): check the log only grew",
    )
    command.add_argument(
        "--consistency-proof",
        metavar="FILE",
        help="the consistency proof from --since's size to the pack's (GET /log/proof/consistency)",
    )
    command.add_argument("--json", metavar="OUT", help="also write the report as JSON to OUT")
    command.set_defaults(func=cmd_verify)
