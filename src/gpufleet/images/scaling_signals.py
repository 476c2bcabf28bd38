"""The scaling signals the node publishes and the programs scale on: images/data/scaling_metrics.yaml, read once.

That file is the one home of the metric names, the dimension key, the namespace and the period (issue 18); the
clouds' scaling modules read them here and write no metric name of their own.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from msgspec import Struct

from gpufleet import inputs

PATH = Path(__file__).parent / "data" / "scaling_metrics.yaml"


class Signals(Struct, frozen=True):
    """Where the node publishes the scaling metrics: namespace, dimension, period and names."""

    namespace: str
    dimension: str
    period_s: int
    names: dict[str, str]  # key (queue, running, kv_cache) -> published metric name

    def name(self, key: str) -> str:
        return self.names[key]


@cache
def raw() -> dict:
    """The whole file, as the node agent's config and the Tencent scaler's package carry its metrics."""
    return inputs.load_mapping(PATH, "images/data/scaling_metrics.yaml")


@cache
def load() -> Signals:
    raw_ = raw()
    return Signals(
        namespace=raw_["namespace"],
        dimension=raw_["dimension"],
        period_s=int(raw_["period_s"]),
        names={k: v["name"] for k, v in raw_["metrics"].items()},
    )
