"""What a light command imports (issue 25: imports at the top unless a measured start-up cost says otherwise). A
module moved to the top of a file that a light command imports can pull a heavy one onto its path: the sizing checks'
recipe import once put the recipe and stack models (pydantic, ~490M instructions) on `plan fit` without --stack. The
speed itself is measured by scripts/bench.py; this keeps the heaviest modules off these paths."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = """
import runpy, sys
sys.argv = ["gpufleet", *{args!r}]
try:
    runpy.run_module("gpufleet", run_name="__main__")
except SystemExit:
    pass
print("\\n".join(sorted(sys.modules)), file=sys.stderr)
"""

CASES = {
    "help": (["--help"], ("pulumi", "gpufleet.stacks.spec", "gpufleet.images.recipes", "gpufleet.cost.estimate", "jinja2")),
    "plan fit": (
        ["plan", "fit", "--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "A10"],
        ("pulumi", "gpufleet.stacks.spec", "gpufleet.images.recipes", "gpufleet.stacks.loader", "jinja2", "cryptography"),
    ),
    "preview": (
        ["preview", "--stack", "tencentcloud-ap-guangzhou-prod", "--json"],
        ("cryptography", "jinja2", "gpufleet.cost.catalog", "gpufleet.cost.estimate", "rich.table"),
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_a_light_command_keeps_the_heavy_modules_off_its_path(name):
    args, heavy = CASES[name]
    r = subprocess.run([sys.executable, "-c", PROBE.format(args=args)], capture_output=True, text=True, timeout=120)
    loaded = set(r.stderr.split())
    assert "gpufleet.cli" in loaded, r.stderr[-2000:]
    assert [m for m in heavy if m in loaded] == []
