"""The scaling signals the node publishes and the programs scale on: components/data/scaling_metrics.yaml, read once.

That file is the one home of the metric names, the dimension key, the namespace and the period (issue 18); the
clouds' scaling modules read them here and write no metric name of their own.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

PATH = Path(__file__).parent / "data" / "scaling_metrics.yaml"


@dataclass(frozen=True)
class Signals:
    namespace: str
    dimension: str
    period_s: int
    names: dict[str, str]  # key (queue, running, kv_cache) -> published metric name

    def name(self, key: str) -> str:
        return self.names[key]


@cache
def load() -> Signals:
    raw = yaml.safe_load(PATH.read_text())
    return Signals(
        namespace=raw["namespace"],
        dimension=raw["dimension"],
        period_s=int(raw["period_s"]),
        names={k: v["name"] for k, v in raw["metrics"].items()},
    )
