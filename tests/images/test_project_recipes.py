"""A project's own recipes (images/recipes/<name>.yaml): a name is looked up there first, then among the shipped recipes,
for a stack's validation and preview, the image commands and the images program alike; a recipe's python_lock is a
file of the images/ folder holding it. Outside a project only the shipped recipes exist."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml
from inputs.inputs_helpers import run_cli

from gpufleet.images.pipeline import EXAMPLES, load_pipeline
from gpufleet.images.recipes import RECIPES, fleet_recipe, load_recipe, recipe_names
from gpufleet.validation import load_fleet

SHIPPED = RECIPES / "cuda13-vllm.yaml"
SHIPPED_LOCK = RECIPES.parent / "locks" / "cuda13-vllm.txt"
STACK = "alicloud-cn-hangzhou-dev"  # T4, recipe cuda13-vllm


def project_recipe(project: Path, name: str = "cuda13-vllm", lock: str | None = None, **changes) -> Path:
    """The shipped cuda13-vllm recipe as the project's images/recipes/<name>.yaml, with `changes`; `lock`: the text of
    the project's images/locks/cuda13-vllm.txt (the recipe's python_lock), none when None."""
    path = project / "images" / "recipes" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({**yaml.safe_load(SHIPPED.read_text()), "name": name, **changes}, sort_keys=False))
    if lock is not None:
        (project / "images" / "locks").mkdir(exist_ok=True)
        (project / "images" / "locks" / "cuda13-vllm.txt").write_text(lock)
    return path


def test_a_project_recipe_shadows_the_shipped_one_for_a_stack(project):
    assert fleet_recipe(load_fleet(STACK).spec).path == str(SHIPPED.resolve())
    mine = project_recipe(project, description="the project's copy, pins filled in")
    recipe = fleet_recipe(load_fleet(STACK).spec)
    assert recipe.path == str(mine.resolve()) and recipe.description == "the project's copy, pins filled in"
    assert recipe_names() == ["cuda12-vllm-v100", "cuda13-vllm"]  # listed once


def test_a_stack_previews_against_the_project_recipe(project, capsys):
    """The project's copy serves no T4: the T4 stack is refused, naming that recipe, as its shipped namesake is not."""
    project_recipe(project, gpus=["A10", "A100-40G"])
    r = run_cli(["preview", "--stack", STACK], capsys)
    assert r.code == 2 and "recipe cuda13-vllm does not serve T4 (it serves A10, A100-40G)" in r.err, r.err


def test_a_recipe_only_the_project_has_serves_a_stack(project, capsys):
    mine = project_recipe(project, name="mine", lock=SHIPPED_LOCK.read_text())
    doc = json.loads((project / "images" / "lock.json").read_text())
    doc["images"]["mine"] = doc["images"]["cuda13-vllm"]  # its placeholder images
    (project / "images" / "lock.json").write_text(json.dumps(doc))
    stack_file = project / "stacks" / f"Pulumi.{STACK}.yaml"
    stack_file.write_text(stack_file.read_text().replace("image: {recipe: cuda13-vllm}", "image: {recipe: mine}"))
    fleet = load_fleet(STACK)
    assert fleet.spec.image.recipe == "mine" and fleet_recipe(fleet.spec).path == str(mine.resolve())
    assert recipe_names() == ["cuda12-vllm-v100", "cuda13-vllm", "mine"]
    assert run_cli(["preview", "--stack", STACK], capsys).code == 0
    checked = run_cli(["image", "check", "-r", "mine", "--json"], capsys)
    assert checked.code == 0 and json.loads(checked.out)["recipes"][0]["recipe"] == "mine", checked.text
    # the images program takes it by name too (a stack of the project's images/program/, found before the examples)
    program = project / "images" / "program"
    program.mkdir()
    example = yaml.safe_load((EXAMPLES / "Pulumi.example-cuda13-vllm-alicloud.yaml").read_text())
    example["config"]["gpufleet-images:pipeline"]["recipe"] = "mine"
    (program / "Pulumi.mine.yaml").write_text(yaml.safe_dump(example))
    r = run_cli(["image", "pipeline", "-s", "mine", "--json"], capsys)
    assert r.code == 0 and json.loads(r.out)["stack_file"] == str(program / "Pulumi.mine.yaml"), r.text
    assert load_pipeline(program / "Pulumi.mine.yaml")[0].path == str(mine.resolve())


def test_image_render_reads_the_project_recipe_and_the_lock_beside_it(project, capsys, tmp_path):
    """The recipe's python_lock (locks/cuda13-vllm.txt) is the project's images/locks/ file, not the package's."""
    mine = project_recipe(project)
    out = tmp_path / "scripts"
    r = run_cli(["image", "render", "-r", "cuda13-vllm", "--out-dir", out], capsys)
    assert r.code == 2 and not out.exists()
    assert (
        f"recipe.python_lock: locks/cuda13-vllm.txt is missing in {project / 'images'}/: copy the package's "
        f"src/gpufleet/images/locks/cuda13-vllm.txt there (it locks the shipped recipe's pins: right while the copy "
        "keeps them), or write it with a gpufleet checkout's scripts/lock_image_python.py cuda13-vllm, run in this "
        "project" in r.err
    ), r.err
    project_recipe(project, lock="# the project's own lock\n" + SHIPPED_LOCK.read_text())
    for given in ("cuda13-vllm", str(mine)):  # by name, and by the file's path: the same images/ folder
        shutil.rmtree(out, ignore_errors=True)
        r = run_cli(["image", "render", "-r", given, "--out-dir", out], capsys)
        assert r.code == 0, r.text
        assert any("# the project's own lock" in p.read_text() for p in out.iterdir())


def test_outside_a_project_only_the_shipped_recipes_exist(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("GPUFLEET_PROJECT", raising=False)
    monkeypatch.chdir(tmp_path)
    project_recipe(tmp_path, name="mine")  # images/recipes/ of a folder that is no project (no Pulumi.yaml, stacks/)
    assert recipe_names() == ["cuda12-vllm-v100", "cuda13-vllm"]
    assert load_recipe("cuda13-vllm").path == str(SHIPPED.resolve())
    r = run_cli(["image", "render", "-r", "cuda13-vllm", "--out-dir", tmp_path / "out"], capsys)
    assert r.code == 0, r.text
    r = run_cli(["image", "check", "-r", "mine"], capsys)
    assert r.code == 2 and "no such image recipe 'mine' (choose one of: cuda12-vllm-v100, cuda13-vllm)" in r.err, r.err
    assert "looked in" not in r.err  # one folder: the file named is in it
    r = run_cli(["image", "pipeline", "-s", "example-cuda13-vllm-alicloud", "--json"], capsys)
    assert r.code == 0 and json.loads(r.out)["stack_file"] == str(EXAMPLES / "Pulumi.example-cuda13-vllm-alicloud.yaml")


def test_a_missing_recipe_names_both_folders_in_a_project(project, capsys, monkeypatch):
    monkeypatch.chdir(project)
    r = run_cli(["image", "check", "-r", "cuda13-vlm"], capsys)
    assert r.code == 2, r.text
    assert (
        "images/recipes/cuda13-vlm.yaml: no such image recipe 'cuda13-vlm' (did you mean 'cuda13-vllm'?); looked in "
        f"images/recipes/ and {SHIPPED.parent.resolve()}/"
    ) in r.err, r.err
