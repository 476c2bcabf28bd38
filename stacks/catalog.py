"""Read-only facts the spec is resolved against: GPU kinds, regions, zones, instance types.

The data lives in stacks/data/*.yaml with sources and dates; this module only loads and looks up.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from gpufleet import inputs

DATA = Path(__file__).parent / "data"
CLOUDS = ("alicloud", "tencentcloud")


@dataclass(frozen=True)
class GpuKind:
    name: str
    model: str
    architecture: str
    compute_capability: str
    memory_gib: int

    @property
    def cc(self) -> tuple[int, int]:
        major, minor = self.compute_capability.split(".")
        return int(major), int(minor)


@dataclass(frozen=True)
class InstanceType:
    cloud: str
    type: str
    gpu: str
    gpus: int
    vcpu: int
    memory_gib: int
    quality: str


@cache
def _load(name: str) -> dict:
    return inputs.load_mapping(DATA / f"{name}.yaml", f"stacks/data/{name}.yaml")


def gpu_kinds() -> dict[str, GpuKind]:
    with inputs.shaped("stacks/data/gpus.yaml"):
        return {k: GpuKind(name=k, **v) for k, v in _load("gpus")["gpus"].items()}


def regions(cloud: str) -> dict[str, dict[str, list[str]]]:
    """region -> zone -> GPU kinds sold there."""
    with inputs.shaped(f"stacks/data/{cloud}.yaml"):
        return {r: dict(v["zones"]) for r, v in _load(cloud)["regions"].items()}


def cloud_meta(cloud: str) -> dict:
    return {k: v for k, v in _load(cloud).items() if k not in ("regions", "instance_types")}


def instance_types(cloud: str) -> list[InstanceType]:
    return [InstanceType(cloud=cloud, **row) for row in _load(cloud)["instance_types"]]


def instance_type(cloud: str, name: str) -> InstanceType | None:
    return next((t for t in instance_types(cloud) if t.type == name), None)


def default_instance_type(cloud: str, gpu: str, gpus: int) -> InstanceType | None:
    """The first catalog row for that GPU kind and count (the catalog lists the default size first)."""
    return next((t for t in instance_types(cloud) if t.gpu == gpu and t.gpus == gpus), None)


def regions_selling(cloud: str, gpu: str) -> list[str]:
    return sorted(r for r, zones in regions(cloud).items() if any(gpu in kinds for kinds in zones.values()))
