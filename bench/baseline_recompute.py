"""The plain first-version recompute, kept as the benchmark's baseline (variant b).

Written the way a first version would be: `json.loads` per line, a dict per sample holding
everything (texts included), one `tokenizer.encode` call per text, numpy statistics at the
end. Same semantics as checker.recompute.replay.PointReplay (DESIGN.md, "Metrics"), no findings.

As a whole process, the plain script a first version would be (timed against `portal check` from outside, interpreter
start and tokenizer loading included):

    python bench/baseline_recompute.py EVENTS_JSONL --tokenizer TOKENIZER_JSON   # prints the summary as JSON
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from checker.read.event_log import FINISH_REASONS, open_binary, output_texts
from checker.recompute.stats import summarize


def recompute(path: Path, tokenizer) -> dict:
    samples: dict[str, dict] = {}
    ttft: list[int] = []  # in file order of recv_first, like the streaming replay
    completed: list[dict] = []  # in file order of complete
    tracking = False
    blocks: list[list] = []
    stop_ns = None
    n_issued = n_completed = n_failed = warmup_issued = 0
    finish = dict.fromkeys(FINISH_REASONS, 0)
    with open_binary(path) as stream:
        for raw in stream:
            if not raw.strip():
                continue
            event = json.loads(raw)
            kind = event["event_type"]
            ts = event["timestamp_ns"]
            uuid = event.get("sample_uuid")
            if kind == "session.start_performance_tracking":
                if not tracking:
                    tracking = True
                    blocks.append([ts, None])
            elif kind == "session.stop_performance_tracking":
                tracking = False
                stop_ns = ts
            elif kind == "session.ended":
                break
            elif kind.startswith("error."):
                s = samples.get(uuid)
                if s is not None and s["state"] == "inflight":
                    n_failed += 1
            elif kind == "sample.issued":
                if uuid in samples:
                    continue
                if not tracking:
                    if not blocks:
                        warmup_issued += 1  # issued before the first start_performance_tracking
                    continue
                n_issued += 1
                data = event.get("data")
                samples[uuid] = {
                    "state": "inflight",
                    "issued": ts,
                    "recv_first": None,
                    "block": len(blocks) - 1,
                    "prompt": None,
                    "token_ids": None,
                    "output": None,
                    "complete": None,
                }
                if isinstance(data, list) and len(data) > 1:
                    if len(data) > 2 and isinstance(data[2], list):
                        samples[uuid]["token_ids"] = data[2]
                    elif isinstance(data[1], str):
                        samples[uuid]["prompt"] = data[1]
            elif kind == "sample.recv_first":
                s = samples.get(uuid)
                if s is not None and s["state"] == "inflight" and s["recv_first"] is None:
                    s["recv_first"] = ts
                    ttft.append(ts - s["issued"])
            elif kind == "sample.complete":
                s = samples.get(uuid)
                if s is None or s["state"] != "inflight":
                    continue
                s["state"] = "done"
                completed.append(s)
                s["complete"] = ts
                n_completed += 1
                b = blocks[s["block"]]
                if b[1] is None or ts > b[1]:
                    b[1] = ts
                reason = event.get("finish_reason")
                if isinstance(reason, str):
                    finish[reason if reason in finish else "other"] += 1
                s["output"] = event.get("data")

    latency, isl, osl, tpot = [], [], [], []
    for s in samples.values():
        if s["token_ids"] is not None:
            isl.append(len(s["token_ids"]))
        elif s["prompt"] is not None:
            isl.append(len(tokenizer.encode(s["prompt"], add_special_tokens=False)))
    for s in completed:
        latency.append(s["complete"] - s["issued"])
        if s["output"] is None:
            continue
        full, after = output_texts(s["output"])
        if full:
            n = len(tokenizer.encode(full, add_special_tokens=False))
            if n > 0:
                osl.append(n)
        if s["recv_first"] is not None and after:
            n = len(tokenizer.encode(after, add_special_tokens=False))
            if n > 0:
                tpot.append((s["complete"] - s["recv_first"]) / n)

    duration_ns = sum(latest - start for start, latest in blocks if latest is not None)
    seconds = duration_ns / 1e9
    osl_a = np.array(osl, dtype=np.int64)
    total_tokens = int(osl_a.sum())
    return {
        "n_samples_issued": n_issued,
        "n_samples_completed": n_completed,
        "n_samples_failed": n_failed,
        "duration_ns": duration_ns,
        "ttft": summarize(np.array(ttft, dtype=np.int64), early_stopping=True),
        "tpot": summarize(np.array(tpot, dtype=np.float64), early_stopping=True),
        "latency": summarize(np.array(latency, dtype=np.int64), early_stopping=True),
        "output_sequence_lengths": summarize(osl_a, early_stopping=False),
        "input_sequence_lengths": summarize(np.array(isl, dtype=np.int64), early_stopping=False),
        "qps": n_completed / seconds if seconds > 0 else None,
        "tps": total_tokens / seconds if seconds > 0 else None,
        "finish_reason_counts": finish,
        "window_ns": [blocks[0][0], stop_ns] if blocks else None,
        "warmup": {"issued": warmup_issued},
    }


def main() -> None:
    import argparse
    import json as _json
    import sys

    import tokenizers

    parser = argparse.ArgumentParser(description="the plain baseline recompute of one events.jsonl")
    parser.add_argument("events", type=Path)
    parser.add_argument("--tokenizer", type=Path, required=True, help="the model's tokenizer.json")
    args = parser.parse_args()
    summary = recompute(args.events, tokenizers.Tokenizer.from_file(str(args.tokenizer)))
    _json.dump(summary, sys.stdout, default=float)
    print()


if __name__ == "__main__":
    main()
