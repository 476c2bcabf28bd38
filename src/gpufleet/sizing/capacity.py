"""How many nodes a peak QPS needs: ceil(peak / per-node QPS) plus redundancy, as autoscaling min / max / desired.

Per-node QPS is given, or read from a `gpufleet loadtest` result file (format: `gpufleet.sizing.loadstats`): the knee's requests/s when the run had an SLO,
else the best requests/s among error-free levels.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from msgspec import Struct
from msgspec.structs import asdict

from gpufleet import cron
from gpufleet.errors import Problem, UserError
from gpufleet.inputs import kind, number_problems, read_json_object
from gpufleet.registry import spoken

# What one node can take, requests/s: --qps-per-node and a load test's levels and knee stay within it.
MAX_QPS_PER_NODE = 1e9
MAX_PEAK_QPS = 1e9  # a fleet's peak (--peak-qps, a trace's requests_per_s): more is a unit mistake
MAX_PROBLEMS = 10  # of a load-test file, reported together


class Plan(Struct, frozen=True):
    peak_qps: float
    qps_per_node: float
    qps_source: str
    redundancy: int
    nodes: int  # nodes that carry the peak, plus redundancy
    min_replicas: int  # redundancy + one node, never below 1; 2 keeps a node through a zone outage in prod
    max_replicas: int
    desired: int

    def to_json(self) -> dict:
        return asdict(self)


def plan(peak_qps: float, qps_per_node: float, redundancy: int = 1, qps_source: str = "given") -> Plan:
    # finite and positive (nan or inf would give 0 or unbounded nodes); at most a million nodes' worth
    problems = number_problems(peak_qps, "--peak-qps", "", 0, MAX_PEAK_QPS, above=True)
    problems += number_problems(qps_per_node, "--qps-per-node", "", 0, MAX_QPS_PER_NODE, above=True)
    problems += number_problems(redundancy, "--redundancy", "", 0, 1000)
    if problems:
        raise UserError(problems)
    if peak_qps / qps_per_node > 1_000_000:
        # a load test's per-node rate is no option of the command (cost tokens has no --qps-per-node): named by its source
        given = qps_source == "given"
        raise UserError(
            [
                Problem(
                    "--peak-qps / --qps-per-node" if given else "--peak-qps",
                    "",
                    f"would need more than a million nodes ({peak_qps:g} / {qps_per_node:g}"
                    + ("" if given else f" QPS per node, the {qps_source}")
                    + ")",
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
    """The same from a load-test result (`gpufleet.sizing.loadstats`): its knee, else its best error-free level. The
    one check of a load-test file for every command that reads one (plan capacity, plan scaling, cost tokens):
    a result of the wrong shape or with a knee its levels contradict is a UserError (result_problems)."""
    if problems := result_problems(data, shown):
        raise UserError(problems)
    levels = data["levels"]
    knee = data.get("knee")
    if knee is not None:
        return float(knee["requests_per_s"]), (
            f"knee of {shown}: concurrency {knee['concurrency']} within p95 {data['slo_p95_ms']} ms"
        )
    clean = [lv for lv in levels if lv["error_rate"] == 0 and lv["requests_per_s"] > 0]
    if not clean:
        raise UserError(
            [Problem(shown, "levels", "every level had errors: no per-node capacity to plan with; fix the server and rerun")]
        )
    best = max(clean, key=lambda lv: lv["requests_per_s"])
    return float(best["requests_per_s"]), f"best error-free level of {shown} (concurrency {best['concurrency']}; no SLO knee)"


def result_problems(data: dict, shown: str) -> list[Problem]:
    """Problems of a load-test result (format: gpufleet.sizing.loadstats), each naming its field (`levels.2.ttft_ms`):

    - levels: a non-empty list of mappings, each with concurrency (a whole number >= 1, once), requests_per_s (0 to
      MAX_QPS_PER_NODE) and error_rate (0 to 1); requests, errors, output_tokens_per_s (at most MAX_QPS_PER_NODE),
      latency_ms and ttft_ms (mappings of percentiles) are optional, numbers >= 0 where given (a percentile may be null:
      no request succeeded);
    - slo_p95_ms: null or a number above 0;
    - knee: null or the level the load test found (loadstats.find_knee): {concurrency, requests_per_s} of a level
      with zero errors whose p95 latency is within slo_p95_ms.
    """
    levels = data.get("levels")
    if levels is not None and not isinstance(levels, list):  # `{}` was said to be "missing or empty" (review F9)
        return [Problem(shown, "levels", f"is {kind(levels)}: a load-test result's levels are a list, one per concurrency")]
    if not levels:
        return [Problem(shown, "levels", "missing or empty: not a load-test result")]
    problems = (
        number_problems(data["slo_p95_ms"], shown, "slo_p95_ms", 0, None, above=True)
        if data.get("slo_p95_ms") is not None
        else []
    )
    first: dict[Any, int] = {}
    for i, level in enumerate(levels):
        problems += _level_problems(level, shown, f"levels.{i}")
        if isinstance(level, dict) and isinstance(c := level.get("concurrency"), (int, float)) and not isinstance(c, bool):
            if (j := first.setdefault(c, i)) != i:  # two measurements of one level: which one the knee means is unclear
                problems.append(
                    Problem(shown, f"levels.{i}.concurrency", f"{c:g} repeats levels.{j}: one level per concurrency; keep one")
                )
        if len(problems) >= MAX_PROBLEMS:
            return problems
    return problems or _knee_problems(data, shown)


def _level_problems(level: Any, shown: str, at: str) -> list[Problem]:
    if not isinstance(level, dict):
        return [Problem(shown, at, f"expected a mapping (one load level), got {kind(level)}")]
    required = {"concurrency": (1, None), "requests_per_s": (0, MAX_QPS_PER_NODE), "error_rate": (0, 1)}
    # output tokens/s within the requests/s cap too (as cost tokens reads it): 1e308 overflowed plan scaling's tokens served
    optional = {"requests": (0, None), "errors": (0, None), "output_tokens_per_s": (0, MAX_QPS_PER_NODE)}
    problems = []
    for key, (low, high) in required.items():
        if key not in level:
            problems.append(Problem(shown, f"{at}.{key}", "missing: not a load-test result"))
        else:
            problems += number_problems(level[key], shown, f"{at}.{key}", low, high)
    for key, (low, high) in optional.items():
        if level.get(key) is not None:
            problems += number_problems(level[key], shown, f"{at}.{key}", low, high)
    for key in ("concurrency", "requests", "errors"):
        value = level.get(key)
        if isinstance(value, float) and not value.is_integer():
            problems.append(Problem(shown, f"{at}.{key}", f"must be a whole number, not {value:g}"))
    requests, errors = level.get("requests"), level.get("errors")
    if not problems and isinstance(requests, (int, float)) and isinstance(errors, (int, float)) and errors > requests:
        problems.append(  # 999 errors of 64 requests was read (review F11)
            Problem(
                shown,
                f"{at}.errors",
                f"{errors:g} is more than the level's {requests:g} requests (errors are requests that failed): "
                "not a load-test result; rerun the load test",
            )
        )
    for key in ("latency_ms", "ttft_ms"):
        percentiles = level.get(key)
        if percentiles is None:
            continue
        if not isinstance(percentiles, dict):
            problems.append(
                Problem(shown, f"{at}.{key}", f"expected a mapping of percentiles (p50, p95, ...), got {kind(percentiles)}")
            )
            continue
        for name, value in percentiles.items():
            if value is not None:
                problems += number_problems(value, shown, f"{at}.{key}.{name}", 0)
    return problems


def _knee_problems(data: dict, shown: str) -> list[Problem]:
    """The knee against its levels (levels already checked), by loadstats.find_knee's rule: the level it names
    exists, had zero errors and p95 latency within slo_p95_ms, and measured the knee's requests/s. (Whether it is the
    highest such level is not checked: a hand-lowered knee plans more nodes, never fewer.)"""
    knee, slo = data.get("knee"), data.get("slo_p95_ms")
    if knee is None:
        return []
    if not isinstance(knee, dict):
        return [Problem(shown, "knee", f"expected null or a mapping {{concurrency, requests_per_s}}, got {kind(knee)}")]
    problems = number_problems(knee.get("requests_per_s"), shown, "knee.requests_per_s", 0, MAX_QPS_PER_NODE, above=True)
    problems += number_problems(knee.get("concurrency"), shown, "knee.concurrency", 1)
    if problems:
        return problems
    rerun = "rerun `gpufleet loadtest --slo-p95-ms MS --save-json FILE`, or set knee to null (the best error-free level is used)"
    level = next((lv for lv in data["levels"] if lv["concurrency"] == knee["concurrency"]), None)
    if level is None:
        return [Problem(shown, "knee.concurrency", f"{knee['concurrency']:g} names no level of the result; {rerun}")]
    i = data["levels"].index(level)
    p95 = (level.get("latency_ms") or {}).get("p95", 0.0)
    if slo is None:
        why = "the result has no slo_p95_ms: a knee is the highest concurrency within an SLO"
    elif level["error_rate"] > 0 or (level.get("errors") or 0) > 0:
        why = (
            f"levels.{i} (concurrency {level['concurrency']:g}) had errors (error_rate {level['error_rate']:g}): a knee has none"
        )
    elif p95 is None:
        why = f"levels.{i} (concurrency {level['concurrency']:g}) has no p95 latency (no request succeeded)"
    elif p95 > slo:
        why = f"levels.{i} (concurrency {level['concurrency']:g}) has p95 latency {p95:g} ms, above the SLO of {slo:g} ms"
    elif abs(level["requests_per_s"] - knee["requests_per_s"]) > 1e-9 * max(1.0, level["requests_per_s"]):
        why = f"{knee['requests_per_s']:g} requests/s, but its level (levels.{i}) measured {level['requests_per_s']:g}"
    else:
        return []
    return [Problem(shown, "knee", f"does not match the levels: {why}; {rerun}")]


def schedule_problems(autoscaling, p: Plan, now: datetime) -> list[tuple[str, str]]:
    """(field, message) for each schedule whose max or min is below the plan: while it holds (from each firing until
    a schedule fires next, cron.held), it is the fleet's replicas, as `replicas` is outside the schedules. How long it
    holds is counted over the 7 days from `now`'s day (UTC), the spec's cron zone."""
    schedules = autoscaling.schedules
    short = [
        (i, key, value, want)
        for i, s in enumerate(schedules)
        for key, value, want in (("max", s.max, p.nodes), ("min", s.min, p.min_replicas))
        if value < want
    ]
    if not short:
        return []
    start = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    hours = [h / timedelta(hours=1) for h in cron.held([s.cron for s in schedules], start, start + timedelta(days=7))]
    out = []
    for i, key, value, want in short:
        s = schedules[i]
        others = [f"{o.name} ({o.cron!r} UTC)" for o in schedules if o is not s]
        until = f"until {spoken(others)} fires" if others else "on (no other schedule resets it)"
        what = (
            f"{value} is below the {want} nodes the peak of {p.peak_qps:g} QPS needs ({p.qps_per_node:g} QPS per node, "
            f"N+{p.redundancy})"
            if key == "max"
            else f"{value} is below the planned minimum {want} (N+{p.redundancy})"
        )
        # how long it holds this week: the failure stands on its value alone (whenever it fires, it holds), so a
        # schedule that does not fire in these 7 days (a yearly date) says so rather than "0 h"
        week = (
            f"{hours[i]:g} h of the 7 days from {start:%Y-%m-%d} (UTC)"
            if hours[i]
            else f"not in the 7 days from {start:%Y-%m-%d} (UTC), but whenever it fires"
        )
        out.append(
            (
                f"fleet.autoscaling.schedules.{i}.{key}",
                f"{what}: schedule {s.name} sets the fleet's {key} to {value} from each firing ({s.cron!r} UTC) {until}, "
                f"{week}; raise its {key} to {want}" + (" (unless the peak never falls in those hours)" if key == "max" else ""),
            )
        )
    return out


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
