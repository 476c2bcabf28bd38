"""The spec space the contract is swept over: every shipped stack x billing x load balancer x disk tier x scaling metric x
on-demand base (spot), all pairs.

A greedy all-pairs cover (each pair of values of any two dimensions appears in at least one variant) keeps the
sweep to a few dozen previews; the stack dimension carries the cloud.
"""

from __future__ import annotations

import copy
import itertools
import os
from functools import cache
from pathlib import Path

from gpufleet import clock, validation
from gpufleet.stacks import loader

ROOT = Path(__file__).resolve().parents[2]
# The time every variant is previewed at (the contract checks schedule times against it): the sweep is cached per test
# process, so whichever test runs it first must not decide its clock (tests/simulate ran it on the real one).
NOW = "2026-12-01T00:00:00Z"
BILLING = {
    "payg": {"model": "payg"},
    "monthly": {"model": "monthly", "period_months": 1},
    "yearly": {"model": "yearly", "period_months": 12},
    "spot": {"model": "spot"},
    "spot-limit": {"model": "spot", "spot_price_limit": 2.5},
}
PUBLIC = {"public": True, "private": False}
METRICS = ("queue", "kv_cache", "cpu_utilization")
# With spot: the on-demand base at replicas.min (all of the above-base nodes spot), or one above it with half of the
# nodes above the base on demand (Alibaba's mix; Tencent 0.2.3 has no mixed allocation and refuses a percentage).
BASES = {"min": (0, 0), "min+1": (1, 50)}
# A private load balancer also admits only the VPC's clients, so the listener ACL code paths are swept too.
PRIVATE_CLIENTS = ["10.0.0.0/8"]
TIERS = ("standard", "performance", "high")
# Disk sizes per tier: the `high` tier is an ESSD PL2 on Alibaba, which starts at 461 GiB (components/alicloud/rules.py);
# an ESS system disk stops at 500 GiB, a Tencent AS one too.
SIZES = {"standard": (100, 200), "performance": (100, 200), "high": (480, 500)}


def dimensions() -> dict[str, tuple]:
    return {
        "stack": tuple(loader.stack_names(ROOT)),
        "billing": tuple(BILLING),
        "lb": tuple(PUBLIC),
        "tier": TIERS,
        "metric": METRICS,
        "base": tuple(BASES),
    }


def all_pairs(dims: dict[str, tuple]) -> list[dict]:
    names = list(dims)
    uncovered = {(a, va, b, vb) for a, b in itertools.combinations(names, 2) for va in dims[a] for vb in dims[b]}
    chosen = []
    for combo in itertools.product(*dims.values()):
        row = dict(zip(names, combo))
        gain = {(a, row[a], b, row[b]) for a, b in itertools.combinations(names, 2)} & uncovered
        if gain:
            chosen.append((len(gain), row))
    out = []
    while uncovered:  # greedy: the row covering the most pairs still uncovered
        best = max(
            (row for _, row in chosen),
            key=lambda row: len({(a, row[a], b, row[b]) for a, b in itertools.combinations(names, 2)} & uncovered),
        )
        uncovered -= {(a, best[a], b, best[b]) for a, b in itertools.combinations(names, 2)}
        out.append(best)
    return out


def variant_spec(row: dict) -> dict:
    _, config = loader.read_stack_config(row["stack"], ROOT)
    raw = copy.deepcopy(config[loader.CONFIG_KEY])
    raw["billing"] = dict(BILLING[row["billing"]])
    if raw["billing"]["model"] == "spot":
        extra, percent = BASES[row["base"]]
        raw["billing"]["on_demand_base"] = raw["replicas"]["min"] + extra
        if percent and raw["cloud"] == "alicloud":
            raw["billing"]["on_demand_above_base_percent"] = percent
    raw.setdefault("autoscaling", {})["metric"] = row["metric"]
    raw.setdefault("load_balancer", {})["public"] = PUBLIC[row["lb"]]
    if not PUBLIC[row["lb"]]:
        raw["load_balancer"]["allowed_cidrs"] = PRIVATE_CLIENTS
    disks = raw.setdefault("disks", {})
    for which, size in zip(("system", "data"), SIZES[row["tier"]]):
        disks[which] = {"tier": row["tier"], "size_gib": max(size, disks.get(which, {}).get("size_gib", 0))}
    return raw


def variant_name(row: dict) -> str:
    return f"{row['stack']}/{row['billing']}/{row['lb']}/{row['tier']}/{row['metric']}/base-{row['base']}"


@cache
def _run_all() -> tuple[tuple, tuple]:
    """Every variant previewed at NOW (GPUFLEET_NOW set for the run, the caller's value restored after)."""
    before = os.environ.get(clock.ENV)
    os.environ[clock.ENV] = NOW
    try:
        return _previewed()
    finally:
        if before is None:
            del os.environ[clock.ENV]
        else:
            os.environ[clock.ENV] = before


def _previewed() -> tuple[tuple, tuple]:
    from gpufleet import registry
    from gpufleet.components.fleet import declare_program
    from gpufleet.errors import UserError
    from gpufleet.preview import run

    done, refused = [], []
    for row in all_pairs(dimensions()):
        raw = variant_spec(row)
        try:
            fleet = validation.validate(raw, stack=row["stack"], file=f"<{variant_name(row)}>", sizing=False)
        except UserError as err:
            refused.append((variant_name(row), row, tuple(err.problems)))
            continue
        computed = registry.profile(fleet.spec.cloud).computed
        inv = run(lambda f=fleet: declare_program(f), row["stack"], {loader.CONFIG_KEY: raw}, computed)
        done.append((variant_name(row), fleet.spec.cloud, inv.to_json()))
    return tuple(done), tuple(refused)


def inventories() -> tuple[tuple[str, str, dict], ...]:
    """(variant name, cloud, inventory json) of every variant of the sweep that spec validation accepts."""
    return _run_all()[0]


def refusals() -> tuple[tuple[str, dict, tuple], ...]:
    """(variant name, row, problems) of the variants spec validation refuses (a provider limit the spec reaches)."""
    return _run_all()[1]
