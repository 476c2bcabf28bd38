"""Golden resource inventories (type, name, parent, sorted input keys) per shipped stack.

Refresh after an intended change: pytest tests/test_goldens.py --update-goldens
"""

import json
from pathlib import Path

import pytest
from gpufleet.stacks import loader

from gpufleet.preview import preview_stack

ROOT = Path(__file__).resolve().parents[1]
GOLDENS = Path(__file__).parent / "goldens"


def summary(stack):
    inv = preview_stack(stack, ROOT)
    return {
        "resources": [
            {"type": r["type"], "name": r["name"], "parent": r["parent"], "inputs": sorted(r["inputs"])} for r in inv.resources
        ],
        "outputs": inv.outputs,
    }


@pytest.mark.parametrize("stack", loader.stack_names(ROOT))
def test_inventory_matches_golden(stack, request):
    got = summary(stack)
    path = GOLDENS / f"{stack}.json"
    if request.config.getoption("--update-goldens") or not path.exists():
        path.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        if not request.config.getoption("--update-goldens"):
            pytest.fail(f"wrote missing golden {path.name}; review and commit it")
    assert got == json.loads(path.read_text())
