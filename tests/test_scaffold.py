"""`gpufleet init`: a project an installed gpufleet can use, made all or nothing; and `pulumi up` refusing a
placeholder image (what init's --placeholder-images locks) before any resource."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from functools import partial
from pathlib import Path

import pulumi
import pytest
import yaml
from inputs.inputs_helpers import run_cli, snapshot
from msgspec.structs import replace

from gpufleet import mockengine, scaffold
from gpufleet.components.fleet import declare_program
from gpufleet.images.recipes import load_recipe, recipe_names
from gpufleet.stacks import loader
from gpufleet.stacks.lock import id_problem
from gpufleet.validation import load_fleet

ROOT = Path(__file__).resolve().parents[1]


def test_the_program_init_writes_is_the_checkouts():
    assert (ROOT / "stacks" / "__main__.py").read_text() == scaffold.PROGRAM


def test_the_checkouts_lock_comment_is_the_one_init_writes():
    """The comment named images/lock.py, a module no checkout or wheel has: it names the module that reads the lock."""
    from gpufleet.stacks.lock import LOCK_COMMENT

    assert json.loads((ROOT / "images" / "lock.json").read_text())["comment"] == LOCK_COMMENT
    assert json.loads(scaffold.project_files("p", None, placeholders=False)["images/lock.json"])["comment"] == LOCK_COMMENT
    assert "gpufleet.stacks.lock" in LOCK_COMMENT


def test_the_images_program_init_writes_is_the_checkouts():
    """images/program/ of a project: the checkout's (its venv ../../.venv, the checkout's .venv) is what init writes."""
    assert (ROOT / "images" / "program" / "__main__.py").read_text() == scaffold.IMAGES_PROGRAM
    assert (ROOT / "images" / "program" / "Pulumi.yaml").read_text() == scaffold.images_pulumi_yaml(".venv")
    doc = yaml.safe_load(scaffold.images_pulumi_yaml(".venv"))
    assert doc["name"] == "gpufleet-images" and doc["main"] == "."
    assert doc["runtime"] == {"name": "python", "options": {"toolchain": "pip", "virtualenv": "../../.venv"}}
    assert yaml.safe_load(scaffold.images_pulumi_yaml("/opt/venvs/gf"))["runtime"]["options"]["virtualenv"] == "/opt/venvs/gf"
    assert "virtualenv" not in yaml.safe_load(scaffold.images_pulumi_yaml(None))["runtime"]["options"]


def test_the_policy_pack_init_writes_is_the_checkouts():
    """policy/ of a project: the checkout's (its venv ../.venv) is what init writes; the pack is the package's."""
    assert (ROOT / "policy" / "__main__.py").read_text() == scaffold.POLICY_PROGRAM
    assert (ROOT / "policy" / "PulumiPolicy.yaml").read_text() == scaffold.policy_yaml(".venv")
    assert sorted(p.name for p in (ROOT / "policy").iterdir() if p.name != "__pycache__") == ["PulumiPolicy.yaml", "__main__.py"]
    doc = yaml.safe_load(scaffold.policy_yaml("/opt/venvs/gf"))
    assert doc["runtime"] == {"name": "python", "options": {"toolchain": "pip", "virtualenv": "/opt/venvs/gf"}}
    assert doc["version"] and "main" not in doc  # its entry point: the folder's __main__.py
    assert "virtualenv" not in yaml.safe_load(scaffold.policy_yaml(None))["runtime"]["options"]


def test_the_policy_pack_without_pulumi_policy_says_what_to_install(tmp_path):
    """Run where pulumi_policy cannot be imported (a venv with only the wheel): a message naming the extra, no traceback."""
    (tmp_path / "pulumi_policy.py").write_text("raise ModuleNotFoundError(\"No module named 'pulumi_policy'\")\n")
    (tmp_path / "__main__.py").write_text(scaffold.POLICY_PROGRAM)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, str(tmp_path / "__main__.py")], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 1 and "pip install 'gpufleet[policy]'" in run.stderr and "Traceback" not in run.stderr, run.stderr


def test_the_examples_init_copies_are_the_package_ones_the_checkout_links_to():
    files = scaffold.example_files()
    assert "examples/loadtest-example.json" in files and "examples/Pulumi.alicloud-cn-hangzhou-prod-rollout.yaml" in files
    assert (ROOT / "examples").resolve() == scaffold.EXAMPLES.resolve()  # the checkout's examples/ is the package's
    tracked = subprocess.run(
        ["git", "ls-files", "src/gpufleet/examples"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert sorted(Path(f).relative_to("src/gpufleet/examples").as_posix() for f in tracked) == sorted(scaffold.EXAMPLE_FILES)


def test_init_copies_only_the_examples_not_what_a_rollout_left_beside_them(tmp_path, monkeypatch):
    """A rollout help example run in a checkout leaves .rollout-<stack>.json in examples/ (the package's folder)."""
    shutil.copytree(scaffold.EXAMPLES, tmp_path / "ex")
    (tmp_path / "ex" / ".rollout-alicloud-cn-hangzhou-prod-rollout.json").write_text("{}")
    monkeypatch.setattr(scaffold, "EXAMPLES", tmp_path / "ex")
    assert sorted(scaffold.example_files()) == sorted(f"examples/{n}" for n in scaffold.EXAMPLE_FILES)


def test_pulumi_yaml_names_the_program_and_the_venv():
    doc = yaml.safe_load(scaffold.pulumi_yaml("llm-fleet", "/opt/venvs/gpu fleet"))
    assert doc == {
        "name": "llm-fleet",
        "description": "GPU inference fleets for vLLM (gpufleet)",
        "runtime": {"name": "python", "options": {"toolchain": "pip", "virtualenv": "/opt/venvs/gpu fleet"}},
        "main": "stacks/",
        "stackConfigDir": "stacks/",
    }
    assert "virtualenv" not in yaml.safe_load(scaffold.pulumi_yaml("x", None))["runtime"]["options"]
    assert yaml.safe_load(scaffold.pulumi_yaml("123", None))["name"] == "123"  # text, as Pulumi reads a name
    # the checkout's project file says the same, with the checkout's venv
    assert {**yaml.safe_load((ROOT / "Pulumi.yaml").read_text()), "description": doc["description"], "name": "llm-fleet"} == {
        **doc,
        "runtime": {"name": "python", "options": {"toolchain": "pip", "virtualenv": ".venv"}},
    }


def test_placeholders_cover_every_recipe_region_with_ids_of_the_clouds_form():
    images = scaffold.placeholder_images()
    assert set(images) == set(recipe_names())
    for name, entry in images.items():
        regions = load_recipe(name).regions
        assert {c: sorted(r) for c, r in entry["regions"].items()} == {c: sorted(r) for c, r in regions.items()}
        for cloud, by_region in entry["regions"].items():
            for where in by_region.values():
                assert where["placeholder"] is True
                assert id_problem(cloud, where["image_id"], placeholder=True) is None


def _gf(cwd: Path, *args: str, project: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "GPUFLEET_PROJECT"}
    if project is not None:
        env["GPUFLEET_PROJECT"] = str(project)
    cmd = [sys.executable, "-c", "from gpufleet.cli import main; main()", *args]
    return subprocess.run(cmd, cwd=cwd, env={**env, "COLUMNS": "200"}, capture_output=True, text=True, timeout=300)


def test_a_new_project_takes_a_new_stack_that_previews_costs_and_sizes(tmp_path):
    """From an empty folder, outside any project: init, region new, then the offline commands, as the README says."""
    made = _gf(tmp_path, "init", "llm-fleet", "--placeholder-images")
    assert made.returncode == 0, made.stderr
    project = tmp_path / "llm-fleet"
    assert sorted(str(p.relative_to(project)) for p in project.rglob("*") if p.is_file()) == [
        "Pulumi.yaml",
        "images/lock.json",
        "images/program/Pulumi.yaml",
        "images/program/__main__.py",
        "policy/PulumiPolicy.yaml",
        "policy/__main__.py",
        "stacks/__main__.py",
    ]
    venv = str(Path(sys.prefix).resolve())  # outside the project: its path, in both project files
    assert yaml.safe_load((project / "Pulumi.yaml").read_text())["runtime"]["options"]["virtualenv"] == venv
    assert (project / "images" / "program" / "Pulumi.yaml").read_text() == scaffold.images_pulumi_yaml(venv)
    assert (project / "images" / "program" / "__main__.py").read_text() == scaffold.IMAGES_PROGRAM
    assert (project / "policy" / "PulumiPolicy.yaml").read_text() == scaffold.policy_yaml(venv)
    assert (project / "policy" / "__main__.py").read_text() == scaffold.POLICY_PROGRAM
    assert "images/program/ (the images program)" in made.stdout and "policy/ (the policy pack)" in made.stdout
    assert f"cd {project.name}" in made.stdout
    new = _gf(project, "region", "new", "--cloud", "tencentcloud", "--region", "ap-shanghai", "--env", "dev")
    assert new.returncode == 0, new.stderr
    # an images stack: the shipped example copied into the project's images/program/, previewed by its name there
    example = _gf(project, "image", "pipeline", "-s", "example-cuda13-vllm-alicloud", "--json")
    assert example.returncode == 0, example.stderr
    mine = project / "images" / "program" / "Pulumi.mine.yaml"
    shutil.copy(json.loads(example.stdout)["stack_file"], mine)
    run = _gf(project, "image", "pipeline", "-s", "mine", "--json")
    assert run.returncode == 0 and json.loads(run.stdout)["stack_file"] == str(mine), run.stderr
    for args in (["preview"], ["cost", "estimate"], ["plan", "fit"]):
        run = _gf(project, *args, "--stack", "tencentcloud-ap-shanghai-dev")
        assert run.returncode == 0, (args, run.stderr[-2000:])
        assert "Traceback" not in run.stderr
    assert "placeholder" in _gf(project, "preview", "--stack", "tencentcloud-ap-shanghai-dev").stdout


def test_without_placeholders_the_lock_is_empty_and_region_new_asks_for_an_image(tmp_path):
    assert _gf(tmp_path, "init", "p").returncode == 0
    assert yaml.safe_load((tmp_path / "p" / "images" / "lock.json").read_text())["images"] == {}
    new = _gf(tmp_path / "p", "region", "new", "--cloud", "alicloud", "--region", "cn-hangzhou", "--env", "dev")
    assert new.returncode == 2 and "image lock record" in new.stderr, new.stderr


def test_outside_a_project_the_message_names_init(tmp_path):
    run = _gf(tmp_path, "preview", "--stack", "alicloud-cn-hangzhou-dev")
    assert run.returncode == 2 and "`gpufleet init DIR` makes a new one" in run.stderr, run.stderr


def test_examples_copies_the_example_inputs_and_the_help_examples_run_on_them(tmp_path):
    """--examples: the package's example inputs in examples/, and the commands the help names on them run in the new
    project (with a stack of the name they give, from region new)."""
    assert _gf(tmp_path, "init", "demo", "--placeholder-images", "--examples").returncode == 0
    project = tmp_path / "demo"
    copied = {p.relative_to(project).as_posix(): p.read_text() for p in (project / "examples").rglob("*") if p.is_file()}
    assert copied == scaffold.example_files()
    assert _gf(project, "region", "new", "--cloud", "alicloud", "--region", "cn-hangzhou", "--env", "prod").returncode == 0
    for args in (
        ["preview", "--stack", "examples/Pulumi.alicloud-cn-hangzhou-prod-rollout.yaml"],
        ["preview", "--stack", "examples/Pulumi.tencentcloud-ap-guangzhou-prod-rollout.yaml"],
        ["image", "pipeline", "-s", "examples/images/Pulumi.example-cuda13-vllm-alicloud.yaml", "--json"],
        ["cost", "tokens", "--stack", "alicloud-cn-hangzhou-prod", "--from-loadtest", "examples/loadtest-example.json"],
        ["cost", "budget", "--by", "team", "--budgets", "examples/budgets-example.yaml", "--allow-unpriced"],
        ["cost", "reconcile", "--stack", "alicloud-cn-hangzhou-prod", "--bill", "examples/bill-alicloud-example.csv"],
    ):
        run = _gf(project, *args)
        assert run.returncode == 0 and "Traceback" not in run.stderr, (args, run.stderr[-2000:])


def test_examples_are_refused_over_an_existing_examples_folder(capsys, tmp_path):
    (tmp_path / "examples").mkdir()
    before = snapshot(tmp_path)
    r = run_cli(["init", tmp_path, "--examples"], capsys)
    assert r.code == 2 and f"{tmp_path / 'examples'}: already exists" in r.err, r.err
    assert snapshot(tmp_path) == before
    assert run_cli(["init", tmp_path], capsys).code == 0  # without --examples, examples/ is not init's


@pytest.mark.parametrize("entry", ["Pulumi.yaml", "stacks", "images", "policy"])
def test_an_existing_project_part_is_refused_and_nothing_written(capsys, tmp_path, entry):
    (tmp_path / entry).mkdir() if entry != "Pulumi.yaml" else (tmp_path / entry).write_text("name: mine\n")
    before = snapshot(tmp_path)
    r = run_cli(["init", tmp_path], capsys)
    assert r.code == 2 and f"{tmp_path / entry}: already exists" in r.err and "overwrites nothing" in r.err, r.err
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--name", "a b"], "--name: 'a b' is not a Pulumi project name"),
        (["--name", ""], "--name: '' is not a Pulumi project name"),
        (["--name", "a" * 101], "--name: '" + "a" * 60 + "'… is not a Pulumi project name: 1 to 100"),
    ],
)
def test_a_bad_name_is_refused_before_anything_is_made(capsys, tmp_path, args, words):
    r = run_cli(["init", tmp_path / "new", *args], capsys)
    assert r.code == 2 and words in r.err, r.err
    assert not (tmp_path / "new").exists()


def test_a_file_in_the_way_is_refused(capsys, tmp_path):
    (tmp_path / "f").write_text("x")
    r = run_cli(["init", tmp_path / "f" / "sub"], capsys)
    assert r.code == 2 and f"{tmp_path / 'f'} is a file, not a folder" in r.err, r.err
    r = run_cli(["init", tmp_path / "f"], capsys)
    assert r.code == 2 and "exists and is not a folder" in r.err, r.err


@pytest.mark.parametrize("given", ["", "  "])
def test_an_empty_dir_is_refused_not_taken_for_the_current_folder(capsys, tmp_path, monkeypatch, given):
    """Review L4: `gpufleet init ''` (an unset $DIR) made the project in the current folder: Path("") is "."."""
    monkeypatch.chdir(tmp_path)
    r = run_cli(["init", given], capsys)
    assert r.code == 2 and "Invalid value for 'DIR': is empty: give the project's folder" in r.err, r.text
    assert ". for the current folder" in r.err and "Traceback" not in r.text
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("link", "what"), [("loop1", "is a loop of links (to loop2)"), ("gone", "leads to nothing")])
@pytest.mark.parametrize("sub", [False, True], ids=["DIR", "under DIR"])
def test_a_link_that_leads_nowhere_is_refused_cleanly(capsys, tmp_path, monkeypatch, link, what, sub):
    """Review M3: `init LOOP` and `init LOOP/sub` were a RuntimeError traceback (venv_for's Path.resolve() on a loop of
    links); a link to nothing was said to be "a file". Exit 2 naming the link, nothing made."""
    monkeypatch.chdir(tmp_path)
    os.symlink("loop2", "loop1")
    os.symlink("loop1", "loop2")
    os.symlink(tmp_path / "nothing", "gone")
    before = snapshot(tmp_path)
    given = f"{link}/sub" if sub else link
    r = run_cli(["init", given], capsys)
    assert r.code == 2 and "Traceback" not in r.text, r.text
    assert f"DIR: {given}: {link + ' ' if sub else ''}is a symbolic link that {what}" in r.err and "fix the link" in r.err
    assert snapshot(tmp_path) == before


def test_a_failure_midway_leaves_nothing_behind(capsys, tmp_path, monkeypatch):
    """The second top-level entry fails to move into place (a full disk, a permission): the first is taken back and the
    folders init made are removed."""
    real = os.rename
    calls = []

    def rename(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(28, "No space left on device", str(dst))
        real(src, dst)

    monkeypatch.setattr(os, "rename", rename)
    r = run_cli(["init", tmp_path / "a" / "b", "--placeholder-images"], capsys)
    assert r.code == 2 and "No space left on device; nothing was written" in r.err, r.err
    assert len(calls) == 2
    assert list(tmp_path.iterdir()) == []


def _up(fleet) -> list[dict]:
    _, config = loader.read_stack_config(fleet.stack)
    resources, _ = mockengine.run(partial(declare_program, fleet), fleet.stack, config, preview=False)
    return resources


def test_pulumi_up_refuses_a_placeholder_image_before_any_resource():
    fleet = load_fleet("alicloud-cn-hangzhou-prod")
    assert fleet.image_placeholder  # the checkout's lock holds placeholders
    with pytest.raises(pulumi.RunError) as exc:
        _up(fleet)
    assert str(exc.value) == (
        "stacks/Pulumi.alicloud-cn-hangzhou-prod.yaml: fleet.image.recipe: images/lock.json holds only a placeholder for "
        f"the fleet's {fleet.image_id} (cuda13-vllm) in alicloud/cn-hangzhou, not a built image: build and lock an image "
        "(gpufleet image build, gpufleet image lock record; docs/images.md) before `pulumi up`; nothing was created"
    )
    # the same fleet with a built image deploys (the update run registers its resources), and a preview of the
    # placeholder one is not refused
    assert len(_up(replace(fleet, image_placeholder=False))) > 30
    _, config = loader.read_stack_config(fleet.stack)
    assert mockengine.run(partial(declare_program, fleet), fleet.stack, config)[0]


def test_a_rollout_candidate_on_a_placeholder_is_named():
    stack = loader.use_stack_file(ROOT / "examples" / "Pulumi.alicloud-cn-hangzhou-prod-rollout.yaml")
    fleet = load_fleet(stack)
    built = replace(fleet, image_placeholder=False)
    assert fleet.candidate is not None and fleet.candidate.image_placeholder
    from gpufleet.components.fleet import placeholder_problem

    assert ": fleet.rollout.candidate.image.recipe: " in (placeholder_problem(built) or "")
    assert "the rollout's candidate's" in (placeholder_problem(built) or "")
    assert placeholder_problem(replace(built, candidate=replace(fleet.candidate, image_placeholder=False))) is None


def test_a_file_made_meanwhile_is_not_replaced_nor_removed(capsys, tmp_path, monkeypatch):
    """Another init (or anyone) makes Pulumi.yaml between the check and the placing: link(2) refuses to replace it, and
    the cleanup leaves it alone."""
    real = os.link

    def link(src, dst):
        Path(dst).write_text("name: theirs\n")
        real(src, dst)

    monkeypatch.setattr(os, "link", link)
    r = run_cli(["init", tmp_path], capsys)
    assert r.code == 2 and f"{tmp_path / 'Pulumi.yaml'}: appeared while init ran (another init?)" in r.err, r.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Pulumi.yaml"]
    assert (tmp_path / "Pulumi.yaml").read_text() == "name: theirs\n"


def test_a_folder_filled_meanwhile_is_not_replaced_and_ours_are_taken_back(capsys, tmp_path, monkeypatch):
    real = os.rename

    def rename(src, dst):
        if Path(dst).name == "images":
            (Path(dst) / "theirs.json").parent.mkdir()
            (Path(dst) / "theirs.json").write_text("{}")
        real(src, dst)

    monkeypatch.setattr(os, "rename", rename)
    r = run_cli(["init", tmp_path], capsys)
    assert r.code == 2 and "appeared while init ran" in r.err, r.err
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == ["images", "images/theirs.json"]


def test_a_project_in_another_projects_stacks_is_refused_elsewhere_in_it_made(capsys, tmp_path):
    """In stacks/ (the outer program's folder) a Pulumi.yaml would make Pulumi take it for the outer program's
    project; a folder beside stacks/ is a project of its own (the nearest Pulumi.yaml wins for commands run in it)."""
    outer = tmp_path / "outer"
    (outer / "stacks").mkdir(parents=True)
    (outer / "Pulumi.yaml").write_text("name: outer\n")
    for inner in (outer / "stacks", outer / "stacks" / "new"):
        r = run_cli(["init", inner], capsys)
        assert r.code == 2 and f"is inside the stacks/ of the project {outer}: a project there breaks that one" in r.err
    assert sorted(str(p.relative_to(outer)) for p in outer.rglob("*")) == ["Pulumi.yaml", "stacks"]
    assert run_cli(["init", outer / "sub" / "fleet"], capsys).code == 0
    assert (outer / "sub" / "fleet" / "Pulumi.yaml").is_file()


def test_a_venv_inside_the_project_is_named_relative_to_it(tmp_path, monkeypatch):
    """A venv in the project (.venv) is written as .venv, which works on every checkout; one elsewhere by its path; no
    venv, no virtualenv (the python3 on PATH)."""
    monkeypatch.setattr(sys, "base_prefix", "/usr")
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "p" / ".venv"))
    assert scaffold.venv_for(tmp_path / "p") == ".venv"
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "venvs" / "gf"))
    assert scaffold.venv_for(tmp_path / "p") == str((tmp_path / "venvs" / "gf").resolve())
    monkeypatch.setattr(sys, "prefix", "/usr")
    assert scaffold.venv_for(tmp_path / "p") is None


def test_outside_a_project_a_lock_file_given_is_read(tmp_path):
    """`image lock show --lock F` needs no project (it raised "no Pulumi.yaml" when the default was compared)."""
    run = _gf(tmp_path, "image", "lock", "show", "--lock", str(ROOT / "images" / "lock.json"), "--json")
    assert run.returncode == 0 and '"recipe": "cuda13-vllm"' in run.stdout, run.stderr
