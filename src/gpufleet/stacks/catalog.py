"""Read-only facts the spec is resolved against: GPU kinds, regions, zones, instance types.

The data lives in YAML files with sources and dates: GPU kinds in stacks/data/gpus.yaml, each cloud's regions
and instance types in the file its profile names (registry.profile(cloud).catalog); this module only loads and
looks up. The clouds are the registry's (gpufleet.registry).
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

from msgspec import Struct

from gpufleet import inputs, registry
from gpufleet.errors import did_you_mean
from gpufleet.files import package_file

DATA = Path(__file__).parent / "data"


def clouds() -> tuple[str, ...]:
    return registry.names()


def __getattr__(name: str):
    if name == "CLOUDS":  # the registered clouds, read when asked (a test may register one)
        return clouds()
    raise AttributeError(name)


class GpuKind(Struct, frozen=True):
    """A GPU kind of stacks/data/gpus.yaml."""

    name: str
    model: str
    architecture: str
    compute_capability: str
    memory_gib: int

    @property
    def cc(self) -> tuple[int, int]:
        major, minor = self.compute_capability.split(".")
        return int(major), int(minor)


class InstanceType(Struct, frozen=True):
    """A GPU instance type a cloud's catalog lists."""

    cloud: str
    type: str
    gpu: str
    gpus: int
    vcpu: int
    memory_gib: int
    quality: str


@cache
def _read(path: Path) -> dict:
    return inputs.load_mapping(path, shown(path))


def shown(path: Path) -> str:
    """A data file as messages name it: one of the package's (DATA) by a path that exists from where the command runs
    (files.package_file: src/gpufleet/stacks/data/gpus.yaml in a checkout, .../site-packages/gpufleet/stacks/data/gpus.yaml
    installed; `stacks/data/gpus.yaml` read as the project's stacks/, which holds no such file); another as given."""
    if path.parent != DATA:
        return str(path)
    try:
        return _package_file(path, os.getcwd())
    except OSError:  # the current folder is gone: package_file names the full path
        return package_file(path)


@cache
def _package_file(path: Path, cwd: str) -> str:
    """package_file, once per file and current folder: it is named on every read (inputs.shaped), not only in a message,
    and realpath costs a syscall per path component (28M instructions of a Tencent preview, issue 25's bench)."""
    return package_file(path)


def gpus_file() -> str:
    """The GPU kinds' file (gpus.yaml) as messages name it."""
    return shown(DATA / "gpus.yaml")


def catalog_file(cloud: str) -> str:
    """The cloud's catalog (regions, zones, instance types) as messages name it."""
    return shown(_catalog(cloud))


def _catalog(cloud: str) -> Path:
    return registry.profile(cloud).catalog


def _load(cloud: str) -> dict:
    return _read(_catalog(cloud))


def gpu_kinds() -> dict[str, GpuKind]:
    with inputs.shaped(gpus_file()):
        return {k: GpuKind(name=k, **v) for k, v in _read(DATA / "gpus.yaml")["gpus"].items()}


def usable_memory() -> dict[str, dict]:
    """GPU kind -> the memory vLLM sees on it (stacks/data/gpus.yaml `usable_memory`, with sources)."""
    return _read(DATA / "gpus.yaml")["usable_memory"]


def regions(cloud: str) -> dict[str, dict[str, list[str]]]:
    """region -> zone -> GPU kinds sold there."""

    with inputs.shaped(shown(_catalog(cloud))):
        return {r: dict(v["zones"]) for r, v in _load(cloud)["regions"].items()}


class Location(Struct, frozen=True):
    """Where a region is (its cloud's catalog: regions.<region>.location): the city and its centre."""

    city: str
    lat: float
    lon: float


def locations(cloud: str) -> dict[str, Location]:
    """region -> its Location, for the regions whose catalog entry gives one."""

    with inputs.shaped(shown(_catalog(cloud))):
        return {r: Location(**v["location"]) for r, v in _load(cloud)["regions"].items() if v.get("location")}


def instance_types(cloud: str) -> list[InstanceType]:
    return [InstanceType(cloud=cloud, **row) for row in _load(cloud)["instance_types"]]


def instance_type(cloud: str, name: str) -> InstanceType | None:
    return next((t for t in instance_types(cloud) if t.type == name), None)


def default_instance_type(cloud: str, gpu: str, gpus: int) -> InstanceType | None:
    """The first catalog row for that GPU kind and count (the catalog lists the default size first)."""
    return next((t for t in instance_types(cloud) if t.gpu == gpu and t.gpus == gpus), None)


def zone_problem(cloud: str, region: str, zone: str, gpu: str | None = None) -> str | None:
    """Why `zone` cannot be used in `region` (a region of the cloud's catalog): it is not one of its zones, or it does
    not sell `gpu`; None when it can."""

    zones = regions(cloud)[region]
    if zone not in zones:
        return f"{zone!r} is not a zone of {region}" + did_you_mean(zone, zones)
    if gpu and gpu not in zones[zone]:
        selling = sorted(z for z, kinds in zones.items() if gpu in kinds)
        return f"{zone} does not sell {gpu} (zones of {region} that do: {', '.join(selling) or 'none'})"
    return None


def regions_selling(cloud: str, gpu: str) -> list[str]:
    return sorted(r for r, zones in regions(cloud).items() if any(gpu in kinds for kinds in zones.values()))
