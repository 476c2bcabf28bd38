"""The runner self-test recipe: harmless real work (files, a user, a unit) under a temp prefix."""

from __future__ import annotations

from pathlib import Path

import yaml

SELFTEST = Path(__file__).parent / "selftest"
PREFIXES: list[Path] = []  # every prefix written: conftest.py removes their step locks (/run/lock) at the end


def tree_step(folder: Path) -> dict:
    """The self-test's first step: the app's tree under folder/root, its VERSION file read as the fact of pin app."""
    return {
        "name": "tree",
        "template": "tree",
        "fact": "file_line",
        "pin": "app",
        "vars": {"path": str(folder / "root" / "opt/app/VERSION")},
    }


def write_recipe(folder: Path, steps: list[dict] | None = None, name: str = "selftest") -> Path:
    """A self-test recipe doing harmless real work under folder/root; returns the recipe file."""
    prefix = folder / "root"
    PREFIXES.append(prefix)
    doc = {
        "name": name,
        "description": "runner self-test: files, a user and a unit in a temp prefix",
        "gpus": [],
        "os": "any",
        "pins": {"app": "1.2.3"},
        "templates": str(SELFTEST / "templates"),
        "manifest_facts": [],
        "layout": {
            "prefix": str(prefix),
            "venv": str(prefix / "venv"),
            "models": str(prefix / "models"),
            "user": "gpftest",
            "unit": "gpftest.service",
            "manifest": str(prefix / "etc/gpufleet/image-manifest.json"),
        },
        "steps": steps
        if steps is not None
        else [
            tree_step(folder),
            {"name": "user", "template": "user"},
            {"name": "unit", "template": "unit"},
        ],
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path
