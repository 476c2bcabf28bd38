"""Each Pulumi project file of the checkout that names a virtualenv names the checkout's .venv: Pulumi reads a relative
`runtime.options.virtualenv` from the Pulumi.yaml's folder (an absolute one as it is), so a project file that moves
(the images program went to src/gpufleet/images/program/ and its `../../.venv` then named src/gpufleet/.venv, which
is no folder; it is now the project's images/program/, `../../.venv` again) must change its path with it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
VENV = os.path.normpath(ROOT / ".venv")


def _project_files() -> list[Path]:
    """The Pulumi.yaml (or .yml) and PulumiPolicy.yaml files git tracks: not a build/ copy of the package or one inside .venv."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--", "*Pulumi.yaml", "*Pulumi.yml", "*PulumiPolicy.yaml"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    names = ("Pulumi.yaml", "Pulumi.yml", "PulumiPolicy.yaml")  # a policy pack's project file names its runtime alike
    return [ROOT / f for f in out.decode().split("\0") if f and Path(f).name in names]


def _virtualenv(doc: dict) -> str | None:
    runtime = doc.get("runtime")
    options = runtime.get("options") if isinstance(runtime, dict) else None
    return options.get("virtualenv") if isinstance(options, dict) else None


def test_every_project_file_naming_a_virtualenv_names_the_checkouts_venv():
    named = {}
    for path in _project_files():
        venv = _virtualenv(yaml.safe_load(path.read_text()) or {})
        if venv is not None:
            named[path.relative_to(ROOT).as_posix()] = (venv, os.path.normpath(path.parent / venv))
    assert {"Pulumi.yaml", "images/program/Pulumi.yaml", "policy/PulumiPolicy.yaml"} <= set(named), (
        named
    )  # the test has its subjects
    wrong = [
        f"{f}: runtime.options.virtualenv: {venv!r} is {got}, not the checkout's {VENV}: write "
        f"{os.path.relpath(VENV, (ROOT / f).parent)!r}"
        for f, (venv, got) in sorted(named.items())
        if got != VENV
    ]
    assert wrong == []
