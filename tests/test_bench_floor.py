"""scripts/bench_floor.py, the floor the preview's speed is measured against (issue 25), registers exactly what the
preview recorded, through the provider classes, and imports nothing of gpufleet."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpufleet import mockengine, preview

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import bench_floor  # noqa: E402

STACKS = ["alicloud-cn-hangzhou-prod", "tencentcloud-ap-guangzhou-prod"]


def _shape(resources):
    return sorted((r["type"], r["name"], r["parent"], r["custom"], json.dumps(r["inputs"], sort_keys=True)) for r in resources)


@pytest.mark.parametrize("stack", STACKS)
def test_the_floor_registers_what_the_preview_recorded(stack):
    recorded = preview.preview_stack(stack).resources
    again, _ = mockengine.run(lambda: bench_floor._program(recorded), stack, {})
    assert _shape(again) == _shape(recorded)  # each custom resource through its provider class (no fallback exists)


def test_the_floor_imports_nothing_of_gpufleet(tmp_path):
    stack = STACKS[1]
    path = tmp_path / "recorded.json"
    path.write_text(json.dumps({"stack": stack, "resources": preview.preview_stack(stack).resources}))
    code = (
        "import runpy, sys; sys.argv = ['bench_floor', sys.argv[1]]\n"
        f"runpy.run_path({str(ROOT / 'scripts' / 'bench_floor.py')!r}, run_name='__main__')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'gpufleet'))"
    )
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ['{"programs": 1}', "[]"]
