"""The matched floor of scripts/bench.py: register the resources a preview recorded, and nothing of gpufleet.

    python scripts/bench_floor.py RECORDED.json [RECORDED.json ...]

Each RECORDED.json is what `gpufleet preview --stack S --json` printed (written once, before timing). For each file,
this program runs one Pulumi program under the SDK's mock engine that registers the same resources (same type tokens,
names, parents and inputs) through the same provider classes (`pulumi_alicloud.ess.ScalingGroup` for
`alicloud:ess/scalingGroup:ScalingGroup`; components as `pulumi.ComponentResource` of the same type), each waiting for
the resources the program made it wait for (an input the program took from another resource, a mock id `<name>_id` or
a computed `<name.property>`, is that resource's Output here; the rest of a record's `dependsOn`, which
scripts/bench.py adds from the SDK's registrations, through depends_on), waits for the outstanding work as the preview
does, and manages the collector as the CLI does (its first threshold raised at the
start, frozen when the first program starts and at exit; see gpufleet.collector). It imports nothing of gpufleet, so a case over this floor is gpufleet's
own work: validation, the program's logic, recording and rendering. A floor that registers nothing would hide the SDK's part of every registration.
"""

from __future__ import annotations

import gc
import importlib
import json
import keyword
import re
import sys
from typing import Any

import pulumi
from pulumi.runtime import settings
from pulumi.runtime import stack as pstack
from pulumi.runtime.sync_await import _sync_await

PACKAGES = {"alicloud": "pulumi_alicloud", "tencentcloud": "tencentcloud_iac_pulumi"}


class _Mocks(pulumi.runtime.Mocks):
    """Each resource's inputs as its state, plus the computed outputs other resources read (`<name.property>` in the
    recording), as the preview's mocks give them."""

    def __init__(self, computed: dict[str, set[str]]) -> None:
        self.computed = computed

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        state = {p: f"<{args.name}.{p}>" for p in self.computed.get(args.name, ())}
        return f"{args.name}_id", {**state, **args.inputs}

    def call(self, args: pulumi.runtime.MockCallArgs):
        return {}


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def _provider_class(token: str) -> type:
    """`alicloud:ess/scalingGroup:ScalingGroup` -> pulumi_alicloud.ess.ScalingGroup; `pulumi:providers:X` -> X's Provider."""
    pkg, middle, cls = token.split(":")
    if pkg == "pulumi" and middle == "providers":
        return importlib.import_module(PACKAGES[cls]).Provider
    module = middle.split("/")[0].lower()
    module = f"{module}_" if keyword.iskeyword(module) else module
    return getattr(importlib.import_module(f"{PACKAGES[pkg]}.{module}"), cls)


_PLACEHOLDER = re.compile(r"<([^<>.]+)\.([^<>]+)>")


def _wired(value: Any, made: dict[str, pulumi.Resource], used: list[pulumi.Resource]) -> Any:
    """`value` with each mock id of a made resource (`<name>_id`) as that resource's `id` Output and each
    `<name.property>` as its Output, as the program passes them; the resources so used appended to `used`."""
    if isinstance(value, list):
        return [_wired(v, made, used) for v in value]
    if isinstance(value, dict):
        return {k: _wired(v, made, used) for k, v in value.items()}
    if not isinstance(value, str):
        return value
    if value.endswith("_id") and isinstance(made.get(value[:-3]), pulumi.CustomResource):
        used.append(made[value[:-3]])
        return made[value[:-3]].id
    parts = _PLACEHOLDER.split(value)
    if len(parts) == 1:
        return value
    out: list[Any] = []
    for i in range(0, len(parts) - 1, 3):
        name, prop = parts[i + 1], parts[i + 2]
        res = made.get(name)
        if isinstance(res, pulumi.CustomResource):
            used.append(res)
        out += [parts[i], getattr(res, _snake(prop)) if isinstance(res, pulumi.CustomResource) else f"<{name}.{prop}>"]
    out.append(parts[-1])
    return pulumi.Output.concat(*out) if len(out) > 1 else out[0]


def _named(value: Any, names: set[str]) -> set[str]:
    """The names in `names` that `value` refers to by mock id or `<name.property>`."""
    if isinstance(value, (list, dict)):
        items = value.values() if isinstance(value, dict) else value
        return set().union(*(_named(v, names) for v in items))
    if not isinstance(value, str):
        return set()
    found = {n for n, _ in _PLACEHOLDER.findall(value) if n in names}
    return found | ({value[:-3]} if value.endswith("_id") and value[:-3] in names else set())


def _program(records: list[dict[str, Any]]) -> None:
    """Register `records` parents first, each after the resources it uses or waited for (`dependsOn`: [type, name]
    pairs, when the recording has them), taking those resources' Outputs as the program did."""
    made: dict[str, pulumi.Resource] = {}
    by_key: dict[tuple[str, str], pulumi.Resource] = {}
    custom = {r["name"] for r in records if r["custom"]}
    pending = list(records)
    while pending:
        later = []
        for r in pending:
            waits = [tuple(k) for k in r.get("dependsOn", ())]
            needs = ({r["parent"]} if r["parent"] else set()) | _named(r["inputs"], custom) - {r["name"]}
            if any(n not in made for n in needs) or any(k not in by_key for k in waits):
                later.append(r)
                continue
            opts = pulumi.ResourceOptions(parent=made.get(r["parent"]))
            if not r["custom"]:
                made[r["name"]] = by_key[r["type"], r["name"]] = pulumi.ComponentResource(r["type"], r["name"], None, opts)
                continue
            used: list[pulumi.Resource] = []
            refs = made | {k[1]: by_key[k] for k in waits}  # a name two resources share: the one the program waited for
            kwargs = {_snake(k): _wired(v, refs, used) for k, v in r["inputs"].items()}  # the class's own argument names
            rest = [by_key[k] for k in waits if by_key[k] not in used]  # waited for without taking an output: depends_on
            if rest:
                opts = pulumi.ResourceOptions(parent=opts.parent, depends_on=rest)
            made[r["name"]] = by_key[r["type"], r["name"]] = _provider_class(r["type"])(r["name"], opts=opts, **kwargs)
        if len(later) == len(pending):
            raise SystemExit(f"never registered (a parent or a resource used is missing): {sorted(r['name'] for r in later)}")
        pending = later
    for res in made.values():
        if isinstance(res, pulumi.ComponentResource) and not isinstance(res, pulumi.CustomResource):
            res.register_outputs({})


def run(records: list[dict[str, Any]], stack: str) -> None:
    settings.reset_options(project="gpufleet", stack=stack, preview=True)
    computed: dict[str, set[str]] = {}
    for name, prop in _PLACEHOLDER.findall(json.dumps([r["inputs"] for r in records])):
        computed.setdefault(name, set()).add(prop)
    pulumi.runtime.set_mocks(_Mocks(computed), project="gpufleet", stack=stack, preview=True)
    _program(records)
    _sync_await(pstack.wait_for_rpcs())
    settings.reset_options()


def main(paths: list[str]) -> None:
    for i, path in enumerate(paths):
        recorded = json.loads(open(path, encoding="utf-8").read())
        if i == 0:
            gc.freeze()  # start-up's objects, frozen when the first program starts, as gpufleet.collector does
        run(recorded["resources"], f"{recorded['stack']}-{i}")
    print(json.dumps({"programs": len(paths)}))
    gc.freeze()


if __name__ == "__main__":
    gc.set_threshold(100_000)  # the console script's collector policy (gpufleet.collector.THRESHOLD), set as it sets it
    main(sys.argv[1:])
