"""Golden resource inventories per shipped stack: type, name, parent and every input's value, so that a changed
threshold, name or argument fails here until the golden is deliberately refreshed.

Volatile or bulky values are normalised: a string longer than LONG characters (user-data, policy documents, the
scaler's code) is recorded as its length and sha256, so it still cannot change unseen.

Refresh after an intended change: pytest tests/test_goldens.py --update-goldens
"""

import hashlib
import json
from pathlib import Path

import pytest

from gpufleet.preview import preview_stack
from gpufleet.stacks import loader

ROOT = Path(__file__).resolve().parents[1]
GOLDENS = Path(__file__).parent / "goldens"


LONG = 200
CLOCK_KEYS = {"launchTime", "startTime", "endTime", "recurrenceEndTime"}  # schedules' next run: from the clock


def normalised(value, key=""):
    if key in CLOCK_KEYS and isinstance(value, str):
        return "<time from the clock>"
    if isinstance(value, str) and len(value) > LONG:
        return f"<{len(value)} chars, sha256 {hashlib.sha256(value.encode()).hexdigest()[:16]}>"
    if isinstance(value, dict):
        return {k: normalised(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [normalised(v) for v in value]
    return value


def summary(stack):
    inv = preview_stack(stack, ROOT)
    return {
        "resources": [
            {"type": r["type"], "name": r["name"], "parent": r["parent"], "inputs": normalised(dict(r["inputs"]))}
            for r in inv.resources
        ],
        "outputs": inv.outputs,
    }


def test_a_changed_value_is_seen():
    """Two inventories that differ only in one threshold have different summaries (the golden sees values)."""
    a = {"type": "t", "name": "n", "parent": None, "inputs": {"threshold": 4, "doc": "x" * (LONG + 1)}}
    b = {**a, "inputs": {**a["inputs"], "threshold": 5}}
    c = {**a, "inputs": {**a["inputs"], "doc": "y" * (LONG + 1)}}
    assert normalised(a["inputs"]) != normalised(b["inputs"]) and normalised(a["inputs"]) != normalised(c["inputs"])


@pytest.mark.parametrize("stack", loader.stack_names(ROOT))
def test_inventory_matches_golden(stack, request):
    got = summary(stack)
    path = GOLDENS / f"{stack}.json"
    if request.config.getoption("--update-goldens") or not path.exists():
        path.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        if not request.config.getoption("--update-goldens"):
            pytest.fail(f"wrote missing golden {path.name}; review and commit it")
    assert got == json.loads(path.read_text())
