"""A project's own recipes (images/recipes/<name>.yaml): a name is looked up there first, then among the shipped recipes,
for a stack's validation and preview, the image commands and the images program alike; a recipe's python_lock is a
file of the images/ folder holding it. Outside a project only the shipped recipes exist."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
import yaml
from inputs.inputs_helpers import run_cli

from gpufleet.errors import UserError
from gpufleet.images.pipeline import EXAMPLES, load_pipeline
from gpufleet.images.recipes import RECIPES, fleet_recipe, load_recipe, recipe_names
from gpufleet.sizing import profiler
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


# --- a project's images/recipes/ (and images/program/) that cannot be searched, or an entry of it that is no file: every
# command refuses it the same way, naming the project's path (review F2, M2, M3: the shipped recipe was used silently
# where `preview` refused, and a link loop was a traceback)
REFUSING = [
    ["image", "check", "-r", "cuda13-vllm"],
    ["image", "check"],
    ["image", "build", "-r", "cuda13-vllm", "--host", "192.0.2.1", "--dry-run"],
    ["image", "render", "-r", "cuda13-vllm", "--out-dir", "{out}"],
    ["image", "pipeline", "-s", "example-cuda13-vllm-alicloud", "--json"],
    ["preview", "--stack", STACK],
    ["plan", "fit", "--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "A10"],
    ["plan", "fit", "--stack", STACK],
    ["region", "new", "--cloud", "alicloud", "--region", "cn-beijing", "--env", "dev", "--dry-run"],
]


def refused_everywhere(capsys, tmp_path, said: str) -> None:
    for argv in REFUSING:
        r = run_cli([a.replace("{out}", str(tmp_path / "out")) for a in argv], capsys)
        assert r.code == 2 and said in r.err and "Traceback" not in r.err, (argv, r.text)
        assert "--recipe" not in r.err, (argv, r.err)  # never blamed on a flag


def broken(path: Path, how: str) -> str:
    """Make `path` a file, a folder, a link that leads nowhere or a link loop; what a refusal of it says."""
    if how == "file":
        path.write_text("x\n")
        return "is a file"
    if how == "folder":
        path.mkdir()
        return "is a folder, not the recipe's file"
    if how == "dangling link":
        path.symlink_to(path.parent / "nowhere")
        return f"is a symbolic link that leads to nothing (to {path.parent / 'nowhere'}): fix the link"
    (path.parent / "loop").symlink_to(path)
    path.symlink_to(path.parent / "loop")
    return "is a loop of symbolic links"


@pytest.mark.parametrize("how", ["file", "dangling link", "loop"])
def test_a_project_recipes_folder_that_cannot_be_searched_is_refused_by_every_command(project, capsys, tmp_path, how):
    said = broken(project / "images" / "recipes", how)
    refused_everywhere(capsys, tmp_path, f"{project / 'images' / 'recipes'}: {said}")


@pytest.mark.parametrize("how", ["folder", "dangling link", "loop"])
def test_a_project_recipe_that_is_no_file_is_refused_by_every_command(project, capsys, tmp_path, how):
    (project / "images" / "recipes").mkdir()
    said = broken(project / "images" / "recipes" / "cuda13-vllm.yaml", how)
    refused_everywhere(capsys, tmp_path, f"{project / 'images' / 'recipes' / 'cuda13-vllm.yaml'}: {said}")


def test_a_project_recipes_folder_that_cannot_be_listed_is_refused(project, capsys, monkeypatch):
    """chmod 000 (tests run as root, whom permissions do not stop: the listing fails as it does for a user)."""
    folder = project / "images" / "recipes"
    folder.mkdir()
    real = os.scandir

    def scandir(path="."):
        if Path(path) == folder:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    r = run_cli(["image", "check", "-r", "cuda13-vllm"], capsys)
    assert r.code == 2 and f"{folder}: cannot be listed (Permission denied): fix its permissions" in r.err, r.text


def test_a_gpufleet_project_that_is_no_folder_is_refused_by_the_recipe_lookup(capsys, tmp_path, monkeypatch):
    """A misspelt GPUFLEET_PROJECT took the shipped recipes (exit 0), where `image lock show` refused it."""
    monkeypatch.setenv("GPUFLEET_PROJECT", str(tmp_path / "projcet"))
    for argv in (["image", "check", "-r", "cuda13-vllm"], ["plan", "fit", "--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "A10"]):
        r = run_cli(argv, capsys)
        assert r.code == 2 and f"GPUFLEET_PROJECT: {tmp_path / 'projcet'}: does not exist" in r.err, r.text


def test_a_project_images_program_that_is_a_file_is_refused(project, capsys):
    (project / "images" / "program").write_text("x\n")
    r = run_cli(["image", "pipeline", "-s", "example-cuda13-vllm-alicloud", "--json"], capsys)
    assert r.code == 2 and f"{project / 'images' / 'program'}: is a file: make it a folder" in r.err, r.text


# --- a recipe's images/ folder is the one of the recipes folder it was found in (review F3)
def test_a_linked_recipes_folder_reads_the_projects_lock_for_the_image_and_the_sizing(project, capsys, tmp_path):
    """images/recipes -> a team's folder: the image scripts took the package's lock (the folder's name was not
    'recipes' under 'images' once resolved) and the sizing the team folder's, without a word."""
    team = tmp_path / "team"
    project_recipe(team, lock="# the team's lock\n" + SHIPPED_LOCK.read_text())
    (project / "images" / "recipes").symlink_to(team / "images" / "recipes")
    (project / "images" / "locks").mkdir()
    (project / "images" / "locks" / "cuda13-vllm.txt").write_text(
        "# the project's lock\n" + re.sub(r"(?m)^transformers==\S+", "transformers==9.9.9", SHIPPED_LOCK.read_text())
    )
    recipe = load_recipe("cuda13-vllm")
    assert recipe.images == project / "images" and recipe.file == str(project / "images" / "recipes" / "cuda13-vllm.yaml")
    r = run_cli(["image", "render", "-r", "cuda13-vllm", "--out-dir", tmp_path / "out"], capsys)
    assert r.code == 0, r.text
    text = "".join(p.read_text() for p in (tmp_path / "out").iterdir())
    assert "# the project's lock" in text and "# the team's lock" not in text
    assert profiler.transformers_pin(recipe.pins["vllm"]) == "9.9.9"  # the project's lock, as the image's


def test_transformers_pin_is_none_for_a_project_recipe_without_its_lock(project):
    version = yaml.safe_load(SHIPPED.read_text())["pins"]["vllm"]
    assert profiler.transformers_pin(version)  # the shipped recipe's lock pins one
    project_recipe(project)  # the project's copy shadows it, and has no lock yet
    assert profiler.transformers_pin(version) is None


# --- files of images/recipes/ that are no recipes (review F5)
def test_files_that_are_no_recipe_names_break_no_command(project, capsys):
    folder = project / "images" / "recipes"
    project_recipe(project, lock=SHIPPED_LOCK.read_text(), gpus=["A10", "A100-40G"])
    (folder / "._cuda13-vllm.yaml").write_bytes(b"\x00\x05\x16\x07 macOS resource fork")
    (folder / "Bad Name.yaml").write_text("name: x\n")
    (folder / "broken.yaml").write_text("name: broken\ngpus: [T4]\n")  # no recipe (no steps): only the hint loads it
    r = run_cli(["preview", "--stack", STACK], capsys)
    assert r.code == 2 and "recipe cuda13-vllm does not serve T4 (it serves A10, A100-40G)" in r.err, r.err
    (folder / "broken.yaml").unlink()
    r = run_cli(["image", "check"], capsys)
    assert r.code == 0, r.text
    assert f"note: {folder / 'Bad Name.yaml'} is not read: 'Bad Name' is not a recipe name" in r.err
    assert "rename the file to <name>.yaml" in r.err and "._cuda13-vllm" not in r.text
    assert recipe_names() == ["cuda12-vllm-v100", "cuda13-vllm"]
    r = run_cli(["image", "check", "-r", "cuda13-vlm"], capsys)
    assert r.code == 2 and f"{folder / 'Bad Name.yaml'} is not read" in r.err, r.err  # named where a name is missing


# --- load_fleet's cache holds a fleet for the recipes it was validated against (review F6)
def test_a_fleet_is_validated_again_when_its_recipe_changes(project):
    load_fleet(STACK)
    project_recipe(project, gpus=["A10"])  # a copy that serves no T4 appears
    with pytest.raises(UserError, match="recipe cuda13-vllm does not serve T4"):
        load_fleet(STACK)
    shutil.rmtree(project / "images" / "recipes")
    assert load_fleet(STACK).spec.image.recipe == "cuda13-vllm"


# --- region new and the sizing take a project's recipes too (review F7)
def test_region_new_picks_a_recipe_only_the_project_has(project, capsys):
    project_recipe(project, name="a-t4", lock=SHIPPED_LOCK.read_text(), gpus=["T4", "A10"])  # first by name serving T4
    doc = json.loads((project / "images" / "lock.json").read_text())
    doc["images"]["a-t4"] = doc["images"]["cuda13-vllm"]
    (project / "images" / "lock.json").write_text(json.dumps(doc))
    r = run_cli(["region", "new", "--cloud", "alicloud", "--region", "cn-beijing", "--env", "dev", "--gpu", "T4"], capsys)
    assert r.code == 0, r.text
    stack = yaml.safe_load((project / "stacks" / "Pulumi.alicloud-cn-beijing-dev.yaml").read_text())
    assert stack["config"]["gpufleet:fleet"]["image"] == {"recipe": "a-t4"}


def test_plan_fit_of_a_stack_follows_the_project_recipes_vllm(project, capsys):
    """The project's cuda13-vllm pins the V100 recipe's line (vLLM 0.10.0, CUDA 12): the stack is sized for it."""
    v100 = yaml.safe_load((RECIPES / "cuda12-vllm-v100.yaml").read_text())
    project_recipe(project, **{k: v100[k] for k in ("pins", "apt_repos", "apt_packages", "downloads", "steps") if k in v100})
    r = run_cli(["plan", "fit", "--stack", STACK, "--json"], capsys)
    assert r.code == 0, r.text
    assert json.loads(r.out)["vllm_version"] == v100["pins"]["vllm"] != yaml.safe_load(SHIPPED.read_text())["pins"]["vllm"]


def test_a_broken_project_recipe_is_named_by_plan_fit_and_once_by_check(project, capsys):
    """Review L5: `plan fit -s` said only 'fleet.image.recipe: not valid YAML' (preview names the file), and `gpufleet
    check` said it once per stack."""
    mine = project / "images" / "recipes" / "cuda13-vllm.yaml"
    mine.parent.mkdir()
    mine.write_text("name: [\n")
    r = run_cli(["plan", "fit", "--stack", STACK], capsys)
    assert r.code == 2 and f"fleet.image.recipe: {mine}:2:1: not valid YAML" in r.err, r.err
    r = run_cli(["check"], capsys)
    assert r.code == 2 and r.err.count(f"{mine}:2:1: not valid YAML") == 1, r.err
