"""Bad recipe files and bad `image` options: exit 2 with the file (or option), the field and the fix, never a traceback,
and nothing created or half-written."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from inputs.inputs_helpers import run_cli

from gpufleet.errors import UserError
from gpufleet.images.recipes import RECIPES, load_recipe

SHIPPED = RECIPES / "cuda13-vllm.yaml"


def variant(folder: Path, **changes) -> Path:
    """The shipped cuda13-vllm recipe with `changes`, written to folder/recipe.yaml."""
    doc = {**yaml.safe_load(SHIPPED.read_text()), **changes}
    path = folder / "recipe.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def refused(r, *words: str) -> None:
    assert r.code == 2, r.text
    assert "Traceback" not in r.text
    for w in words:
        assert w in r.err, r.err


@pytest.mark.parametrize("archs", [["abc"], ["8"], ["9.0a"], ["8.6", "sm_90"]])
@pytest.mark.parametrize("command", [["image", "check"], ["image", "build", "--dry-run"]])
def test_torch_cuda_archs_not_major_minor_is_a_recipe_problem(capsys, tmp_path, archs, command):
    path = variant(tmp_path, torch_cuda_archs=archs)
    bad = next(a for a in archs if a not in ("8.6",))
    r = run_cli([*command, "-r", path], capsys)
    refused(r, str(path), "recipe.torch_cuda_archs.", f"{bad!r} is not a compute capability", 'e.g. "8.6"')


@pytest.mark.parametrize("name", ["../../evil", "a/b", ".hidden", "..", "Cuda13", "x y", ""])
@pytest.mark.parametrize("command", [["image", "check"], ["image", "build", "--dry-run"]])
def test_recipe_name_must_be_one_safe_path_component(capsys, tmp_path, name, command):
    path = variant(tmp_path, name=name)
    r = run_cli([*command, "-r", path], capsys)
    refused(r, str(path), "recipe.name", "is not a recipe name", "lowercase letters, digits")


def test_shipped_recipe_names_and_archs_pass():
    for path in RECIPES.glob("*.yaml"):
        load_recipe(path.stem)


def test_safe_recipe_name_in_a_file_of_its_own_loads(tmp_path):
    assert load_recipe(str(variant(tmp_path, name="my_recipe.v2"))).name == "my_recipe.v2"
    with pytest.raises(UserError) as e:
        (tmp_path / "up").mkdir()
        load_recipe(str(variant(tmp_path / "up", name="../up")))
    assert [p.path for p in e.value.problems] == ["recipe.name"]
