"""What one serving node can take: the knee of a saved load test, or a per-node figure (plan capacity's), and the
fluid queue above it.

Below the knee a request waits for nothing but its own prefill (the load test's TTFT at that load); above it the
requests the serving nodes cannot start queue, and a request arriving now waits until the queue ahead of it is
served: queue / (serving nodes x knee). That wait is what the simulation reports as p95 (the last arrivals of a step
wait the longest), plus the load test's TTFT p95 at the load level, as the TTFT estimate.
"""

from __future__ import annotations

import math
from pathlib import Path

from msgspec import Struct

from gpufleet.errors import UserError
from gpufleet.inputs import number_problems, read_json_object
from gpufleet.sizing import capacity
from gpufleet.sizing.capacity import MAX_QPS_PER_NODE


class NodeCapacity(Struct, frozen=True):
    requests_per_s: float  # the knee: what one node serves within the load test's SLO
    source: str
    output_tokens_per_request: float | None = None
    # (requests/s per node, TTFT p95 s) of the load-test levels up to the knee, both ascending (from_loadtest); empty
    # without a load test
    ttft_curve: tuple[tuple[float, float], ...] = ()
    latency_p95_s: float | None = None  # a request's whole time at the knee (what a drain waits for)

    def ttft_s(self, per_node_rps: float) -> float | None:
        """TTFT p95 at that load from the load test (linear between levels, the knee's above it); None without one."""
        pts = self.ttft_curve
        if not pts:
            return None
        if per_node_rps <= pts[0][0]:
            return pts[0][1]
        for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
            if per_node_rps <= x1:
                return y0 + (y1 - y0) * (per_node_rps - x0) / (x1 - x0) if x1 > x0 else y1
        return pts[-1][1]

    def to_json(self) -> dict:
        return {
            "requests_per_s": self.requests_per_s,
            "source": self.source,
            "output_tokens_per_request": self.output_tokens_per_request,
        }


def from_loadtest(path: Path) -> NodeCapacity:
    """The knee of a `gpufleet loadtest --save-json` file (the rule `plan capacity` and `cost tokens` use)."""
    return from_loadtest_result(read_json_object(path, "write one with `gpufleet loadtest ... --save-json FILE`"), str(path))


def from_loadtest_result(data: dict, shown: str) -> NodeCapacity:
    """from_loadtest of a result already read (`shown`: its file)."""
    qps, how = capacity.per_node_qps_of(data, shown)
    levels = [lv for lv in data["levels"] if lv["error_rate"] == 0 and lv["requests_per_s"] > 0]
    knee = next((lv for lv in levels if abs(lv["requests_per_s"] - qps) < 1e-9), None)
    # The curve is the levels up to the knee's concurrency, and TTFT never falls as the load rises (a running maximum).
    # A level beyond the knee is saturated: its throughput is at or below the knee's and its TTFT is mostly queueing,
    # which the simulation models itself (the fluid queue's wait); taken as a point on the curve it gave 386 ms at
    # 13.484 req/s and 158 ms at the knee's 13.768, so less load failed the SLO and more passed. Below the knee a p95
    # that falls with more load is measurement noise; the running maximum keeps the SLO gate monotone in the load.
    top = knee["concurrency"] if knee is not None else math.inf
    curve: list[tuple[float, float]] = []
    for lv in sorted(levels, key=lambda lv: lv["requests_per_s"]):
        ttft = (lv.get("ttft_ms") or {}).get("p95")
        if isinstance(ttft, (int, float)) and lv["requests_per_s"] <= qps + 1e-9 and lv["concurrency"] <= top:
            curve.append((float(lv["requests_per_s"]), max(float(ttft) / 1000, curve[-1][1] if curve else 0.0)))
    out_tok = None
    latency = None
    if knee is not None:
        if isinstance(knee.get("output_tokens_per_s"), (int, float)) and knee["requests_per_s"] > 0:
            out_tok = knee["output_tokens_per_s"] / knee["requests_per_s"]
        p95 = (knee.get("latency_ms") or {}).get("p95")
        latency = float(p95) / 1000 if isinstance(p95, (int, float)) else None
    return NodeCapacity(qps, how, out_tok, tuple(curve), latency)


def given(requests_per_s: float, source: str = "given") -> NodeCapacity:
    problems = number_problems(requests_per_s, "--qps-per-node", "", 0, MAX_QPS_PER_NODE, above=True)
    if problems:
        raise UserError(problems)
    return NodeCapacity(float(requests_per_s), source)
