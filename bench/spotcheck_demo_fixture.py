"""Make the demo's spot-check evidence: a real GuideLLM 0.8.1 run, through the egress guard, against a `guidellm
mock-server` started with the settings NimbusCloud's NB-2 c2 point was recorded against (the shared samples'
second-system README: TTFT 94 +- 23.5 ms, ITL 11.2 +- 2.8 ms, 120 +- 30 output tokens), at concurrency 2 for 30 s
(PORTAL_SPOTCHECK_DURATION_S's default). Writes benchmarks.json, egress.json and guidellm.log to
tests/fixtures/spotcheck/nb2-c2/, which seed_demo records as the NB-2 result's finished spot-check.

    make guidellm
    .venv/bin/python bench/spotcheck_demo_fixture.py --port 9120
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from portal.egress import EgressProxy  # noqa: E402
from spotchecks.runner import LoadSpec, run_guidellm  # noqa: E402

OUT = ROOT / "tests" / "fixtures" / "spotcheck" / "nb2-c2"
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
MOCK_ARGS = [
    "--model", MODEL, "--ttft-ms", "94", "--ttft-ms-std", "23.5", "--itl-ms", "11.2", "--itl-ms-std", "2.8",
    "--output-tokens", "120", "--output-tokens-std", "30",
]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=9120)
    parser.add_argument("--duration", type=int, default=30)
    parser.add_argument("--guidellm", default=str(ROOT / ".venv-guidellm" / "bin" / "guidellm"))
    parser.add_argument("--tokenizer", default=str(ROOT / "portal_data" / "tokenizers" / "sample-bpe-4k"))
    args = parser.parse_args()
    mock = subprocess.Popen(
        [args.guidellm, "mock-server", "--host", "127.0.0.1", "--port", str(args.port), *MOCK_ARGS],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{args.port}/health", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("the mock did not come up") from None
                time.sleep(0.5)
        spec = LoadSpec(concurrency=2, duration_s=args.duration, model_name=MODEL, output_tokens=120)
        with (
            tempfile.TemporaryDirectory() as tmp,
            EgressProxy(f"http://127.0.0.1:{args.port}", allow_loopback=True) as proxy,
        ):
            output = run_guidellm(
                proxy.url, spec, guidellm_bin=args.guidellm, tokenizer=args.tokenizer, workdir=Path(tmp)
            )
            if output.benchmarks is None:
                raise SystemExit(output.log.decode(errors="replace")[-3000:])
            OUT.mkdir(parents=True, exist_ok=True)
            (OUT / "benchmarks.json").write_bytes(output.benchmarks.read_bytes())
            (OUT / "guidellm.log").write_bytes(output.log)
        record = proxy.record
        egress = {
            "forwarded": record.forwarded,
            "refused": dict(record.refused),
            "upstream_errors": record.upstream_errors,
            "last_refusal": record.last_refusal[:500],
        }
        (OUT / "egress.json").write_text(json.dumps(egress, indent=2, sort_keys=True))
        print(f"wrote {OUT}: exit {output.returncode}, {record.forwarded} requests forwarded")
    finally:
        mock.terminate()
        mock.wait(timeout=30)


if __name__ == "__main__":
    main()
