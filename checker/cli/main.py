"""The `portal` command line: `portal check` runs the checker locally (no Django, no network);
`portal assemble` writes the bundle the portal builds from run archives; `portal import` reads another
benchmark tool's output and recomputes its figures (checker.cli.import_pipeline); `portal verify` checks an
evidence pack offline (checker.cli.verify)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from checker.cli import verify

EXIT_PASS, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse exits 2 on usage errors, which is our contract too
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _progress_printer(stream):
    position = {"text": ""}

    def show(stage: str, done: int, total: int, message: str) -> None:
        if stage == "recompute" and total:
            position["text"] = f"[{done + 1 if done < total else done}/{total}]"
            stream.write(f"\r{position['text']} {message[:70]:<70}")
            if done == total:
                stream.write("\n")
            stream.flush()
        elif stage == "recompute-point":  # inside a long raw log: how far it has read
            stream.write(f"\r{position['text']} {message[:70]:<70}")
            stream.flush()

    return show


def cmd_check(args) -> int:
    from checker.cli.local_check import TokenizerError, check
    from checker.cli.text_report import render_text
    from checker.read.inputs import Limits

    missing = [p for p in args.paths if not Path(p).exists()]
    if missing and len(missing) == len(args.paths):
        print(f"portal check: no such file or folder: {', '.join(missing)}", file=sys.stderr)
        return EXIT_USAGE
    limits = Limits(
        **{
            k: v
            for k, v in {
                "max_total_bytes": args.max_total_bytes,
                "max_line_bytes": args.max_line_bytes,
            }.items()
            if v is not None
        }
    )
    progress = _progress_printer(sys.stderr) if sys.stderr.isatty() and not args.quiet else None
    slo = None
    if args.slo:
        from checker.recompute.goodput import SloSpecError, parse_slo

        try:
            slo = parse_slo(args.slo)
        except SloSpecError as exc:
            print(f"portal check: --slo: {exc}", file=sys.stderr)
            return EXIT_USAGE
    try:
        report = check(
            args.paths,
            tokenizer=args.tokenizer,
            ruleset=args.ruleset,
            limits=limits,
            rel_tol=args.tolerance,
            official=args.official,
            progress=progress,
            slo=slo,
        )
    except TokenizerError as exc:
        print(f"portal check: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        Path(args.json).write_text(report.to_json(), encoding="utf-8")
    if args.format == "json":
        sys.stdout.write(report.to_json() + "\n")
    else:
        sys.stdout.write(render_text(report))
    if report.unreadable:
        return EXIT_USAGE
    return EXIT_FAIL if report.verdict == "fail" else EXIT_PASS


def cmd_assemble(args) -> int:
    import tempfile

    from checker.cli.assemble import PENDING_SUBMISSION_ID, AssemblyError, assemble, organisation_of
    from checker.read.inputs import Limits, open_inputs
    from checker.report import Findings

    missing = [p for p in args.paths if not Path(p).exists()]
    if missing:
        print(f"portal assemble: no such file or folder: {', '.join(missing)}", file=sys.stderr)
        return EXIT_USAGE
    findings = Findings()
    with tempfile.TemporaryDirectory(prefix="portal-assemble-") as sandbox:
        layout = open_inputs(args.paths, workdir=Path(sandbox), limits=Limits(), findings=findings)
        if not layout.points:
            for f in findings:
                print(f"{f.severity}: {f.rule}: {f.message}", file=sys.stderr)
            print("portal assemble: no load point found in the inputs", file=sys.stderr)
            return EXIT_USAGE
        organisation = args.organisation or organisation_of(layout)
        submission_id = args.submission_id or layout.submission_id or PENDING_SUBMISSION_ID
        try:
            result = assemble(
                layout,
                Path(args.out),
                organisation=organisation,
                submission_id=submission_id,
                include_raw_logs=not args.no_raw_logs,
            )
        except (AssemblyError, OSError) as exc:
            print(f"portal assemble: {exc}", file=sys.stderr)
            return EXIT_USAGE
    findings.extend(result.findings)
    for f in findings:
        where = f" ({f.file})" if f.file else ""
        print(f"{f.severity}: {f.rule}: {f.message}{where}", file=sys.stderr)
    print(f"{result.root}: {len(result.points)} point(s), {result.files} files, {result.bytes:,} bytes")
    for key in sorted(result.points, key=lambda k: (k.rsplit("/r", 1)[0], int(k.rsplit("/r", 1)[1]))):
        print(f"  results/{key}/")
    return EXIT_FAIL if any(f.severity == "error" for f in findings) else EXIT_PASS


def cmd_import(args) -> int:
    from checker.cli.import_pipeline import import_runs, render_import_text
    from checker.read import kinds
    from checker.recompute.imported import Slo

    missing = [p for p in args.paths if not Path(p).exists()]
    if missing and len(missing) == len(args.paths):
        print(f"portal import: no such file or folder: {', '.join(missing)}", file=sys.stderr)
        return EXIT_USAGE
    if args.tool is not None and args.tool not in {k.name for k in kinds.importers()}:
        names = ", ".join(k.name for k in kinds.importers())
        print(f"portal import: --tool {args.tool} is unknown; use one of: {names}", file=sys.stderr)
        return EXIT_USAGE
    result = import_runs(
        args.paths,
        tool=args.tool,
        slo=Slo(ttft_ms=args.slo_ttft_ms, tpot_ms=args.slo_tpot_ms),
        rel_tol=args.tolerance,
    )
    if args.json:
        Path(args.json).write_text(result.to_json() + "\n", encoding="utf-8")
    sys.stdout.write(render_import_text(result))
    if not result.points:
        return EXIT_USAGE
    return EXIT_FAIL if result.verdict == "fail" else EXIT_PASS


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="portal", description="Endpoints Portal command line.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    check = sub.add_parser("check", help="check a bundle or run archives locally, recomputing every metric")
    check.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="bundle folder or archive (.tar.gz/.tar.zst/.zip), run archives or run folders",
    )
    check.add_argument(
        "--tokenizer",
        required=True,
        metavar="PATH",
        help="the benchmark model's tokenizer folder (tokenizer.json, tokenizer_config.json, chat template) or its tokenizer.json",
    )
    check.add_argument("--json", metavar="OUT", help="also write the JSON report to OUT")
    check.add_argument("--format", choices=("text", "json"), default="text", help="what to print")
    check.add_argument(
        "--ruleset", default="endpoints-v1.0", help="rule set version (default endpoints-v1.0)"
    )
    check.add_argument("--tolerance", type=float, default=1e-9, help="relative tolerance for floats")
    check.add_argument(
        "--official",
        action="store_true",
        help="also run the official checker when installed and report disagreements",
    )
    check.add_argument("--max-total-bytes", type=int, help="cap on uncompressed bytes read from archives")
    check.add_argument(
        "--slo",
        metavar="TARGETS",
        help="per-request targets, e.g. ttft_ms=300,tpot_ms=50 (or interactivity=20 tokens/s/user): "
        "prints each point's SLO attainment and goodput, and adds 'slo' to every point of the JSON report",
    )
    check.add_argument("--max-line-bytes", type=int, help="cap on one events.jsonl line")
    check.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    check.set_defaults(func=cmd_check)
    assemble = sub.add_parser("assemble", help="write the bundle the portal assembles from run archives")
    assemble.add_argument(
        "paths", nargs="+", metavar="PATH", help="run archives or run folders (one per load point)"
    )
    assemble.add_argument(
        "--out", required=True, metavar="DIR", help="folder to write <org>/<submission_id>/ into"
    )
    assemble.add_argument(
        "--organisation",
        metavar="ORG",
        help="organisation folder (default: system_desc.json submitter_org_names)",
    )
    assemble.add_argument(
        "--submission-id",
        metavar="ID",
        help="submission id folder (default: pending-submission-id, as the official builder)",
    )
    assemble.add_argument(
        "--no-raw-logs",
        action="store_true",
        help="leave out events.jsonl[.zst] and power/ (the official bundle has neither)",
    )
    assemble.set_defaults(func=cmd_assemble)
    _add_import_command(sub)
    verify.add_command(sub)
    _add_remote_commands(sub)
    return parser


def _add_import_command(sub) -> None:
    from checker.read import kinds
    from checker.recompute.imported import DEFAULT_TPOT_SLO_MS, DEFAULT_TTFT_SLO_MS

    names = [k.name for k in kinds.importers()]
    command = sub.add_parser(
        "import",
        help="read another benchmark tool's output, recompute its figures from its per-request records",
        description="Per load point: the tool's own figures, the same recomputed from its per-request records "
        "with the tool's definitions, and the portal's metrics and goodput (docs/importers.md). "
        "Exit 0 when every figure is reproduced, 1 when one is not or a file is bad, 2 when nothing was read.",
    )
    command.add_argument(
        "paths", nargs="+", metavar="PATH", help="the tool's output files, or the folder it wrote them to"
    )
    command.add_argument(
        "--tool", choices=names, metavar="NAME", help=f"read only this tool's files ({', '.join(names)})"
    )
    command.add_argument("--json", metavar="OUT", help="also write the comparison as JSON to OUT")
    command.add_argument("--tolerance", type=float, default=1e-9, help="relative tolerance (default 1e-9)")
    command.add_argument(
        "--slo-ttft-ms",
        type=float,
        default=DEFAULT_TTFT_SLO_MS,
        help="goodput's TTFT limit in ms (default 2000)",
    )
    command.add_argument(
        "--slo-tpot-ms",
        type=float,
        default=DEFAULT_TPOT_SLO_MS,
        help="goodput's TPOT limit in ms (default 100)",
    )
    command.set_defaults(func=cmd_import)


def _add_remote_commands(sub) -> None:
    """`submit`, `status` and `preview` talk to a portal over HTTP; they live in checker.cli.remote when present."""
    try:
        from checker.cli.remote import commands
    except ImportError:
        return
    commands.add_commands(sub)
    from checker.cli.remote import preview

    preview.add_command(sub)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
