"""How many nodes a peak QPS needs: ceil(peak / per-node QPS) plus redundancy, as autoscaling min / max / desired.

Per-node QPS is given, or read from a `gpufleet loadtest` result file (format: `gpufleet.sizing.loadstats`): the knee's requests/s when the run had an SLO,
else the best requests/s among error-free levels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from gpufleet.errors import Problem, UserError
from gpufleet.inputs import read_json_object


@dataclass(frozen=True)
class Plan:
    peak_qps: float
    qps_per_node: float
    qps_source: str
    redundancy: int
    nodes: int  # nodes that carry the peak, plus redundancy
    min_replicas: int  # redundancy + one node, never below 1; 2 keeps a node through a zone outage in prod
    max_replicas: int
    desired: int

    def to_json(self) -> dict:
        return dict(self.__dict__)


def plan(peak_qps: float, qps_per_node: float, redundancy: int = 1, qps_source: str = "given") -> Plan:
    from gpufleet.inputs import number_problems

    # finite and positive (nan or inf would give 0 or unbounded nodes); at most a million nodes' worth
    problems = number_problems(peak_qps, "--peak-qps", "", 0, 1e9, above=True)
    problems += number_problems(qps_per_node, "--qps-per-node", "", 0, 1e9, above=True)
    problems += number_problems(redundancy, "--redundancy", "", 0, 1000)
    if problems:
        raise UserError(problems)
    if peak_qps / qps_per_node > 1_000_000:
        raise UserError(
            [
                Problem(
                    "--peak-qps / --qps-per-node", "", f"would need more than a million nodes ({peak_qps:g} / {qps_per_node:g})"
                )
            ]
        )
    carrying = math.ceil(peak_qps / qps_per_node - 1e-9)
    nodes = carrying + redundancy
    return Plan(
        peak_qps=peak_qps,
        qps_per_node=qps_per_node,
        qps_source=qps_source,
        redundancy=redundancy,
        nodes=nodes,
        min_replicas=1 + redundancy,
        max_replicas=nodes,
        desired=nodes,
    )


def per_node_qps(path: Path) -> tuple[float, str]:
    """(requests/s one node sustains, how it was chosen) from a load-test result file."""
    return per_node_qps_of(read_json_object(path, "write one with `gpufleet loadtest ... --save-json FILE`"), str(path))


def per_node_qps_of(data: dict, shown: str) -> tuple[float, str]:
    """The same from a load-test result (`gpufleet.sizing.loadstats`): its knee, else its best error-free level."""
    levels = data.get("levels")
    if not isinstance(levels, list) or not levels:
        raise UserError([Problem(shown, "levels", "missing or empty: not a load-test result")])
    for i, level in enumerate(levels):
        for key in ("concurrency", "requests_per_s", "error_rate"):
            if not isinstance(level, dict) or not isinstance(level.get(key), (int, float)):
                raise UserError([Problem(shown, f"levels.{i}.{key}", "missing or not a number")])
    knee = data.get("knee")
    if isinstance(knee, dict) and isinstance(knee.get("requests_per_s"), (int, float)) and knee["requests_per_s"] > 0:
        return float(knee["requests_per_s"]), (
            f"knee of {shown}: concurrency {knee.get('concurrency')} within p95 {data.get('slo_p95_ms')} ms"
        )
    clean = [lv for lv in levels if lv["error_rate"] == 0 and lv["requests_per_s"] > 0]
    if not clean:
        raise UserError(
            [Problem(shown, "levels", "every level had errors: no per-node capacity to plan with; fix the server and rerun")]
        )
    best = max(clean, key=lambda lv: lv["requests_per_s"])
    return float(best["requests_per_s"]), f"best error-free level of {shown} (concurrency {best['concurrency']}; no SLO knee)"


def replicas_problems(replicas, p: Plan) -> list[tuple[str, str]]:
    """(field, message) when a stack's replicas are below the plan."""
    out = []
    if replicas.max < p.nodes:
        out.append(
            (
                "fleet.replicas.max",
                f"{replicas.max} is below the {p.nodes} nodes the peak of {p.peak_qps:g} QPS needs "
                f"({p.qps_per_node:g} QPS per node, N+{p.redundancy})",
            )
        )
    if replicas.min < p.min_replicas:
        out.append(("fleet.replicas.min", f"{replicas.min} is below the planned minimum {p.min_replicas} (N+{p.redundancy})"))
    return out
