"""Every rendered script of the production recipes (and the self-test) passes the real shellcheck."""

import subprocess

import pytest
from selftest_recipe import SELFTEST, write_recipe
from tools import require

from gpufleet.errors import UserError
from gpufleet.images.recipes import load_recipe
from gpufleet.images.steps import render


def _scripts(recipe):
    for s in render(recipe):
        for phase in ("check", "apply", "cleanup"):
            if getattr(s, phase):
                yield f"{s.name}.{phase}", getattr(s, phase)


@pytest.mark.parametrize("name", ["cuda13-vllm", "cuda12-vllm-v100"])
def test_production_scripts_pass_shellcheck(name, tmp_path):
    files = []
    for label, text in _scripts(load_recipe(name)):
        f = tmp_path / f"{label}.sh"
        f.write_text(text)
        files.append(str(f))
    assert len(files) >= 12
    r = subprocess.run([require("shellcheck"), "--shell=bash", "--severity=style", *files], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout


def test_selftest_scripts_pass_shellcheck(tmp_path):
    recipe = load_recipe(str(write_recipe(tmp_path)))
    files = []
    for label, text in _scripts(recipe):
        (tmp_path / f"{label}.sh").write_text(text)
        files.append(str(tmp_path / f"{label}.sh"))
    r = subprocess.run([require("shellcheck"), "--shell=bash", *files], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout


def test_shellcheck_catches_a_bad_script(tmp_path):
    f = tmp_path / "bad.sh"
    f.write_text("#!/usr/bin/env bash\nrm -rf $dir/*\n")
    assert subprocess.run([require("shellcheck"), str(f)], capture_output=True).returncode != 0


def test_strict_undefined(tmp_path):
    import jinja2

    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "oops.sh.j2").write_text(
        "{% block check %}echo {{ pins.nope }}{% endblock %}{% block apply %}:{% endblock %}"
    )
    path = write_recipe(tmp_path, steps=[{"name": "oops", "template": "oops"}], name="oops")
    text = path.read_text().replace(str(SELFTEST / "templates"), str(tmp_path / "t"))
    path.write_text(text)
    with pytest.raises(UserError, match=r"oops\.sh\.j2:1: cannot render: 'dict object' has no attribute 'nope'") as caught:
        render(load_recipe(str(path)))
    assert isinstance(caught.value.__context__, jinja2.UndefinedError)  # StrictUndefined raised it
