"""`cost compare`: the same fleet re-declared for another cloud and billing model.

Each option is a modified spec dict (cloud, region, zones, instance type, billing) validated once by the
same loader (gpufleet.plan.for_spec), declared once by the same program and priced by the same functions.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from gpufleet.components.registry import profile
from gpufleet.cost import estimate
from gpufleet.cost.estimate import Estimate
from gpufleet.cost.usage import Usage
from gpufleet.stacks import catalog as stackcat
from gpufleet.stacks import loader

from gpufleet import inputs
from gpufleet.errors import Problem, UserError, did_you_mean

BILLINGS = ("payg", "monthly", "yearly", "spot")
EQUIV = Path(__file__).parent / "data" / "equivalents.yaml"


@lru_cache(maxsize=1)
def _equiv() -> dict:
    shown = "cost/data/equivalents.yaml"
    doc = inputs.load_mapping(EQUIV, shown, f"restore it (git checkout -- {shown})")
    for key in ("gpus", "regions"):
        inputs.mapping(doc.get(key), shown, key, f"a mapping (restore it: git checkout -- {shown})")
    return doc


@dataclass
class Option:
    cloud: str
    region: str
    instance_type: str | None
    billing: str
    mapping: list[str]  # how the option was derived from the stack ("cn-hangzhou -> ap-shanghai: ...")
    estimate: Estimate | None = None
    problem: str = ""


def _gpu_for(cloud: str, kind: str) -> tuple[str | None, str]:
    if any(t.gpu == kind for t in stackcat.instance_types(cloud)):
        return kind, ""
    for other, why in (_equiv()["gpus"].get(kind) or {}).items():
        if any(t.gpu == other for t in stackcat.instance_types(cloud)):
            return other, f"GPU {kind} -> {other}: {why}"
    return None, f"{cloud} sells no {kind} (nor an equivalent with at least its memory)"


def _instance_for(cloud: str, gpu: str, count: int, like: stackcat.InstanceType) -> stackcat.InstanceType | None:
    """Same GPU kind and count; nearest in vCPU then memory to the stack's type."""
    cands = [t for t in stackcat.instance_types(cloud) if t.gpu == gpu and t.gpus == count]
    return min(cands, key=lambda t: (abs(t.vcpu - like.vcpu), abs(t.memory_gib - like.memory_gib)), default=None)


def redeclare(raw: dict, fleet: loader.Fleet, cloud: str, billing: str) -> tuple[dict | None, list[str], str, str | None]:
    """The stack's spec for `cloud` and `billing`: (spec dict or None, mapping notes, region, instance type)."""
    spec = fleet.spec
    new = copy.deepcopy(raw)
    notes: list[str] = []
    region = spec.region
    if cloud != spec.cloud:
        hit = _equiv()["regions"].get(spec.cloud, {}).get(spec.region) or {}
        mapped = hit.get(cloud)
        if mapped is None:
            return None, [f"no {cloud} region mapped for {spec.region}"], "", None
        region = mapped
        notes.append(f"region {spec.region} -> {region}: {hit['why']}")
    gpu, why = _gpu_for(cloud, spec.gpu.kind)
    if gpu is None:
        return None, notes + [why], region, None
    if why:
        notes.append(why)
    itype = _instance_for(cloud, gpu, spec.gpu.count, fleet.instance_type)
    if itype is None:
        return None, notes + [f"{cloud} has no {spec.gpu.count}x {gpu} instance"], region, None
    if itype.type != fleet.instance_type.type:
        notes.append(
            f"instance {fleet.instance_type.type} ({fleet.instance_type.vcpu} vCPU, {fleet.instance_type.memory_gib} GiB) -> "
            f"{itype.type} ({itype.vcpu} vCPU, {itype.memory_gib} GiB), same GPUs, nearest vCPU/memory"
        )
    zones_all = stackcat.regions(cloud)[region]
    if cloud != spec.cloud:
        selling = [z for z, kinds in zones_all.items() if gpu in kinds]
        if len(selling) < len(spec.zones):
            return (
                None,
                notes + [f"{region} has {len(selling)} zones selling {gpu}; the fleet spans {len(spec.zones)}"],
                region,
                itype.type,
            )
        new["zones"] = selling[: len(spec.zones)]
        notes.append(f"zones {', '.join(spec.zones)} -> {', '.join(new['zones'])}")
    new["cloud"], new["region"] = cloud, region
    source = spec.model.source
    own, other = profile(spec.cloud).object_scheme, profile(cloud).object_scheme
    if cloud != spec.cloud and source.startswith(f"{own}://"):
        bucket, _, key = source[len(own) + 3 :].partition("/")
        bucket = bucket.removesuffix(profile(spec.cloud).example_bucket_suffix) + profile(cloud).example_bucket_suffix
        new["model"] = {**raw["model"], "source": f"{other}://{bucket}/{key}"}
        notes.append(f"model source {source} -> {new['model']['source']} (the same archive in {cloud}'s object storage)")
    new["gpu"] = {**raw.get("gpu", {}), "kind": gpu, "instance_type": itype.type}
    if billing != spec.billing.model:
        notes.append(
            f"billing {spec.billing.model} -> {billing}"
            + {"monthly": " (1-month subscription)", "yearly": " (1-year subscription)", "spot": " (interruptible)"}.get(
                billing, ""
            )
        )
    b: dict[str, str | int] = {"model": billing}
    if billing == "monthly":
        b["period_months"] = 1
    elif billing == "yearly":
        b["period_months"] = 12
    elif billing == "spot" and spec.environment == "prod":
        # prod keeps replicas.min on demand under the spot nodes (stacks/loader.py cross_problems, issue 18)
        b["on_demand_base"] = spec.replicas.min
        notes.append(f"spot with an on-demand base of {spec.replicas.min} pay-as-you-go nodes (replicas.min)")
    new["billing"] = b
    return new, notes, region, itype.type


def compare(
    stack: str, clouds: list[str], billings: list[str], usage: Usage, discounts: list[estimate.Discount] | None = None
) -> list[Option]:
    problems = [
        Problem("--clouds", "", f"unknown cloud {c!r}" + did_you_mean(c, stackcat.clouds()))
        for c in clouds
        if c not in stackcat.clouds()
    ]
    problems += [
        Problem("--billing", "", f"unknown billing {b!r}" + did_you_mean(b, BILLINGS)) for b in billings if b not in BILLINGS
    ]
    if problems:
        raise UserError(problems)
    from gpufleet import plan as plans

    base = plans.for_stack(stack)
    fleet, raw, shown = base.fleet, base.raw, base.fleet.file
    out: list[Option] = []
    for cloud in clouds:
        for billing in billings:
            new, notes, region, itype = redeclare(raw, fleet, cloud, billing)
            opt = Option(cloud, region, itype, billing, notes)
            if new is None:
                opt.problem = "; ".join(notes)
                out.append(opt)
                continue
            try:
                option = plans.for_spec(new, stack, file=shown + f" (as {cloud} {region} {billing})")
                opt_fleet, resources = option.fleet, option.resources
            except UserError as exc:
                opt.problem = "; ".join(str(p) for p in exc.problems)
                out.append(opt)
                continue
            except Exception as exc:  # the program failed for this option: report it on its row, keep the others
                opt.problem = f"preview failed: {type(exc).__name__}: {exc}"
                out.append(opt)
                continue
            opt.estimate = estimate.price_inventory(
                stack, opt_fleet.spec, opt_fleet.instance_type.type, resources, usage, discounts
            )
            out.append(opt)
    return out


def as_json(stack: str, options: list[Option]) -> dict:
    currencies = sorted({o.estimate.currency for o in options if o.estimate})
    rows = []
    for o in options:
        e = o.estimate
        rows.append(
            {
                "cloud": o.cloud,
                "region": o.region,
                "instance_type": o.instance_type,
                "billing": o.billing,
                "monthly_total": str(e.monthly_total) if e else None,
                "by_category": {k: str(v) for k, v in e.by_category.items()} if e else None,
                "overhead_share": str(e.overhead_share) if e else None,
                "unpriced_lines": len(e.unpriced) if e else None,
                "estimated_lines": len(e.estimated) if e else None,
                "equivalence": o.mapping,
                "problem": o.problem or None,
            }
        )
    first = next((o.estimate for o in options if o.estimate), None)
    return {
        "stack": stack,
        "currency": currencies[0] if len(currencies) == 1 else currencies,
        "catalog_as_of": max((o.estimate.catalog_as_of for o in options if o.estimate), default=None),
        "assumptions": first.assumptions if first else [],
        "rows": rows,
    }
