"""Each gate's verdict from measured figures (pure). A gate with no figure (an endpoint that did not answer) fails.

| gate | measured | passes when |
|---|---|---|
| health | HTTP status of the candidate's health path | 200 |
| error_rate | candidate's failed requests / requests under the load test | <= max_error_rate |
| latency_p95_ratio | candidate p95 latency / current p95 latency, same load, same client | <= max_latency_p95_ratio |
| ttft_p95_ratio | the same for time to first token | <= max_ttft_p95_ratio |
| queue_per_node | highest vllm:num_requests_waiting on the candidate while loaded | <= max_queue_per_node |
| kv_cache_percent | highest KV-cache use (vllm:kv_cache_usage_perc x 100) on the candidate while loaded | <= max_kv_cache_percent |
| answers_exact_match | share of prompts whose greedy answers are identical | >= answers.min_exact_match |
| answers_similarity | the mean per-prompt similarity of the answers (1.0 for an identical one) | >= answers.min_similarity |
"""

from __future__ import annotations

from msgspec import Struct


class Thresholds(Struct, frozen=True):
    max_error_rate: float
    max_latency_p95_ratio: float
    max_ttft_p95_ratio: float
    max_queue_per_node: float
    max_kv_cache_percent: float
    min_exact_match: float
    min_similarity: float


def thresholds(g, queue_default: float) -> Thresholds:
    """The thresholds of the spec's `rollout.gates` (stacks.spec.Gates); the queue's default is the fleet's
    `autoscaling.queue.scale_out_above` (a candidate that would make the fleet scale out is not yet good)."""
    queue = g.max_queue_per_node if g.max_queue_per_node is not None else queue_default
    return Thresholds(
        max_error_rate=g.max_error_rate,
        max_latency_p95_ratio=g.max_latency_p95_ratio,
        max_ttft_p95_ratio=g.max_ttft_p95_ratio,
        max_queue_per_node=float(queue),
        max_kv_cache_percent=float(g.max_kv_cache_percent),
        min_exact_match=g.answers.min_exact_match,
        min_similarity=g.answers.min_similarity,
    )


class Gate(Struct, frozen=True):
    name: str
    measured: float | None
    threshold: float
    op: str  # "<=", ">=" or "=="
    passed: bool
    detail: str

    def as_json(self) -> dict:
        return {
            "name": self.name,
            "measured": self.measured,
            "threshold": self.threshold,
            "op": self.op,
            "passed": self.passed,
            "detail": self.detail,
        }


def _gate(name: str, measured: float | None, op: str, threshold: float, detail: str) -> Gate:
    if measured is None:
        return Gate(name, None, threshold, op, False, detail or "not measured")
    passed = {"<=": measured <= threshold, ">=": measured >= threshold, "==": measured == threshold}[op]
    return Gate(name, round(measured, 4), threshold, op, passed, detail)


def ratio(candidate: float | None, current: float | None) -> float | None:
    if candidate is None or current is None or current <= 0:
        return None
    return candidate / current


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.0f} ms"


def traffic_gates(m: dict, t: Thresholds) -> list[Gate]:
    """The gates of a measurement (measure.Measurement.as_json()): health, errors, latency, TTFT, queue, KV cache."""
    cur, cand = m["current"], m["candidate"]
    health = cand.get("health_status")
    gates = [
        _gate("health", health, "==", 200, cand.get("health_error") or f"GET {cand.get('health_url')}"),
        _gate(
            "error_rate",
            cand.get("error_rate"),
            "<=",
            t.max_error_rate,
            f"{cand.get('errors')} of {cand.get('requests')} requests failed" + _first_error(cand),
        ),
    ]
    for name, key, limit in (
        ("latency_p95_ratio", "latency_p95_ms", t.max_latency_p95_ratio),
        ("ttft_p95_ratio", "ttft_p95_ms", t.max_ttft_p95_ratio),
    ):
        gates.append(
            _gate(
                name,
                ratio(cand.get(key), cur.get(key)),
                "<=",
                limit,
                f"candidate {_ms(cand.get(key))} / current {_ms(cur.get(key))}",
            )
        )
    for name, key, limit, unit in (
        ("queue_per_node", "queue_max", t.max_queue_per_node, ""),
        ("kv_cache_percent", "kv_cache_percent_max", t.max_kv_cache_percent, " %"),
    ):
        value = cand.get(key)
        detail = (
            cand.get("metrics_error")
            or f"candidate {_num(value)}{unit}, current {_num(cur.get(key))}{unit} (highest while loaded)"
        )
        gates.append(_gate(name, value, "<=", limit, detail))
    return gates


def answer_gates(a: dict, t: Thresholds) -> list[Gate]:
    """The answer-regression gates of a comparison (answers.compare's result)."""
    n = a["prompts"]
    changed = a["changed"]
    worst = f"; lowest {changed[0]['similarity']:g} ({changed[0]['id']})" if changed else ""
    return [
        _gate(
            "answers_exact_match",
            a["exact_match_rate"] if n else None,
            ">=",
            t.min_exact_match,
            f"{n - len(changed)} of {n} prompts answered the same",
        ),
        _gate("answers_similarity", a["mean_similarity"] if n else None, ">=", t.min_similarity, f"mean over {n} prompts{worst}"),
    ]


def _first_error(side: dict) -> str:
    errors = side.get("top_errors") or []
    return f"; most frequent: {errors[0]['count']}x {errors[0]['message']}" if errors else ""


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:g}"


def failed(gates: list[Gate]) -> list[Gate]:
    return [g for g in gates if not g.passed]
