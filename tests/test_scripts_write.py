"""The scripts in scripts/ that rewrite a file (a shipped snapshot, a lock, a doc's table) write it through
gpufleet.files, as every command does: a write that fails (a full disk) leaves the old file whole and is exit 2 with
the message. They wrote in place (Path.write_text): a full disk left a lock cut mid-hash, a truncated snapshot that
every preview reads."""

from __future__ import annotations

import ast
import errno
import importlib.util
import inspect
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OLD = "old content\n"


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"script_{name}", ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(monkeypatch, module, argv: list[str]) -> int:
    monkeypatch.setattr(sys, "argv", [module.__file__, *argv])
    return module.main(argv) if inspect.signature(module.main).parameters else module.main()


@pytest.fixture
def full_disk(monkeypatch):
    """Every temporary write of gpufleet.files fails with ENOSPC; the names it was asked to write."""
    from gpufleet import files

    names: list[str] = []

    def enospc(folder, name, data, mode):
        names.append(name)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files, "_write_temp", enospc)
    return names


SHIPPED_RECIPE = ROOT / "src" / "gpufleet" / "images" / "recipes" / "cuda13-vllm.yaml"
SHIPPED_LOCK = ROOT / "src" / "gpufleet" / "images" / "locks" / "cuda13-vllm.txt"


def lock_project(tmp_path, monkeypatch, module, name: str = "cuda13-vllm", lock: str | None = OLD) -> Path:
    """A project (GPUFLEET_PROJECT) whose images/recipes/<name>.yaml is the shipped cuda13-vllm recipe named `name`,
    its python_lock locks/<name>.txt holding `lock` (none when None); pip's report monkeypatched. Its lock's path."""
    project = tmp_path / "project"
    (project / "stacks").mkdir(parents=True)
    (project / "Pulumi.yaml").write_text("name: p\n")
    recipe = project / "images" / "recipes" / f"{name}.yaml"
    recipe.parent.mkdir(parents=True)
    text = SHIPPED_RECIPE.read_text().replace("name: cuda13-vllm", f"name: {name}")
    recipe.write_text(text.replace("locks/cuda13-vllm.txt", f"locks/{name}.txt"))
    out = project / "images" / "locks" / f"{name}.txt"
    if lock is not None:
        out.parent.mkdir()
        out.write_text(lock)
    monkeypatch.setenv("GPUFLEET_PROJECT", str(project))
    item = {"metadata": {"name": "six", "version": "1.17.0"}}
    item["download_info"] = {"url": "https://x/six-1.17.0-py2.py3-none-any.whl", "archive_info": {"hashes": {"sha256": "0" * 64}}}
    monkeypatch.setattr(module, "pip_report", lambda *a, **k: {"install": [item]})
    return out


def lock_image_python(tmp_path, monkeypatch, module):
    """A project's copy of a shipped recipe: its lock is the project's (never the package's, which the tests would
    otherwise rewrite)."""
    return ["cuda13-vllm"], [lock_project(tmp_path, monkeypatch, module)]


def config_defaults_snapshot(tmp_path, monkeypatch, module):
    out = tmp_path / "config_defaults.json"
    out.write_text(OLD)
    monkeypatch.setattr(module, "OUT", out)
    monkeypatch.setattr(module, "snapshot", lambda: {"transformers": "0", "fields": [], "types": {}})
    return [], [out]


def price_points_table(tmp_path, monkeypatch, module):
    out = tmp_path / "table.md"
    out.write_text(OLD)
    return ["--cloud", "alicloud", "-o", str(out)], [out]


def sizing_calibration_table(tmp_path, monkeypatch, module):
    doc = tmp_path / "sizing.md"
    doc.write_text(f"head\n{module.START}\nold table\n{module.END}\ntail\n")
    monkeypatch.setattr(module, "DOC", doc)
    return [], [doc]


def vllm_args_snapshot(tmp_path, monkeypatch, module):
    out = tmp_path / "0.0.1.json"
    out.write_text(OLD)
    monkeypatch.setattr(module, "build", lambda: {"vllm_version": "0.0.1", "args": {}})
    return ["-o", str(out)], [out]


def vllm_registry_snapshot(tmp_path, monkeypatch, module):
    out = tmp_path / "vllm_architectures.json"
    out.write_text(OLD)
    monkeypatch.setattr(module, "OUT", out)
    monkeypatch.setattr(module, "snapshot", lambda wheels: {"generator": "scripts/vllm_registry_snapshot.py", "releases": {}})
    return ["vllm-0.0.1.whl"], [out]


SETUPS = [
    lock_image_python,
    config_defaults_snapshot,
    price_points_table,
    sizing_calibration_table,
    vllm_args_snapshot,
    vllm_registry_snapshot,
]


@pytest.mark.parametrize("setup", SETUPS, ids=[s.__name__ for s in SETUPS])
def test_a_script_whose_write_fails_keeps_the_old_file(tmp_path, monkeypatch, capsys, full_disk, setup):
    module = load(setup.__name__)
    argv, outputs = setup(tmp_path, monkeypatch, module)
    before = {p: p.read_bytes() for p in outputs}
    code = run(monkeypatch, module, argv)
    err = capsys.readouterr().err
    assert code == 2 and "No space left on device" in err and "Traceback" not in err, err
    assert {p: p.read_bytes() for p in outputs} == before  # every old file whole
    assert full_disk and sorted(p.name for p in tmp_path.rglob("*") if p.name.endswith(".tmp")) == []


@pytest.mark.parametrize("setup", SETUPS, ids=[s.__name__ for s in SETUPS])
def test_a_script_writes_its_file(tmp_path, monkeypatch, capsys, setup):
    module = load(setup.__name__)
    argv, outputs = setup(tmp_path, monkeypatch, module)
    assert run(monkeypatch, module, argv) == 0, capsys.readouterr().err
    assert all(p.read_text() != OLD and "old table" not in p.read_text() for p in outputs)
    assert sorted(p.name for p in tmp_path.rglob("*") if p.name.startswith(".")) == []


@pytest.mark.parametrize("name", ["cuda13-vllm", "mine"])
def test_lock_image_python_writes_a_project_recipes_lock_where_the_recipe_reads_it(tmp_path, monkeypatch, capsys, name):
    """Review F1: the script wrote src/gpufleet/images/locks/<name>.txt whatever the recipe: a project's copy of a
    shipped recipe overwrote the shipped lock with its pins, and a recipe only the project has got a package file it
    never reads (its refusal stayed). It writes the recipe's python_lock under the project's images/ now."""
    from gpufleet.images.recipes import load_recipe
    from gpufleet.images.steps import python_lock_text

    module = load("lock_image_python")
    shipped = SHIPPED_LOCK.read_bytes()
    out = lock_project(tmp_path, monkeypatch, module, name, lock=None)  # none yet: the folder is made
    monkeypatch.chdir(tmp_path)
    assert run(monkeypatch, module, [name]) == 0, capsys.readouterr().err
    assert capsys.readouterr().out == f"wrote project/images/locks/{name}.txt (1 packages)\n"
    assert SHIPPED_LOCK.read_bytes() == shipped
    assert "six==1.17.0" in out.read_text() == python_lock_text(load_recipe(name))  # what the recipe reads


def test_lock_image_python_refuses_a_recipe_file_whose_lock_would_be_the_packages(tmp_path, monkeypatch, capsys):
    module = load("lock_image_python")
    shipped = SHIPPED_LOCK.read_bytes()
    lock_project(tmp_path, monkeypatch, module)
    elsewhere = tmp_path / "elsewhere.yaml"  # in no recipes folder: its python_lock is named under the package's images/
    elsewhere.write_text(SHIPPED_RECIPE.read_text())
    assert run(monkeypatch, module, [str(elsewhere)]) == 2
    err = capsys.readouterr().err
    assert "its lock would be written into the package's" in err and "images/recipes/ as cuda13-vllm.yaml" in err, err
    assert SHIPPED_LOCK.read_bytes() == shipped


# Writes a script may make without gpufleet.files: new files inside a temporary folder of its own.
TEMPORARY = {
    ("bench.py", "path"),  # tempfile.TemporaryDirectory()
    ("lock_image_python.py", "pinned"),  # pip's constraints, in a TemporaryDirectory
    ("rollout_demo.py", "stack"),  # the demo's copy of the example stack, in a TemporaryDirectory
    ("wheel_cuda_archs.py", "so"),  # the library taken out of a wheel, in a TemporaryDirectory
}


def test_scripts_write_files_only_through_gpufleet_files():
    """A new script that rewrites a file with Path.write_text / write_bytes or open(..., "w") fails here: write it
    through gpufleet.files (write_atomic, write_folder), or add its temporary file to TEMPORARY."""
    found = set()
    for path in sorted((ROOT / "scripts").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute | ast.Name):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
            if name in ("write_text", "write_bytes") and isinstance(node.func, ast.Attribute):
                found.add((path.name, ast.unparse(node.func.value)))
            elif name == "open" and any(
                isinstance(a, ast.Constant) and isinstance(a.value, str) and set(a.value) & set("wax+")
                for a in [*node.args[1:2], *(k.value for k in node.keywords if k.arg == "mode")]
            ):
                found.add((path.name, ast.unparse(node)))
    assert found == TEMPORARY
