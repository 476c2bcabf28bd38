"""The Python files that run away from the controller import only what is there: the standard library of the node's
python3 (and jinja2, which comes with cloud-init, for the gateway renderer), and of the Tencent scaler function's
runtime. gpufleet's own dependencies (msgspec, pydantic, typer, ...) are not installed on a node: a record type from
them in one of these files stopped the gateway from rendering on every boot (caught by tests/node, once)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from gpufleet import registry
from gpufleet.components.tencentcloud.scaler import package as scaler
from gpufleet.images import gateway, node_agent

ALLOWED = {"jinja2"}  # python3-jinja2, installed with cloud-init on the images' Ubuntu


def off_controller_files() -> list[Path]:
    node_modules = [p for name in registry.names() if (p := registry.node_module_file(name))]
    return [Path(gateway.__file__), Path(node_agent.__file__), *node_modules, scaler.HERE / "index.py"]


def imported(path: Path) -> set[str]:
    """Top-level package of every absolute import in the file, at any depth (lazy imports in functions too), except
    gpufleet's own inside a function: the controller half of a two-sided module (gateway.values_from_fleet) reads the
    fleet through gpufleet, and the node never calls it."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lazy = {id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef) for n in ast.walk(f)}
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found = {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module != "__future__":
            found = {str(node.module).split(".")[0]}
        else:
            continue
        names |= found - {"gpufleet"} if id(node) in lazy else found
    return names


@pytest.mark.parametrize("path", off_controller_files(), ids=lambda p: p.name)
def test_runs_on_the_standard_library(path):
    foreign = imported(path) - set(sys.stdlib_module_names) - ALLOWED
    assert not foreign, f"{path} imports {sorted(foreign)}, which the node or the function runtime does not have"


def test_the_check_sees_a_foreign_import(tmp_path):
    f = tmp_path / "x.py"
    f.write_text("import json\nimport gpufleet\n\ndef f():\n    from msgspec import Struct\n    from gpufleet import registry\n")
    assert imported(f) - set(sys.stdlib_module_names) == {"msgspec", "gpufleet"}  # gpufleet: the module-level one
