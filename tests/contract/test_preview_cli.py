"""`gpufleet preview` refuses what the provider refuses: exit 2, the spec field, the rule's citation, no traceback."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _project(tmp_path: Path) -> Path:
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    shutil.copytree(ROOT / "stacks", tmp_path / "stacks", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "images").mkdir()
    shutil.copy(ROOT / "images" / "lock.json", tmp_path / "images" / "lock.json")  # user state: read from the project root
    return tmp_path


def _preview(project: Path, stack: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "GPUFLEET_PROJECT": str(project), "GPUFLEET_NOW": "2026-12-01T00:00:00Z", "COLUMNS": "400"}
    gpufleet = Path(sys.executable).with_name("gpufleet")
    return subprocess.run([str(gpufleet), "preview", "--stack", stack], capture_output=True, text=True, env=env, timeout=120)


def test_an_expired_schedule_window_is_refused_with_the_citation(tmp_path):
    project = _project(tmp_path)
    path = project / "stacks" / "Pulumi.alicloud-cn-hangzhou-prod.yaml"
    text = path.read_text()
    assert "      drain_timeout_s: 660\n" in text
    path.write_text(
        text.replace("      drain_timeout_s: 660\n", "      drain_timeout_s: 660\n      schedule_window_start: 2025-06-01\n")
    )
    result = _preview(project, "alicloud-cn-hangzhou-prod")
    out = result.stdout + result.stderr
    assert result.returncode == 2, out
    assert "fleet.autoscaling.schedule_window_start" in out and "recurrence_end_time" in out
    assert "ess_scheduled_task.html.markdown" in out and "Traceback" not in out
