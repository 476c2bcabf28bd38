"""One plan per run: no command validates a stack (or declares a cost compare option) more than once."""

import json
from collections import Counter

import pytest

from gpufleet import mockengine, plan
from gpufleet.cli import main
from gpufleet.stacks import loader

STACK = "alicloud-cn-hangzhou-prod"


@pytest.fixture
def counted(monkeypatch):
    """Counts of loader.validate per file and of mock-engine runs, from a process state with nothing cached."""
    monkeypatch.setattr(loader, "_FLEETS", {})
    monkeypatch.setattr(loader, "_CONFIGS", {})
    monkeypatch.setattr(plan, "_PLANS", {})
    counts = {"validate": Counter(), "parse": Counter(), "declare": Counter()}
    validate, parse, run = loader.validate, loader._parse_config, mockengine.run

    def counting_validate(raw, stack, file, checks=()):
        counts["validate"][file] += 1
        return validate(raw, stack=stack, file=file, checks=checks)

    def counting_parse(path, shown):
        counts["parse"][shown] += 1
        return parse(path, shown)

    def counting_run(program, stack, config, computed=None):
        counts["declare"][json.dumps(config, sort_keys=True)] += 1
        return run(program, stack, config, computed)

    monkeypatch.setattr(loader, "validate", counting_validate)
    monkeypatch.setattr(loader, "_parse_config", counting_parse)
    monkeypatch.setattr(mockengine, "run", counting_run)
    return counts


def _run(argv):
    try:
        main(argv)
    except SystemExit as exc:
        assert not exc.code, exc.code


@pytest.mark.parametrize(
    "argv",
    [["preview", "--stack", STACK, "--json"], ["cost", "estimate", "--stack", STACK, "--json"]],
    ids=["preview", "cost estimate"],
)
def test_one_parse_one_validation_one_declaration(counted, argv, capsys):
    _run(argv)
    assert counted["parse"] == {f"stacks/Pulumi.{STACK}.yaml": 1}
    assert counted["validate"] == {f"stacks/Pulumi.{STACK}.yaml": 1}
    assert list(counted["declare"].values()) == [1]


def test_cost_compare_declares_each_option_once(counted, capsys):
    _run(["cost", "compare", "--stack", STACK, "--format", "json"])
    rows = json.loads(capsys.readouterr().out)["rows"]
    declared = [r for r in rows if r["monthly_total"] is not None]
    assert len(declared) >= 6
    assert counted["parse"] == {f"stacks/Pulumi.{STACK}.yaml": 1}
    assert all(n == 1 for n in counted["validate"].values()), counted["validate"]
    assert len(counted["validate"]) == 1 + len(declared)  # the stack, then each option that has a spec
    assert all(n == 1 for n in counted["declare"].values()) and len(counted["declare"]) == len(declared)


def test_user_state_is_read_in_a_project_only_reference_data_anywhere(tmp_path):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "GPUFLEET_PROJECT"}
    gf = [sys.executable, "-c", "from gpufleet.cli import main; main()"]
    run = subprocess.run([*gf, "preview", "--stack", STACK], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert f"no Pulumi.yaml with stacks/ found from {tmp_path}; run inside a gpufleet project or set GPUFLEET_PROJECT" in (
        " ".join(run.stderr.split())
    )
    fit = subprocess.run(
        [*gf, "plan", "fit", "--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "A10", "--json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert fit.returncode in (0, 1) and json.loads(fit.stdout)["model"], fit.stderr


@pytest.mark.parametrize("where", ["missing", "file"])
def test_a_gpufleet_project_that_is_no_folder_is_refused_naming_it(tmp_path, where):
    """GPUFLEET_PROJECT naming no folder was taken as an empty project: `image lock show` printed an empty lock (exit 0),
    `preview` said the stack file did not exist, `region new` that no image was locked."""
    import os
    import subprocess
    import sys

    project = tmp_path / "projcet"
    if where == "file":
        project.write_text("")
    env = {**os.environ, "GPUFLEET_PROJECT": str(project)}
    gf = [sys.executable, "-c", "from gpufleet.cli import main; main()"]
    for argv in (["image", "lock", "show"], ["preview", "--stack", STACK]):
        run = subprocess.run([*gf, *argv], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
        what = "is a file" if where == "file" else "does not exist"
        assert f"GPUFLEET_PROJECT: {project}: {what}: set it to the project's folder" in " ".join(run.stderr.split())


def test_a_plan_previews_once_hands_out_copies_and_follows_an_edited_stack_file(counted, project):
    """The module's promise: the inventory is computed once per plan, when first asked, and every reader gets the
    resources as copies (a reader changing one does not change what the next reads); a stack file edited in the same
    process (validated again: a new fleet) gets a new plan, not the one cached for its old fleet."""
    p = plan.for_stack(STACK, project)
    mine = p.resources
    mine[0]["name"] = "changed by a reader"
    assert p.resources[0]["name"] != "changed by a reader" and p.inventory is p.inventory
    assert list(counted["declare"].values()) == [1]
    path = project / "stacks" / f"Pulumi.{STACK}.yaml"
    text = path.read_text()
    assert "    replicas: {min: 2, max: 8, desired: 2}\n" in text
    path.write_text(text.replace("    replicas: {min: 2, max: 8, desired: 2}\n", "    replicas: {min: 2, max: 9, desired: 2}\n"))
    edited = plan.for_stack(STACK, project)
    assert (p.fleet.spec.replicas.max, edited.fleet.spec.replicas.max) == (8, 9)
