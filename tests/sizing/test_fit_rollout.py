"""`plan fit --stack S` of a stack with a rollout: the candidate group is sized too (as `preview` sizes it, and its
refusal points at this command), under `candidate` in the JSON, its own labelled table, exit 1 when either group
does not fit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gpufleet.stacks.rollout import rollout_step_spec

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("Pulumi.*-rollout.yaml"))
A_14B = ("name: Qwen/Qwen3-8B", "name: Qwen/Qwen2.5-14B-Instruct")  # 27.5 GiB of weights: no KV cache left on an A10


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """`gpufleet ARGV`: (exit code, standard output, standard error)."""
    from gpufleet.cli import main

    capsys.readouterr()
    try:
        main(list(argv))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def stack_file(tmp_path: Path, example: Path, text: str, suffix: str) -> Path:
    """`text` as a stack file of its own outside the project, named after the example (with `suffix`)."""
    path = tmp_path / f"{example.name.removesuffix('.yaml')}-{suffix}.yaml"
    path.write_text(text)
    return path


def fit_json(capsys, path: Path) -> dict:
    code, out, err = run(capsys, "plan", "fit", "--stack", str(path), "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_the_candidate_is_sized_as_the_fleet_it_becomes_and_the_fleets_keys_keep_their_meaning(example, tmp_path, capsys):
    """The JSON's own keys are the fleet's serving group, as `plan fit` of the stack without its rollout says; the
    `candidate` key is the candidate group, as `plan fit` of the stack after `rollout finish` says."""
    text = example.read_text()
    j = fit_json(capsys, example)
    doc = yaml.safe_load(text)
    del doc["config"]["gpufleet:fleet"]["rollout"]
    without = fit_json(capsys, stack_file(tmp_path, example, yaml.safe_dump(doc, sort_keys=False), "none"))
    finished = fit_json(capsys, stack_file(tmp_path, example, rollout_step_spec(text, "finished"), "done"))
    candidate = j.pop("candidate")
    assert j == without and "candidate" not in without
    spec = doc["config"]["gpufleet:fleet"]
    label = yaml.safe_load(text)["config"]["gpufleet:fleet"]["rollout"]["candidate"]["label"]
    assert (candidate.pop("group"), candidate.pop("label")) == (f"{spec['name']}-{label}-{spec['environment']}", label)
    assert candidate == finished
    assert candidate["model"] != j["model"]  # the examples roll Qwen2.5-7B out for Qwen3-8B: two models sized


def test_a_candidate_that_does_not_fit_is_exit_1_in_its_own_labelled_table(tmp_path, capsys):
    """`plan fit --stack` said "fits" (exit 0) of a stack whose candidate `preview` refused as not fitting, although
    the refusal ends in "see `gpufleet plan fit --stack S`"."""
    example = EXAMPLES[0]
    text = example.read_text()
    assert text.count(A_14B[0]) == 1
    path = stack_file(tmp_path, example, text.replace(*A_14B), "r14")
    code, _, preview_err = run(capsys, "preview", "--stack", str(path))
    assert code == 2 and "fleet.rollout.candidate.serving: Qwen/Qwen2.5-14B-Instruct does not fit 1x A10" in preview_err
    code, out, err = run(capsys, "plan", "fit", "--stack", str(path), "--json")
    assert code == 1, err
    j = json.loads(out)
    assert (j["model"], j["verdict"]) == ("Qwen/Qwen2.5-7B-Instruct", "fits")
    assert (j["candidate"]["model"], j["candidate"]["verdict"]) == ("Qwen/Qwen2.5-14B-Instruct", "does not fit")
    code, out, err = run(capsys, "plan", "fit", "--stack", str(path))
    assert code == 1, err
    flat = " ".join(out.split())
    current = flat.index("current group llm-prod: Qwen/Qwen2.5-7B-Instruct on 1x A10")
    cand = flat.index("rollout candidate llm-v2-prod (rollout.candidate, label v2): Qwen/Qwen2.5-14B-Instruct on 1x A10")
    assert current < flat.index(" fits ") < cand < flat.index(" does not fit ")
    refusal = " ".join(preview_err.split())  # the same advice as preview's refusal
    assert j["candidate"]["advice"] and all(" ".join(a.split()) in refusal for a in j["candidate"]["advice"])


def test_a_bad_extra_args_value_of_the_candidate_is_named_at_its_field(tmp_path, capsys):
    example = EXAMPLES[0]
    text = example.read_text()
    serving = yaml.safe_load(text)["config"]["gpufleet:fleet"]["serving"]
    block = json.dumps(serving | {"extra_args": {"cpu_offload_gb": -1}})  # a whole serving block, one line of YAML
    path = stack_file(tmp_path, example, text.replace("        label: v2", f"        label: v2\n        serving: {block}"), "x")
    code, _, err = run(capsys, "plan", "fit", "--stack", str(path))
    assert code == 2 and "Traceback" not in err, err
    assert f"error {path}: fleet.rollout.candidate.serving.extra_args.cpu_offload_gb: -1 is not a number >= 0" in err, err


@pytest.mark.parametrize("group", ["fleet", "candidate"])
def test_a_model_the_sizing_catalog_lacks_is_named_at_its_field_with_the_fix(tmp_path, capsys, group):
    """It was `error --model: unknown model ...; give a catalog name, ...`: an option `--stack` refuses."""
    example = EXAMPLES[0]
    text = example.read_text()
    old = "name: Qwen/Qwen3-8B" if group == "candidate" else "name: Qwen/Qwen2.5-7B-Instruct\n"
    new = old.replace("Qwen/", "myorg/").replace("-Instruct", "-Instruct-tuned")
    assert text.count(old) == 1
    path = stack_file(tmp_path, example, text.replace(old, new), group)
    field = "fleet.rollout.candidate.model.name" if group == "candidate" else "fleet.model.name"
    code, _, err = run(capsys, "plan", "fit", "--stack", str(path))
    assert code == 2 and "Traceback" not in err, err
    flat = " ".join(err.split())
    assert f"error {path}: {field}: {new.split()[1]!r} is not in the sizing catalog" in flat, err
    assert "set model.catalog to the entry it is sized as, or size it with `gpufleet plan fit --model" in flat, err
    (line,) = [ln for ln in text.splitlines() if ln.strip() == old.strip()]
    indent = line[: len(line) - len(line.lstrip())]
    sized_as = text.replace(old, f"{new.rstrip()}\n{indent}catalog: {old.split()[1]}\n")  # model.catalog: sized again
    assert fit_json(capsys, stack_file(tmp_path, example, sized_as, f"{group}-as"))["verdict"] == "fits"


def test_a_stack_without_a_rollout_has_one_table_and_no_candidate_key(capsys):
    code, out, _ = run(capsys, "plan", "fit", "--stack", "alicloud-cn-hangzhou-prod", "--json")
    assert code == 0 and "candidate" not in json.loads(out)
    code, out, _ = run(capsys, "plan", "fit", "--stack", "alicloud-cn-hangzhou-prod")
    assert code == 0 and "current group" not in out and "rollout candidate" not in out
    assert " ".join(out.split()).startswith("Qwen/Qwen2.5-7B-Instruct on 1x A10")


def test_the_refusals_plan_fit_command_runs_as_written_for_a_stack_file_outside_the_project(tmp_path, capsys):
    """The refusal named the stack (`plan fit --stack alicloud-cn-hangzhou-prod-rollout-r14`) of a file given by path
    outside the project: run as written it failed, "stacks/Pulumi....yaml: no such stack file"."""
    import re
    import shlex

    example = EXAMPLES[0]
    folder = tmp_path / "my stacks"  # a space in the path: the command is quoted as a shell reads it
    folder.mkdir()
    path = stack_file(folder, example, example.read_text().replace(*A_14B), "r14")
    code, _, err = run(capsys, "preview", "--stack", str(path))
    assert code == 2, err
    (command,) = re.findall(r"\(see `(gpufleet plan fit --stack [^`]*)`\)", " ".join(err.split()))
    argv = shlex.split(command)
    assert argv[-1] == str(path), command
    code, out, err = run(capsys, *argv[1:])
    assert code == 1 and "Traceback" not in err, err
    assert "Qwen/Qwen2.5-14B-Instruct" in out and "does not fit" in out, out


def test_the_refusal_of_a_stack_in_the_project_names_it_by_name(capsys, monkeypatch, tmp_path):
    import shutil

    for name in ("Pulumi.yaml", "images"):
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy)(ROOT / name, tmp_path / name)
    (tmp_path / "stacks").mkdir()
    monkeypatch.setenv("GPUFLEET_PROJECT", str(tmp_path))
    name = "alicloud-cn-hangzhou-prod-r14"
    text = (ROOT / "examples" / "Pulumi.alicloud-cn-hangzhou-prod-rollout.yaml").read_text().replace(*A_14B)
    (tmp_path / "stacks" / f"Pulumi.{name}.yaml").write_text(text)
    for given in (name, str(tmp_path / "stacks" / f"Pulumi.{name}.yaml")):
        code, _, err = run(capsys, "preview", "--stack", given)
        assert code == 2 and f"(see `gpufleet plan fit --stack {name}`)" in " ".join(err.split()), err
