from pathlib import Path

import pytest

from gpufleet.simulate import capacity

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def cap():
    """Per-node capacity: the example load test's knee (synthetic; the check is about the scaling, not the GPU)."""
    return capacity.from_loadtest(ROOT / "examples" / "loadtest-example.json")
