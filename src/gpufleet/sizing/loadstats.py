"""What a load test measured, as numbers: percentiles, one level's summary, the knee, the result JSON.

Pure functions over `Sample`s; the HTTP client that produces them is `gpufleet.sizing.loadtest`. The
result JSON is what `gpufleet plan capacity --from-loadtest` reads (`gpufleet.sizing.capacity.per_node_qps`):

    {"url", "model", "slo_p95_ms", "token_count_source": "usage" | "deltas",
     "levels": [{"concurrency", "requests", "errors", "error_rate", "requests_per_s", "output_tokens_per_s",
                 "latency_ms": {"p50", "p95", "p99"}, "ttft_ms": {"p50", "p95"},
                 "top_errors": [{"message", "count"}]}],
     "knee": {"concurrency", "requests_per_s"} | null}
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence

from msgspec import Struct


class Sample(Struct, frozen=True):
    """One request's outcome. Times in milliseconds from just before the request was sent."""

    ok: bool
    latency_ms: float
    ttft_ms: float | None = None  # None when no content delta arrived
    output_tokens: int = 0
    usage_reported: bool = False  # output_tokens came from the server's usage chunk, not from counting deltas
    prompt_tokens: int | None = None  # the usage chunk's prompt_tokens (None when the server sent no usage)
    error: str | None = None
    status: int = 0  # HTTP status of an error answer, else 0
    fatal: bool = False  # more load cannot change it: the request is wrong or the server unreachable


class LevelRun(Struct, frozen=True):
    """All samples of one concurrency level and the seconds from its start to its last completion."""

    concurrency: int
    samples: tuple[Sample, ...]
    elapsed_s: float


def percentile(values: Iterable[float], q: float) -> float | None:
    """The q-th percentile (0 <= q <= 100) by linear interpolation between closest ranks; None for no values.

    Sort the n values x[0] <= ... <= x[n-1]; h = (n - 1) * q / 100; the answer is
    x[floor(h)] + (h - floor(h)) * (x[floor(h) + 1] - x[floor(h)]): Hyndman & Fan's definition 7, the
    default of numpy.percentile and of spreadsheets' PERCENTILE.INC, so finance can recompute it.
    """
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be within 0..100, not {q}")
    xs = sorted(values)
    if not xs:
        return None
    h = (len(xs) - 1) * q / 100
    lo = math.floor(h)
    if lo + 1 >= len(xs):
        return float(xs[-1])
    return xs[lo] + (h - lo) * (xs[lo + 1] - xs[lo])


def _rounded(x: float | None, digits: int = 1) -> float | None:
    return None if x is None else round(float(x), digits)


def level_stats(run: LevelRun) -> dict:
    """One level of the result. Rates count successful requests only (a failed request is not throughput);
    percentiles are over successful requests, null when there were none."""
    ok = [x for x in run.samples if x.ok]
    errors = len(run.samples) - len(ok)
    seconds = max(run.elapsed_s, 1e-9)
    latency = [x.latency_ms for x in ok]
    ttft = [x.ttft_ms for x in ok if x.ttft_ms is not None]
    return {
        "concurrency": run.concurrency,
        "requests": len(run.samples),
        "errors": errors,
        "error_rate": round(errors / len(run.samples), 4) if run.samples else 0.0,
        "requests_per_s": round(len(ok) / seconds, 3),
        "output_tokens_per_s": round(sum(x.output_tokens for x in ok) / seconds, 3),
        "latency_ms": {f"p{q}": _rounded(percentile(latency, q)) for q in (50, 95, 99)},
        "ttft_ms": {f"p{q}": _rounded(percentile(ttft, q)) for q in (50, 95)},
        "top_errors": [{"message": m, "count": n} for m, n in error_summary(run.samples)],
    }


def within_slo(level: dict, slo_p95_ms: float) -> bool:
    """No errors and p95 latency at most the SLO."""
    p95 = level["latency_ms"]["p95"]
    return level["requests"] > 0 and level["errors"] == 0 and p95 is not None and p95 <= slo_p95_ms


def find_knee(levels: Sequence[dict], slo_p95_ms: float | None) -> dict | None:
    """The highest concurrency within the SLO; None without an SLO or when no level meets it."""
    if slo_p95_ms is None:
        return None
    good = [lv for lv in levels if within_slo(lv, slo_p95_ms)]
    if not good:
        return None
    best = max(good, key=lambda lv: lv["concurrency"])
    return {"concurrency": best["concurrency"], "requests_per_s": best["requests_per_s"]}


def knee_note(result: dict) -> str:
    """One sentence on the knee: where it is, or why there is none, and whether lower levels disagree."""
    slo, knee, levels = result["slo_p95_ms"], result["knee"], result["levels"]
    if slo is None:
        return "knee: none (give --slo-p95-ms to find the highest concurrency within a latency target)"
    if knee is None:
        return f"knee: none (no level had p95 latency <= {slo:g} ms with zero errors)"
    note = (
        f"knee: concurrency {knee['concurrency']} ({knee['requests_per_s']:g} requests/s) is the highest level "
        f"with p95 latency <= {slo:g} ms and zero errors"
    )
    missed = [str(lv["concurrency"]) for lv in levels if lv["concurrency"] < knee["concurrency"] and not within_slo(lv, slo)]
    if missed:
        note += f"; lower level(s) {', '.join(missed)} missed it, so the measurement is noisy: rerun with more --requests"
    return note


def result_json(url: str, model: str, slo_p95_ms: float | None, runs: Sequence[LevelRun]) -> dict:
    """The result file's content (see the module docstring)."""
    levels = [level_stats(r) for r in runs]
    ok = [x for r in runs for x in r.samples if x.ok]
    source = "usage" if ok and all(x.usage_reported for x in ok) else "deltas"
    return {
        "url": url,
        "model": model,
        "slo_p95_ms": slo_p95_ms,
        "token_count_source": source,
        "levels": levels,
        "knee": find_knee(levels, slo_p95_ms),
    }


def error_summary(samples: Iterable[Sample], top: int = 3) -> list[tuple[str, int]]:
    """The most frequent error messages with their counts."""
    return Counter(x.error for x in samples if not x.ok and x.error).most_common(top)
