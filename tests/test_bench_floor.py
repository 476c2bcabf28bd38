"""scripts/bench_floor.py, the floor the preview's speed is measured against (issue 25), registers exactly what the
preview recorded, through the provider classes, and imports nothing of gpufleet."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpufleet import mockengine, preview, registry

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import bench  # noqa: E402
import bench_floor  # noqa: E402

STACKS = ["alicloud-cn-hangzhou-prod", "tencentcloud-ap-guangzhou-prod"]


def _shape(resources):
    return sorted((r["type"], r["name"], r["parent"], r["custom"], json.dumps(r["inputs"], sort_keys=True)) for r in resources)


@pytest.mark.parametrize("stack", STACKS)
def test_the_floor_registers_what_the_preview_recorded(stack):
    recorded = preview.preview_stack(stack).resources
    computed = registry.profile(stack.split("-")[0]).computed  # outputs the provider computes, named as the preview names them
    again, _ = mockengine.run(lambda: bench_floor._program(recorded), stack, {}, computed)
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


@pytest.mark.parametrize("stack", STACKS)
def test_the_floor_waits_for_what_the_program_waits_for(stack, monkeypatch):
    """An input the program takes from another resource (an id, a computed property) is that resource's Output in the
    floor too, and what the program waits for otherwise the floor waits for too: the SDK does the same dependency work
    for both, per resource."""
    seen: list[tuple[str, str, tuple[str, ...]]] = []
    register = mockengine._Recorder.RegisterResource

    def recording(self, request):
        seen.append((request.type, request.name, tuple(sorted(u.rsplit("::", 1)[-1] for u in request.dependencies))))
        return register(self, request)

    recorded = bench.with_dependencies(lambda: preview.preview_stack(stack).resources)
    monkeypatch.setattr(mockengine._Recorder, "RegisterResource", recording)
    preview.preview_stack(stack)
    program, seen[:] = sorted(seen), []
    assert sum(bool(deps) for _, _, deps in program) >= 20  # the fleet's resources chain on each other
    mockengine.run(lambda: bench_floor._program(recorded), stack, {}, registry.profile(stack.split("-")[0]).computed)
    assert sorted(seen) == program
    plain = [{k: v for k, v in r.items() if k != "dependsOn"} for r in recorded]  # a recording without them: ids alone
    seen[:] = []
    mockengine.run(lambda: bench_floor._program(plain), stack, {}, registry.profile(stack.split("-")[0]).computed)
    assert sum(len(d) for _, _, d in seen) < sum(len(d) for _, _, d in program)
