"""Which level of a load test sizes a node: the knee at exactly the SLO, the best error-free level without one, and a
first level stopped only when every request failed for good.

- loadstats.within_slo's rule and the result's own sentence (knee_note): "p95 latency <= SLO ms with zero errors";
  a level whose p95 is the SLO exactly meets it.
- capacity.per_node_qps_of without a knee: "its best error-free level", the most requests/s; past saturation a
  higher concurrency serves fewer (here 12 at concurrency 4, 9 at 16, numbers written by hand).
- loadtest.fatal_problem: "A UserError when every request failed in a way more load cannot change"; one refused
  request among answered ones is no such run.
"""

from gpufleet.sizing import capacity, loadstats, loadtest
from gpufleet.sizing.loadstats import Sample


def _level(concurrency, rps, p95, errors=0):
    return {
        "concurrency": concurrency,
        "requests": 20,
        "errors": errors,
        "error_rate": errors / 20,
        "requests_per_s": rps,
        "output_tokens_per_s": rps * 100,
        "latency_ms": {"p50": p95 / 2, "p95": p95, "p99": p95},
        "ttft_ms": {"p50": 50.0, "p95": 80.0},
    }


def test_a_level_whose_p95_is_the_slo_exactly_is_the_knee():
    levels = [_level(1, 2.0, 900.0), _level(4, 6.5, 2000.0), _level(8, 7.0, 2000.1)]
    assert loadstats.within_slo(levels[1], 2000.0)
    assert loadstats.find_knee(levels, 2000.0) == {"concurrency": 4, "requests_per_s": 6.5}


def test_without_a_knee_the_most_requests_per_second_of_the_error_free_levels_is_used():
    result = {
        "slo_p95_ms": None,
        "knee": None,
        "levels": [_level(1, 5.0, 500.0), _level(4, 12.0, 900.0), _level(16, 9.0, 4000.0), _level(32, 20.0, 9000.0, errors=3)],
    }
    qps, how = capacity.per_node_qps_of(result, "lt.json")
    assert qps == 12.0 and "concurrency 4" in how


def test_one_refused_request_among_answered_ones_does_not_stop_the_run():
    s = loadtest.settings(
        url="http://127.0.0.1:8000",
        model="m",
        concurrency="1",
        requests=2,
        max_tokens=8,
        api_key_env=None,
        slo_p95_ms=None,
        timeout_s=5.0,
        max_duration_s=30.0,
        prompt=None,
        environ={},
    )
    ok = Sample(ok=True, latency_ms=100.0, output_tokens=8)
    refused = Sample(ok=False, latency_ms=5.0, error="HTTP 401: no", status=401, fatal=True)
    assert loadtest.fatal_problem(s, (ok, refused)) is None
    assert loadtest.fatal_problem(s, (refused, refused)) is not None
