"""A rollout gate measured exactly at its threshold passes: docs/rollout.md's gate table (and gates.py's module doc)
says each passes when the figure is <= its maximum (>= its minimum for the answers), so equal is a pass."""

from __future__ import annotations

from gpufleet.rollout import gates

# the spec's defaults, as docs/rollout.md's table lists them
T = gates.Thresholds(
    max_error_rate=0.01,
    max_latency_p95_ratio=1.25,
    max_ttft_p95_ratio=1.25,
    max_queue_per_node=4,
    max_kv_cache_percent=95,
    min_exact_match=0.9,
    min_similarity=0.8,
)


def _side(**kw):
    base = {
        "requests": 100,
        "errors": 0,
        "error_rate": 0.0,
        "latency_p95_ms": 100.0,
        "ttft_p95_ms": 20.0,
        "queue_max": 1.0,
        "kv_cache_percent_max": 40.0,
        "top_errors": [],
        "metrics_error": None,
    }
    return base | kw


def test_every_traffic_gate_passes_at_its_threshold():
    # by hand: 1 failed of 100 = 0.01; 125 / 100 ms = 1.25; 25 / 20 ms = 1.25; 4 waiting; 95 % of the KV cache
    at = _side(
        health_status=200,
        errors=1,
        error_rate=1 / 100,
        latency_p95_ms=125.0,
        ttft_p95_ms=25.0,
        queue_max=4.0,
        kv_cache_percent_max=95.0,
    )
    got = {g.name: g for g in gates.traffic_gates({"current": _side(), "candidate": at}, T)}
    assert {n: (g.measured, g.threshold) for n, g in got.items() if n != "health"} == {
        "error_rate": (0.01, 0.01),
        "latency_p95_ratio": (1.25, 1.25),
        "ttft_p95_ratio": (1.25, 1.25),
        "queue_per_node": (4.0, 4),
        "kv_cache_percent": (95.0, 95),
    }
    assert gates.failed(list(got.values())) == []


def test_a_figure_just_over_its_threshold_fails():
    over = _side(health_status=200, errors=2, error_rate=2 / 100, queue_max=4.5, kv_cache_percent_max=95.5)
    bad = [g.name for g in gates.failed(gates.traffic_gates({"current": _side(), "candidate": over}, T))]
    assert bad == ["error_rate", "queue_per_node", "kv_cache_percent"]


def test_the_answer_gates_pass_at_their_minimum():
    # 9 of 10 prompts answered the same = 0.9; a mean similarity of 0.8
    comparison = {"prompts": 10, "changed": [{"id": "p10", "similarity": 0.0}], "exact_match_rate": 0.9, "mean_similarity": 0.8}
    assert [(g.name, g.passed) for g in gates.answer_gates(comparison, T)] == [
        ("answers_exact_match", True),
        ("answers_similarity", True),
    ]
