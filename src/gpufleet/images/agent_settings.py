"""The node agent's timings and retries (images/node_agent.yaml), read once: the agent's config carries them
(images/node.py) and the Tencent scaler's package its read timeout."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from gpufleet import inputs

PATH = Path(__file__).with_name("node_agent.yaml")


@cache
def load() -> dict:
    return inputs.load_mapping(PATH, "images/node_agent.yaml")
