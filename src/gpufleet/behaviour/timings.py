"""Timings as data with their sources: the node's (behaviour/data/node.yaml, one image for both clouds) and each
cloud's (components/<cloud>/simulation.yaml, read by that cloud's simulation module)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import yaml

from gpufleet.behaviour.model import QUALITIES, Timing
from gpufleet.sizing import checks, fit, models

NODE = Path(__file__).parent / "data" / "node.yaml"
GIB_TO_GBIT = 2**30 * 8 / 1e9  # 8.59 Gbit per GiB


@cache
def _read(path: str) -> dict:
    return yaml.safe_load(Path(path).read_text(encoding="utf-8"))


def read(path: Path) -> dict[str, Timing]:
    """name -> Timing of a timings file (each entry: seconds, quality, source)."""
    out = {}
    for name, row in _read(str(path)).items():
        if name == "as_of":
            continue
        if row["quality"] not in QUALITIES + ("declared",):
            raise ValueError(f"{path}: {name}: quality {row['quality']!r} is not one of {QUALITIES}")
        out[name] = Timing(
            name, float(row.get("seconds", row.get("value"))), row["quality"], " ".join(str(row["source"]).split())
        )
    return out


def weights_gib(fleet) -> tuple[float | None, str]:
    """The weights' size the node fetches: the model's weights as plan fit sizes them (all GPUs of the node)."""
    try:
        arch = models.resolve(fleet.spec.model.catalog or fleet.spec.model.name)
        serving = checks.serving_of(fleet.spec)
        r = fit.fit(arch, fleet.gpu, serving)
        return r.weights_gib * r.gpus, f"plan fit: {r.weights_gib:.2f} GiB per GPU x {r.gpus}"
    except Exception as exc:  # a model sizing cannot resolve: no fetch figure (said in the notes)
        return None, f"plan fit could not size the weights ({exc})"


def node(fleet) -> dict[str, Timing]:
    """The node's boot-to-serving timings for this fleet (the weights' size and enforce_eager come from it)."""
    t = read(NODE)
    gbps = t.pop("weights_fetch_gbps")
    gib, how = weights_gib(fleet)
    fetch = (gib or 0.0) * GIB_TO_GBIT / gbps.seconds
    t["weights_fetch_s"] = Timing(
        "weights_fetch_s",
        round(fetch, 1),
        "estimate",
        f"{how}, at {gbps.seconds:g} Gbit/s ({gbps.source})" if gib else how,
    )
    if getattr(fleet.spec.serving, "enforce_eager", False):
        g = t["cuda_graphs_s"]
        t["cuda_graphs_s"] = Timing(g.name, 0.0, "declared", "serving.enforce_eager: no CUDA graphs are captured")
    return t
