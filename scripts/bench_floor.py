"""The matched floor of scripts/bench.py: register the resources a preview recorded, and nothing of gpufleet.

    python scripts/bench_floor.py RECORDED.json [RECORDED.json ...]

Each RECORDED.json is what `gpufleet preview --stack S --json` printed (written once, before timing). For each file,
this program runs one Pulumi program under the SDK's mock engine that registers the same resources (same type tokens,
names, parents and inputs) through the same provider classes (`pulumi_alicloud.ess.ScalingGroup` for
`alicloud:ess/scalingGroup:ScalingGroup`; components as `pulumi.ComponentResource` of the same type), waits for the
outstanding work as the preview does, and manages the collector as the CLI does (its first threshold raised at the
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
    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        return f"{args.name}_id", dict(args.inputs)

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


def _program(records: list[dict[str, Any]]) -> None:
    made: dict[str, pulumi.Resource] = {}
    pending = list(records)
    while pending:  # parents before children, as the program registers them
        later = []
        for r in pending:
            if r["parent"] is not None and r["parent"] not in made:
                later.append(r)
                continue
            opts = pulumi.ResourceOptions(parent=made.get(r["parent"]))
            if not r["custom"]:
                made[r["name"]] = pulumi.ComponentResource(r["type"], r["name"], None, opts)
                continue
            kwargs = {_snake(k): v for k, v in r["inputs"].items()}  # the class's own argument names
            made[r["name"]] = _provider_class(r["type"])(r["name"], opts=opts, **kwargs)
        if len(later) == len(pending):
            raise SystemExit(f"parents never registered: {sorted({r['parent'] for r in later})}")
        pending = later
    for res in made.values():
        if isinstance(res, pulumi.ComponentResource) and not isinstance(res, pulumi.CustomResource):
            res.register_outputs({})


def run(records: list[dict[str, Any]], stack: str) -> None:
    settings.reset_options(project="gpufleet", stack=stack, preview=True)
    pulumi.runtime.set_mocks(_Mocks(), project="gpufleet", stack=stack, preview=True)
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
