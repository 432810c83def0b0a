"""Benchmark of the raw-log recompute on a synthetic, schema-faithful events.jsonl.

    python bench/recompute.py [--size-mb 200] [--texts natural,novel] [--variants abdrj] [--out DIR] [--keep]
                              [--zst] [--repeat 3] [--chunk-events] [--replicate N] [--reuse-log]

Generates an events.jsonl of the requested size shaped like the official client's logs
(DESIGN.md, "events.jsonl"), then measures, each variant in a fresh subprocess so that peak RSS
is per variant (os.wait4 rusage of that child):

  (a) the portal's recompute: checker.recompute.replay.recompute_point, as `portal check` runs it;
  (b) the plain baseline of bench/baseline_recompute.py (json.loads per line, a dict per
      sample, one tokenizer.encode per text); its summary must equal (a)'s exactly;
  (c) the tokenizer alone, batch-encoding the texts a recompute has to count (distinct
      prompts + full outputs + after-first-chunk texts), pre-extracted to a file while
      generating so that only encoding is timed;
  (d) reading the file: `cat FILE | wc -l` (and `zstd -dc FILE.zst | wc -l` with --zst);
  (t) the portal's counter alone (checker.recompute.tokens.TokenCounter: tiktoken where checker.recompute.fastcount allows it)
      on the texts of (c);
  (r) the floor of reading: the log through the replay's own line reader (checker.read.event_log.iter_lines), every
      block hashed as the replay hashes it, nothing parsed;
  (j) (r) plus orjson.loads of every line: what reading and parsing alone cost, before any replay work;
  (p) (a) again under cProfile, printing the top functions by own time.

--texts takes a comma-separated list, each its own log and table (default natural,novel): natural, distinct texts
drawn from one Zipf-weighted vocabulary, prompts from a 5,000-prompt dataset, outputs streamed in chunks of 1-3
words (--chunk-events also writes the client's sample.recv_non_first per chunk); novel, texts that do not repeat
(every prompt new, every word a fresh pseudo-word), where no count cache helps and the tokenizer has to see every
byte; unique, the older generator (outputs cut from one long text). It prints baseline/recompute for each, and
recompute/tokenizer-alone with (c).

Times are the work inside the child (tokenizer loading, interpreter start and importing the checker excluded, the
same for every variant), wall and CPU (time.process_time: every thread of the child, which moves far less than
wall time when the machine is shared); with --repeat N the median of N runs is reported. This is a script, not a
test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DEFAULT_TOKENIZER = ROOT / "tests" / "checker" / "fixtures" / "tokenizer" / "tokenizer.json"
MS = 1_000_000

ENGLISH = """the of and to in is was for on that with as by at from his her an were are which this be has
had not but they their one all been who would there its more when time them new can other said about
only first over into some could these may after two also most like any people than then what years
world between under while state because city country government during through where music before
well work system number several however part many although life program series water known development
since later found against high early often around across public whether large each point cause quality
throughout beautiful instead despite measure ago current determine operation speak according south
recently everyone democratic shake bill here grow page southern role model serving request latency token
throughput memory batch cache queue server client stream answer question result value table figure
simple general small short long clear local global final total average always never perhaps rather
even still again already almost enough quite really""".split()
TOPICS = (
    "caching",
    "batch scheduling",
    "speculative decoding",
    "request routing",
    "paged attention",
    "quantization",
    "prefill chunking",
    "tensor parallelism",
    "load shedding",
    "KV cache reuse",
)
FAILURE_RATE = 0.004
WARMUP = 8
ACCURACY_SAMPLES = 32


# -- generation ------------------------------------------------------------------------------
def _words(tokenizer_path: Path) -> list[str]:
    vocab = json.loads(tokenizer_path.read_text())["model"]["vocab"]
    from_vocab = [
        t[1:] for t in vocab if t.startswith("\u0120") and t[1:].isascii() and t[1:].isalpha() and len(t) > 3
    ]
    return ENGLISH + from_vocab


def _corpus(rng: random.Random, words: list[str], n_words: int) -> tuple[str, list[int]]:
    """English-like text and the offsets where its words start."""
    parts: list[str] = []
    starts: list[int] = []
    pos = 0
    sentence = 0
    for _ in range(n_words):
        w = rng.choice(words)
        if sentence == 0:
            w = w.capitalize()
        roll = rng.random()
        if roll < 0.01:
            w = str(rng.randrange(1, 2030))
        elif roll < 0.012:
            w = rng.choice(("café", "naïve", "Zürich", "—", "résumé"))
        sep = " "
        sentence += 1
        if sentence > rng.randrange(6, 22):
            w += rng.choice(".....?!")
            sentence = 0
            sep = "\n" if rng.random() < 0.15 else " "
        elif rng.random() < 0.06:
            w += ","
        starts.append(pos)
        parts.append(w + sep)
        pos += len(w) + 1
    return "".join(parts), starts


class Dataset:
    def __init__(self, rng: random.Random, words: list[str], n_prompts: int = 300) -> None:
        self.rng = rng
        self.prompts = []
        for i in range(n_prompts):
            context = " ".join(rng.choice(words) for _ in range(rng.randrange(30, 400)))
            self.prompts.append(
                f"Sample {i}: explain {rng.choice(TOPICS)} for an LLM serving system. Context: {context}"
            )
        self.prompts_json = [json.dumps(p, ensure_ascii=False) for p in self.prompts]
        self.corpus, self.starts = _corpus(rng, words, 1_500_000)

    def prompt(self) -> tuple[int, str]:
        p = self.rng.randrange(len(self.prompts))
        return p, self.prompts_json[p]

    def output(self) -> tuple[str, str]:
        """(first chunk, rest) of one streamed response of ~100-1000 tokens."""
        rng = self.rng
        n = rng.randrange(60, 700)  # words; this tokenizer spends ~1.4 tokens a word
        i = rng.randrange(0, len(self.starts) - n - 2)
        text = self.corpus[self.starts[i] : self.starts[i + n] - 1]
        first_end = self.starts[i + 1] - 1 - self.starts[i]
        roll = rng.random()
        if roll < 0.03 and first_end > 2:
            first_end = rng.randrange(1, first_end)  # a chunk that ends inside a word
        elif roll < 0.04:
            first_end = self.starts[i + 2] - 1 - self.starts[i]  # two words in the first chunk
        elif roll < 0.045:
            first_end = 0  # an empty first chunk
        elif roll < 0.05:
            text = "\n" + text  # a leading newline as first chunk
            first_end = 1
        return text[:first_end], text[first_end:]


SYLLABLES = [c + v for c in "bcdfghjklmnprstvwz" for v in ("a", "e", "i", "o", "u", "ai", "ou")]


class NovelDataset:
    """Texts that do not repeat: every prompt is new and every word is a fresh pseudo-word of 3-5
    syllables (126 of them, ~10^10 words), so neither a prompt cache nor a piece cache can help."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.n = 0

    def _text(self, n_words: int) -> str:
        rng = self.rng
        sizes = rng.choices((3, 4, 5), k=n_words)
        syl = rng.choices(SYLLABLES, k=sum(sizes))
        words: list[str] = []
        at = 0
        for size in sizes:
            words.append("".join(syl[at : at + size]))
            at += size
        for i in range(0, n_words, rng.randrange(8, 20)):
            words[i] = words[i].capitalize()
            if i:
                words[i - 1] += "."
        return " ".join(words)

    def prompt(self) -> tuple[int, str]:
        self.n += 1
        body = self._text(self.rng.randrange(30, 400))
        return self.n, json.dumps(f"Sample {self.n}: explain {body}.")

    def output(self) -> tuple[str, str]:
        words = self._text(self.rng.randrange(60, 700)).split(" ")
        return words[0], " " + " ".join(words[1:])


class NaturalDataset:
    """Natural text (the default): every output is a distinct text, but its words come from one common vocabulary
    with a Zipf-like frequency (a few words very often, most rarely), as an LLM's outputs share a language. Prompts
    come from a dataset of 5,000 (a benchmark replays its dataset), outputs never repeat. An output is streamed: a
    chunk is one to three words (sometimes a word cut in two), the first chunk is the first element of the
    `[first_chunk, rest]` output, and with chunk_events the client's `sample.recv_non_first` is written per chunk."""

    def __init__(self, rng: random.Random, words: list[str], n_prompts: int = 5_000) -> None:
        self.rng = rng
        self.words = words
        self.cum = list(itertools.accumulate(1.0 / (rank + 8) ** 1.05 for rank in range(len(words))))
        self.prompts_json = [
            json.dumps(
                f"Sample {i}: explain {rng.choice(TOPICS)} for an LLM serving system. Context: "
                + self._text(rng.randrange(30, 400)),
                ensure_ascii=False,
            )
            for i in range(n_prompts)
        ]

    def _text(self, n_words: int) -> str:
        rng = self.rng
        words = rng.choices(self.words, cum_weights=self.cum, k=n_words)
        at = 0
        while at < n_words:  # sentences of 6-22 words, a capital first, a stop last, some commas and newlines
            words[at] = words[at].capitalize()
            end = min(n_words, at + rng.randrange(6, 22)) - 1
            roll = rng.random()
            words[end] += rng.choice(".....?!") + ("\n" if roll < 0.12 else "")
            if roll > 0.9 and end - at > 4:
                words[at + 2] += ","
            if roll < 0.02 and end > at:
                words[at + 1] = str(rng.randrange(1, 2030))
            elif roll < 0.024 and end > at:
                words[at + 1] = rng.choice(("café", "naïve", "Zürich", "—", "résumé"))
            at = end + 1
        return " ".join(words).replace("\n ", "\n")

    def prompt(self) -> tuple[int, str]:
        p = self.rng.randrange(len(self.prompts_json))
        return p, self.prompts_json[p]

    def chunks(self) -> list[str]:
        """One streamed response of ~100-1000 tokens, as the chunks the server sent."""
        rng = self.rng
        text = self._text(rng.randrange(60, 700))
        out: list[str] = []
        at = 0
        while at < len(text):
            end = at
            for _ in range(rng.choice((1, 1, 1, 2, 3))):
                nxt = text.find(" ", end + 1)
                end = len(text) if nxt < 0 else nxt
            if rng.random() < 0.03 and end - at > 3:
                end = at + rng.randrange(1, end - at)  # a chunk that ends inside a word
            out.append(text[at:end])
            at = end
        if rng.random() < 0.005:
            out.insert(0, "")  # an empty first chunk
        elif rng.random() < 0.005:
            out.insert(0, "\n")  # a lone newline as first chunk
        return out

    def output(self) -> tuple[str, str]:
        chunks = self.chunks()
        return chunks[0], "".join(chunks[1:])


TS = re.compile(rb'"timestamp_ns":(\d+)')
UUID = re.compile(rb'"sample_uuid":"([0-9a-f]{2})')


def replicate(source: Path, target: Path, copies: int, info: dict) -> dict:
    """A log `copies` times as long from a generated one, streamed: the lines of its tracking block repeated with
    every sample uuid made new (its first two hex digits replaced by two letters g-z, the copy's number) and every timestamp shifted
    past the previous copy, so that the replay sees `copies` x the tracked samples, in file order and with
    main-process time still monotonic; the header (warm-up) and the tail (accuracy) once. For a multi-GB memory
    figure without generating gigabytes at the generator's speed; the texts repeat, so its time is not a
    natural-text figure."""
    start = stop = t_start = t_stop = None
    with open(source, "rb") as f:
        for number, line in enumerate(f):
            if b"session.start_performance_tracking" in line:
                start, t_start = number, int(TS.search(line).group(1))
            elif b"session.stop_performance_tracking" in line:
                stop, t_stop = number, int(TS.search(line).group(1))
    assert start is not None and stop is not None and t_start is not None and t_stop is not None
    span = t_stop - t_start + 10 * MS
    written = events = 0
    with open(target, "wb") as out:
        for copy in range(copies):
            tag = bytes(
                (103 + copy // 20, 103 + copy % 20)
            )  # two letters of g-z: never a generated (hex) uuid
            with open(source, "rb") as f:
                for number, line in enumerate(f):
                    head, body = number <= start, start < number < stop
                    if (head and copy) or (not head and not body and copy < copies - 1):
                        continue  # the header once (first copy), the tail once (last copy)
                    if copy and not head:
                        line = TS.sub(
                            b'"timestamp_ns":%d' % (int(TS.search(line).group(1)) + copy * span), line, 1
                        )
                        if body:
                            line = UUID.sub(b'"sample_uuid":"' + tag, line, 1)
                    out.write(line)
                    written += len(line)
                    events += 1
    return {
        **info,
        "bytes": written,
        "events": events,
        "tracked_completed": info["tracked_completed"] * copies,
    }


def _uuid(rng: random.Random) -> str:
    return f"{rng.getrandbits(128):032x}"


def _line(kind: str, ts: int, uuid: str = "", data: str = "null", tail: str = "") -> str:
    return (
        f'{{"event_type":"{kind}","timestamp_ns":{ts},"sample_uuid":"{uuid}","conversation_id":"",'
        f'"turn":null,"data":{data}{tail}}}\n'
    )


def generate(
    path: Path,
    texts_path: Path,
    *,
    size_mb: float,
    concurrency: int,
    seed: int,
    tokenizer_path: Path,
    texts: str = "natural",
    chunk_events: bool = False,
) -> dict:
    """Write the synthetic log, and the texts a recompute must count (for variant c)."""
    rng = random.Random(seed)
    if texts == "novel":
        data: Dataset | NovelDataset | NaturalDataset = NovelDataset(rng)
    elif texts == "unique":
        data = Dataset(rng, _words(tokenizer_path))
    else:
        data = NaturalDataset(rng, _words(tokenizer_path))
    target = int(size_mb * 1024 * 1024)
    written = 0
    lines = 0
    tracked_samples = 0
    prompts_used: set[int] = set()
    texts_out = open(texts_path, "w", encoding="utf-8")
    out = open(path, "w", encoding="utf-8")

    def emit(line: str) -> None:
        nonlocal written, lines
        out.write(line)
        lines += 1
        written += len(line.encode("utf-8")) if not line.isascii() else len(line)

    heap: list[tuple] = []  # (file time, seq, kind, payload); main events carry their own timestamp
    seq = 0

    def push(at: int, kind: str, payload) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(heap, (at, seq, kind, payload))

    def issue(at: int, slot: int, tracked) -> None:
        push(at, "issue", (slot, tracked))

    def on_issue(at: int, slot: int, tracked) -> None:
        uuid = _uuid(rng)
        p, prompt_json = data.prompt()
        emit(
            _line(
                "sample.issued",
                at,
                uuid,
                f'["PromptData",{prompt_json},null,null,null,null,null,null]',
            )
        )
        ttft = int(rng.lognormvariate(18.4, 0.25))  # ~100 ms
        push(at + ttft, "recv_first", uuid)
        if tracked is None:  # warmup: never completes
            return
        accuracy = tracked is False
        if accuracy:
            first, rest = "", data.output()[0] + " 4."
            chunks = [first, rest]
        elif isinstance(data, NaturalDataset):
            chunks = data.chunks()
            first, rest = chunks[0], "".join(chunks[1:])
        else:
            first, rest = data.output()
            chunks = [first, rest]
        tokens = 1.4 * (rest.count(" ") + 1)
        complete = at + ttft + int(tokens * rng.uniform(8, 14) * MS)
        if chunk_events and len(chunks) > 1:  # the client streaming all chunks: one recv_non_first per chunk
            step = (complete - at - ttft) // len(chunks)
            for i in range(1, len(chunks)):
                push(at + ttft + i * step, "chunk", uuid)
        worker = slot % 2
        delivered = complete + rng.randrange(0, 3 * MS)  # the worker's line reaches the file later
        failed = not accuracy and rng.random() < FAILURE_RATE
        push(
            delivered,
            "complete",
            (uuid, complete, worker, first, rest, failed, slot, (p, prompt_json), tracked),
        )

    def on_complete(at: int, payload) -> None:
        nonlocal tracked_samples, issuing
        uuid, complete, worker, first, rest, failed, slot, (p, prompt_json), tracked = payload
        if failed:
            emit(
                _line(
                    "error.generic", at, uuid, '["ErrorData","ConnectionError","upstream closed the stream"]'
                )
            )
            emit(
                _line(
                    "sample.complete", complete, uuid, "null", f',"finish_reason":null,"worker_id":{worker}'
                )
            )
        else:
            reason = "length" if rest.count(" ") > 680 else "stop"
            out_json = (
                f'["TextModelOutput",[{json.dumps(first, ensure_ascii=False)},'
                f"{json.dumps(rest, ensure_ascii=False)}],null,null]"
            )
            emit(
                _line(
                    "sample.complete",
                    complete,
                    uuid,
                    out_json,
                    f',"finish_reason":"{reason}","worker_id":{worker}',
                )
            )
            if tracked:
                tracked_samples += 1
                if p not in prompts_used:
                    prompts_used.add(p)
                    texts_out.write(prompt_json + "\n")
                texts_out.write(json.dumps(first + rest, ensure_ascii=False) + "\n")
                if rest:
                    texts_out.write(json.dumps(rest, ensure_ascii=False) + "\n")
        if tracked and issuing:
            if written >= target * 0.995:
                issuing = False
            else:
                issue(at + rng.randrange(20_000, 80_000), slot, True)

    def drain() -> int:
        nonlocal tracking_started
        last = 0
        while heap:
            at, _, kind, payload = heapq.heappop(heap)
            last = max(last, at)
            if kind == "issue":
                on_issue(at, *payload)
            elif kind == "chunk":
                emit(_line("sample.recv_non_first", at, payload))
            elif kind == "recv_first":
                emit(_line("sample.recv_first", at, payload))
                if not tracking_started and not any(
                    k in ("recv_first", "issue", "chunk") for _, _, k, _ in heap
                ):
                    t = at + 5 * MS
                    emit(_line("session.start_performance_tracking", t))
                    tracking_started = True
                    for slot in range(concurrency):
                        t += rng.randrange(5_000, 40_000)
                        issue(t, slot, True)
            else:
                on_complete(at, payload)
        return last

    issuing = True
    tracking_started = False
    t = 1_000_000_000_000 + rng.randrange(0, 10**9)
    emit(_line("session.started", t))
    for slot in range(WARMUP):
        t += rng.randrange(10_000, 50_000)
        issue(t, slot, None)
    t = drain() + 2 * MS
    emit(_line("session.stop_performance_tracking", t))
    for i in range(ACCURACY_SAMPLES):
        issue(t + 10 * MS, i, False)
        t = drain()
    emit(_line("session.ended", t + MS))
    out.close()
    texts_out.close()
    return {
        "bytes": written,
        "events": lines,
        "tracked_completed": tracked_samples,
        "distinct_prompts": len(prompts_used),
    }


# -- variants (each runs in a fresh child process) --------------------------------------------
def _load_tokenizer(path: str):
    import tokenizers

    return tokenizers.Tokenizer.from_file(str(path))


def _vm_hwm_mb() -> int | None:
    """This process's own peak RSS (VmHWM is per address space, so nothing inherited from the parent)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) // 1024
    except OSError:
        pass
    return None


def child(variant: str, args) -> None:
    if variant == "gen":
        info = generate(
            Path(args.file),
            Path(args.file).with_name("texts.jsonl"),
            size_mb=args.size_mb,
            concurrency=args.concurrency,
            seed=args.seed,
            tokenizer_path=args.tokenizer,
            texts=args.texts,
            chunk_events=args.chunk_events,
        )
        Path(args.result).write_text(json.dumps(info))
        return
    tok = _load_tokenizer(args.tokenizer)
    import checker.recompute.replay  # noqa: F401  (importing the package takes ~1 s here: outside every timing)

    result: dict = {}
    start, start_cpu = time.perf_counter(), time.process_time()
    if variant in ("a", "p"):
        from checker.recompute.replay import recompute_point
        from checker.report import Findings

        findings = Findings()
        profiler = None
        if variant == "p":  # the same run under cProfile: where the time goes (slower than a)
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
        from checker.recompute.tokens import TokenCounter

        counter = TokenCounter(tok)
        summary = recompute_point(Path(args.file), tokenizer=counter, findings=findings, display="bench")
        result["engine"] = f"{counter.engine}, {counter.fast_texts:,} of {counter.texts:,} texts by tiktoken"
        if counter.fast_reason:
            result["engine"] += f" ({counter.fast_reason})"
        if profiler is not None:
            import io
            import pstats

            profiler.disable()
            buffer = io.StringIO()
            pstats.Stats(profiler, stream=buffer).sort_stats("tottime").print_stats(14)
            result["profile"] = buffer.getvalue()
        result["errors"] = [f.message for f in findings if f.severity == "error"][:5]
        result["summary"] = summary
    elif variant == "b":
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from baseline_recompute import recompute

        result["summary"] = recompute(Path(args.file), tok)
    elif variant in (
        "r",
        "j",
    ):  # the floors: reading the log as the replay does, then also parsing every line
        import hashlib

        import orjson

        from checker.read.event_log import iter_lines, open_binary

        def too_long(line: int, size: int) -> None:
            raise SystemExit(f"line {line} is {size} bytes")

        digest = hashlib.sha256()
        events = 0
        with open_binary(Path(args.file)) as stream:

            class Hashing:  # what the replay's reader does per block: read it and hash it
                def read(self, size: int = -1, /) -> bytes:
                    block = stream.read(size)
                    digest.update(block)
                    return block

            lines = iter_lines(Hashing(), max_line_bytes=64 * 1024 * 1024, on_too_long=too_long)
            if variant == "r":
                for _ in lines:
                    events += 1
            else:
                loads = orjson.loads
                for _, raw in lines:
                    loads(raw)
                    events += 1
        result["events"] = events
    elif variant in ("c", "t"):
        from checker.recompute.token_ledger import TOKENIZE_BATCH_CHARS

        if (
            variant == "t"
        ):  # the portal's counter (tiktoken where checker.recompute.fastcount allows it) on the same texts
            from checker.recompute.tokens import TokenCounter

            counter = TokenCounter(tok)
            result["engine"] = counter.engine

            def encode(batch, add_special_tokens=False):
                return [range(n) for n in counter.count(batch)]
        else:
            encode = getattr(tok, "encode_batch_fast", None) or tok.encode_batch
        encoding = 0.0
        tokens = texts = 0
        with open(args.file, encoding="utf-8") as f:
            batch: list[str] = []
            chars = 0
            for line in f:
                text = json.loads(line)
                batch.append(text)
                chars += len(text)
                if chars >= TOKENIZE_BATCH_CHARS:
                    t0 = time.perf_counter()
                    tokens += sum(len(e) for e in encode(batch, add_special_tokens=False))
                    encoding += time.perf_counter() - t0
                    texts += len(batch)
                    batch, chars = [], 0
            if batch:
                t0 = time.perf_counter()
                tokens += sum(len(e) for e in encode(batch, add_special_tokens=False))
                encoding += time.perf_counter() - t0
                texts += len(batch)
        result.update(encode_seconds=encoding, tokens=tokens, texts=texts)
    elapsed = time.perf_counter() - start
    result["cpu_seconds"] = (
        time.process_time() - start_cpu
    )  # every thread of this process, load-independent-ish
    result["seconds"] = result.get("encode_seconds", elapsed)
    result["hwm_mb"] = _vm_hwm_mb()
    with open(args.result, "w") as f:
        json.dump(result, f)


def run_child(cmd: list[str], *, shell: bool = False) -> tuple[float, int, float]:
    """(wall seconds, peak RSS in MiB, CPU seconds) of one child process, rusage from wait4 of that child."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, shell=shell)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"variant failed ({proc.returncode}): {cmd}")
    return wall, usage.ru_maxrss // 1024, usage.ru_utime + usage.ru_stime


def measure(variant: str, file: Path, tokenizer: Path, workdir: Path, repeat: int) -> dict:
    runs = []
    result_path = workdir / f"result_{variant}.json"
    for _ in range(repeat):
        if variant.startswith("d"):
            wall, rss, cpu = run_child(
                [
                    "/bin/sh",
                    "-c",
                    f"{'zstd -dc' if variant == 'd-zst' else 'cat'} '{file}' | wc -l > /dev/null",
                ]
            )
            runs.append({"seconds": wall, "rss_mb": rss, "cpu": cpu})
            continue
        wall, rss, cpu = run_child(
            [
                sys.executable,
                __file__,
                "--child",
                variant,
                "--file",
                str(file),
                "--tokenizer",
                str(tokenizer),
                "--result",
                str(result_path),
            ]
        )
        res = json.loads(result_path.read_text())
        res.update(rss_mb=res.get("hwm_mb") or rss, wall=wall, cpu=res["cpu_seconds"])
        runs.append(res)
    best = dict(runs[-1])
    best["seconds"] = statistics.median(r["seconds"] for r in runs)
    best["rss_mb"] = max(r["rss_mb"] for r in runs)
    best["all_seconds"] = [round(r["seconds"], 3) for r in runs]
    best["cpu"] = statistics.median(r["cpu"] for r in runs)
    return best


LABELS = {
    "a": "(a) portal recompute_point",
    "b": "(b) plain baseline",
    "c": "(c) tokenizer alone",
    "t": "(t) portal's counter alone",
    "d": "(d) cat | wc -l",
    "d-zst": "(d) zstd -dc | wc -l",
    "r": "(r) read + hash lines alone",
    "j": "(j) read + orjson every line",
    "p": "(p) recompute under cProfile",
}
GENERATED = ("events.jsonl", "events.jsonl.zst", "texts.jsonl", "gen.json") + tuple(
    f"result_{v}.json" for v in "abctrjp"
)


def bench_one(args, texts_kind: str, workdir: Path) -> dict:
    """Generate one log of the given texts and run the variants on it; prints its table, returns the results."""
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / "events.jsonl"
    texts = workdir / "texts.jsonl"
    t0 = time.perf_counter()
    # generated in a child too, so that this process stays small (a fork inherits its peak RSS)
    gen = [sys.executable, __file__, "--child", "gen", "--file", str(log), "--size-mb", str(args.size_mb)]
    gen += ["--concurrency", str(args.concurrency), "--seed", str(args.seed), "--texts", texts_kind]
    gen += ["--tokenizer", str(args.tokenizer), "--result", str(workdir / "gen.json")]
    if args.chunk_events:
        gen.append("--chunk-events")
    if not (args.reuse_log and (workdir / "gen.json").exists() and log.exists()):
        subprocess.run(gen, check=True)
    info = json.loads((workdir / "gen.json").read_text())
    if args.replicate > 1:
        big = workdir / f"events-x{args.replicate}.jsonl"
        info = replicate(log, big, args.replicate, info)
        log = big
    size = log.stat().st_size
    print(
        f"\n[{texts_kind}] generated {log} : {size / 1e6:,.1f} MB, {info['events']:,} events, "
        f"{info['tracked_completed']:,} tracked completed samples, {info['distinct_prompts']} distinct prompts, "
        f"in {time.perf_counter() - t0:.1f} s; load average {_load()}",
        flush=True,
    )
    if args.zst:
        subprocess.run(["zstd", "-q", "-f", "-T0", "-3", str(log), "-o", str(log) + ".zst"], check=True)
    mb = size / 1e6
    samples = info["tracked_completed"]
    results: dict[str, dict] = {}
    for v in args.variants:
        if v == "d":
            results["d"] = measure("d", log, args.tokenizer, workdir, args.repeat)
            if args.zst:
                results["d-zst"] = measure(
                    "d-zst", Path(str(log) + ".zst"), args.tokenizer, workdir, args.repeat
                )
        else:
            results[v] = measure(v, texts if v in "ct" else log, args.tokenizer, workdir, args.repeat)
    print(f"load average after the variants: {_load()}")
    header = (
        f"{'variant':32} {'seconds':>9} {'CPU s':>8} {'MB/s':>8} {'samples/s':>10} {'us/event':>9} "
        f"{'peak RSS MB':>12}  runs"
    )
    print(header)
    for key, r in results.items():
        sec = r["seconds"]
        per_event = sec / info["events"] * 1e6
        print(
            f"{LABELS[key]:32} {sec:9.2f} {r['cpu']:8.2f} {mb / sec:8.1f} {samples / sec:10.0f} {per_event:9.2f} "
            f"{r['rss_mb']:12d}  {r['all_seconds']}"
        )
    if "c" in results:
        print(f"(c) encoded {results['c']['texts']:,} texts, {results['c']['tokens']:,} tokens")
    if "a" in results:
        print(f"(a) token counts: {results['a'].get('engine')}")
        if results["a"].get("errors"):
            print("(a) error findings:", results["a"]["errors"])
    if "a" in results and "b" in results:
        got, want = results["a"]["summary"], results["b"]["summary"]
        differs = [k for k in want if got.get(k) != want[k]]  # every figure the baseline computes
        print(f"identical: {'no' if differs else 'yes'} ({len(want)} figures compared)")
        for k in differs:
            print("  differs:", k)
        print(
            f"[{texts_kind}] baseline/recompute (b)/(a) = {results['b']['seconds'] / results['a']['seconds']:.2f} "
            f"in wall time, {results['b']['cpu'] / results['a']['cpu']:.2f} in CPU time (target >= 10)"
        )
    if "a" in results and "c" in results:
        print(f"recompute/tokenizer alone (a)/(c) = {results['a']['seconds'] / results['c']['seconds']:.2f}")
    if "t" in results and "c" in results:
        print(
            f"portal's counter/tokenizer alone (t)/(c) = {results['t']['seconds'] / results['c']['seconds']:.2f}"
        )
    for floor in "rj":
        if "a" in results and floor in results:
            a, f = results["a"], results[floor]
            print(
                f"{LABELS[floor]} is {f['seconds'] / a['seconds']:.0%} of (a) in wall time, {f['cpu'] / a['cpu']:.0%} "
                f"in CPU time; (a) - {floor} = {a['seconds'] - f['seconds']:.2f} s wall, {a['cpu'] - f['cpu']:.2f} s CPU"
            )
    if "p" in results:
        print("\n(p) profile of the recompute, top functions by own time:")
        print(results["p"]["profile"])
    return results


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=float, default=200)
    parser.add_argument("--out", type=Path, help="directory for the generated files (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    parser.add_argument("--zst", action="store_true", help="also write events.jsonl.zst and time reading it")
    parser.add_argument("--repeat", type=int, default=1, help="runs per variant; the median is reported")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--seed", type=int, default=20260501)
    parser.add_argument("--tokenizer", type=Path, default=DEFAULT_TOKENIZER)
    parser.add_argument(
        "--variants", default="abdrj", help="which of a, b, c, d, t, r, j, p to run (default: abdrj)"
    )
    parser.add_argument(
        "--texts",
        default="natural,novel",
        help="comma-separated logs to bench, each its own file (default: natural,novel): natural, distinct texts "
        "from a common Zipf-weighted vocabulary, streamed in chunks; novel, texts that do not repeat (every prompt "
        "new, every word a fresh pseudo-word); unique, the older generator (outputs cut from one long text)",
    )
    parser.add_argument(
        "--chunk-events",
        action="store_true",
        help="write one sample.recv_non_first per streamed chunk (the client streaming all chunks)",
    )
    parser.add_argument(
        "--replicate",
        type=int,
        default=1,
        help="measure on a log N times as long: the generated log's tracking block repeated N times with new "
        "uuids and shifted timestamps (for the memory of a multi-GB log; its texts repeat)",
    )
    parser.add_argument(
        "--reuse-log", action="store_true", help="use the events.jsonl a --keep run left in --out, if there"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--file", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        if args.child == "gen" and args.texts not in ("natural", "novel", "unique"):
            raise SystemExit(f"unknown --texts {args.texts}")
        child(args.child, args)
        return

    kinds = [k.strip() for k in args.texts.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in ("natural", "novel", "unique")]
    if unknown:
        raise SystemExit(f"unknown --texts {', '.join(unknown)}")
    base = args.out or Path(tempfile.mkdtemp(prefix="bench-recompute-"))
    ratios: dict[str, tuple[float, float]] = {}
    try:
        for kind in kinds:
            workdir = base / kind if len(kinds) > 1 else base
            results = bench_one(args, kind, workdir)
            if "a" in results and "b" in results:
                ratios[kind] = (
                    results["b"]["seconds"] / results["a"]["seconds"],
                    results["b"]["cpu"] / results["a"]["cpu"],
                )
            if not args.keep:
                for name in GENERATED:
                    (workdir / name).unlink(missing_ok=True)
        if ratios:
            print(
                "\nbaseline/recompute, wall (CPU): "
                + ", ".join(f"{k} {wall:.2f}x ({cpu:.2f}x)" for k, (wall, cpu) in ratios.items())
                + " (target >= 10)"
            )
    finally:
        if not args.keep and not args.out:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
