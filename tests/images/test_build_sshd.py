"""`gpufleet image build` against a real OpenSSH server on 127.0.0.1 with the self-test recipe."""
import subprocess
import sys
import time

import pytest

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("images_conftest", Path(__file__).with_name("conftest.py"))
_conftest = importlib.util.module_from_spec(_spec)
import sys as _sys
_sys.modules["images_conftest"] = _conftest
_spec.loader.exec_module(_conftest)
write_recipe = _conftest.write_recipe

pytestmark = pytest.mark.sshd


def build(sshd, recipe, *extra, known_hosts=None):
    cmd = [sys.executable, "-c", "from gpufleet.cli import main; main()", "image", "build", "--recipe", str(recipe),
           "--host", "127.0.0.1", "--port", str(sshd.port), "--key", str(sshd.key),
           "--known-hosts", str(known_hosts or sshd.known_hosts), "--retries", "2", "--backoff", "0.2", *extra]
    start = time.monotonic()
    run = subprocess.run(cmd, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "COLUMNS": "200"}, timeout=120)
    return run, time.monotonic() - start


def test_first_build_applies_then_rerun_changes_nothing(sshd, tmp_path):
    recipe = write_recipe(tmp_path)
    first, t1 = build(sshd, recipe)
    assert first.returncode == 0, first.stdout + first.stderr
    assert (tmp_path / "root/opt/app/VERSION").exists()
    assert (tmp_path / "root/etc/gpufleet/image-manifest.json").exists()
    second, t2 = build(sshd, recipe)
    assert second.returncode == 0, second.stdout + second.stderr
    text = (second.stdout + second.stderr).lower()
    assert "no change" in text or "nothing to do" in text or "already" in text, second.stdout
    print(f"first build {t1:.2f}s, no-change re-run {t2:.2f}s")


def test_unknown_host_key_is_refused(sshd, tmp_path):
    recipe = write_recipe(tmp_path)
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    run, _ = build(sshd, recipe, known_hosts=empty)
    assert run.returncode != 0
    assert "Traceback" not in run.stderr
    assert not (tmp_path / "root/opt/app/VERSION").exists()


def test_failing_step_stops_with_its_output(sshd, tmp_path):
    recipe = write_recipe(tmp_path, steps=[{"name": "boom", "template": "fail"}])
    run, _ = build(sshd, recipe)
    assert run.returncode != 0 and "Traceback" not in run.stderr
    assert "boom" in run.stdout + run.stderr
