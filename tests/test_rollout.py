"""A rollout's two serving groups (issue 31): the spec section, the step files `rollout_step_spec` writes, the program's
second group and its per-node weights on both clouds, the names after `rollout finish`, cost and the simulation."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path

import pytest
import yaml

from gpufleet import account, plan, validation
from gpufleet.errors import UserError
from gpufleet.finance.stack import stack_estimate
from gpufleet.preview import preview_stack
from gpufleet.simulate import capacity, run, trace
from gpufleet.stacks import loader, rollout
from gpufleet.stacks.rollout import StepError, node_weights, rollout_step_spec, share

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("Pulumi.*-rollout.yaml"))
NOW = datetime(2026, 12, 5, 14, 0, tzinfo=UTC)
STEPS: list = [0, 5, 25, 50, 100, "promoted"]
GROUP = {"alicloud": "alicloud:ess/scalingGroup:ScalingGroup", "tencentcloud": "tencentcloud:As/scalingGroup:ScalingGroup"}


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch):
    monkeypatch.setenv("GPUFLEET_NOW", "2026-12-01T00:00:00+00:00")


def test_two_examples_are_shipped():
    assert [p.name for p in EXAMPLES] == [
        "Pulumi.alicloud-cn-hangzhou-prod-rollout.yaml",
        "Pulumi.tencentcloud-ap-guangzhou-prod-rollout.yaml",
    ]


def write_stack(tmp_path: Path, example: Path, step, text: str | None = None) -> str:
    """The example at `step` as its own stack file; returns the stack name (loader.use_stack_file)."""
    body = text if text is not None else rollout_step_spec(example.read_text(), step, NOW)
    name = f"{example.name[len('Pulumi.') : -len('.yaml')]}-{step}"
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_text(body)
    return loader.use_stack_file(path)


def groups_of(inv, cloud: str) -> dict[str, dict]:
    return {r["name"]: r for r in inv.resources if r["type"] == GROUP[cloud]}


def declared_weights(inv, cloud: str) -> dict[str, int]:
    """group logical name -> the per-node weight the program sends (each cloud's argument)."""
    out = {}
    if cloud == "tencentcloud":
        for name, g in groups_of(inv, cloud).items():
            (balancer,) = g["inputs"]["forwardBalancerIds"]
            (target,) = balancer["targetAttributes"]
            out[name] = int(target["weight"])
        return out
    for r in inv.resources:
        if r["type"] == "alicloud:ess/scalingGroupVServerGroups:ScalingGroupVServerGroups":
            (vg,) = r["inputs"]["vserverGroups"]
            (attr,) = vg["vserverAttributes"]
            out[r["inputs"]["scalingGroupId"].removesuffix("_id")] = int(attr["weight"])
    return out


# --- the stack file of each step -----------------------------------------------------------------------------


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
@pytest.mark.parametrize("step", [*STEPS, "finished"], ids=str)
def test_each_step_changes_only_its_lines_and_keeps_the_comments(example, step):
    text = example.read_text()
    out = rollout_step_spec(text, step, NOW)
    before, after = text.splitlines(), out.splitlines()
    comments = [ln for ln in before if ln.lstrip().startswith("#")]
    fleet = yaml.safe_load(out)["config"]["gpufleet:fleet"]
    if step == "finished":
        assert "rollout" not in fleet and fleet["label"] == "v2" and fleet["model"]["name"] == "Qwen/Qwen3-8B"
        assert "rollout:" not in out
        kept = [c for c in comments if c in after]
        assert kept == comments, "the file's own comment lines are kept"
        return
    r = fleet["rollout"]
    if step == "promoted":
        assert (r["phase"], r["candidate_weight"]) == ("promoted", 100)
        assert r["retire_after"] == "2026-12-06T14:00:00+00:00"  # NOW + keep_previous_hours 24
    else:
        assert (r["phase"], r["candidate_weight"], r["retire_after"]) == ("rolling", step, None)
    assert len(after) == len(before)
    changed = [(a, b) for a, b in zip(before, after) if a != b]
    assert all(b.split(":")[0].strip() in ("phase", "candidate_weight", "retire_after") for _, b in changed), changed
    # the inline comments stay on their lines
    for a, b in changed:
        if "#" in a:
            assert b.endswith(a[a.index(" #") :].lstrip()) or a[a.index(" #") :] in b
    assert [ln for ln in after if ln.lstrip().startswith("#")] == comments


def test_a_step_needs_a_rollout_section_a_valid_step_and_a_zoned_promotion_time():
    prod = (ROOT / "stacks/Pulumi.alicloud-cn-hangzhou-prod.yaml").read_text()
    with pytest.raises(StepError, match="no gpufleet:fleet rollout section"):
        rollout_step_spec(prod, 5)
    text = EXAMPLES[0].read_text()
    with pytest.raises(StepError, match="not a step"):
        rollout_step_spec(text, 101)
    with pytest.raises(StepError, match="with a zone"):
        rollout_step_spec(text, "promoted", datetime(2026, 12, 5, 14, 0))


@pytest.mark.parametrize(
    "replicas, high",
    [
        (None, 8),
        ("        replicas: {min: 1, max: 4, desired: 2}\n", 4),
        ("        replicas:\n          min: 1\n          max: 3\n", 3),
    ],
    ids=["default", "one-line", "nested"],
)
def test_rolled_back_sets_weight_0_and_the_candidate_group_to_0_nodes(replicas, high, tmp_path):
    text = EXAMPLES[0].read_text().replace("      retire_after: null    # set by `gpufleet rollout promote`\n", "")
    if replicas:
        text = text.replace("        label: v2  ", replicas + "        label: v2  ")
    out = rollout_step_spec(text, "rolled_back")
    fleet = yaml.safe_load(out)["config"]["gpufleet:fleet"]
    assert fleet["rollout"]["candidate"]["replicas"] == {"min": 0, "max": high, "desired": 0}
    assert (fleet["rollout"]["candidate_weight"], fleet["rollout"]["phase"]) == (0, "rolling")
    assert "retire_after" not in fleet["rollout"]  # absent stays absent
    stack = write_stack(tmp_path, EXAMPLES[0], f"rolled-back-{high}", out)
    inv = preview_stack(stack, ROOT)
    cand = groups_of(inv, "alicloud")["llm-v2-prod-asg-group"]["inputs"]
    assert (cand["minSize"], cand["desiredCapacity"]) == (0, 0)
    assert declared_weights(inv, "alicloud")["llm-v2-prod-asg-group"] == 0


def test_a_flow_style_rollout_section_is_refused_rather_than_rewritten_wrongly():
    text = EXAMPLES[0].read_text().replace("      candidate_weight: 5   #", "      candidate_weight: {a: 5}   #")
    with pytest.raises(StepError):
        rollout_step_spec(text, 25)


# --- weights -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("percent", [0, 1, 5, 25, 33, 50, 75, 99, 100])
@pytest.mark.parametrize("nodes", [(2, 1), (8, 1), (3, 3), (1, 4), (40, 1)])
def test_node_weights_are_in_the_vendors_range_and_give_the_nearest_share(percent, nodes):
    current, candidate = nodes
    wc, wn = node_weights(percent, current, candidate)
    assert 0 <= wc <= 100 and 0 <= wn <= 100
    got = share((current, wc), (candidate, wn))
    want = Fraction(percent, 100)
    if percent in (0, 100):
        assert got == want and 0 in (wc, wn)
        return
    # while rolling the serving group keeps its weight: a step changes the candidate's attachment only
    assert wc == rollout.DEFAULT_WEIGHT and wn >= 1
    best = min(abs(share((current, wc), (candidate, b)) - want) for b in range(1, 101))
    assert abs(got - want) == best  # no other candidate weight 1-100 is nearer
    lowest, highest = share((current, wc), (candidate, 1)), share((current, wc), (candidate, 100))
    if not lowest <= want <= highest:  # beyond the range (1 % beside 2 nodes at 10: 1 / 21): its end
        assert wn == (1 if want < lowest else 100)


@pytest.mark.parametrize("nodes", [(2, 1), (3, 1), (4, 2), (8, 1), (8, 2)])
def test_the_default_canary_steps_land_within_a_point_and_a_half(nodes):
    for percent in (5, 25, 50):
        wc, wn = node_weights(percent, *nodes)
        assert abs(share((nodes[0], wc), (nodes[1], wn)) - Fraction(percent, 100)) < Fraction(3, 200), (percent, wn)


def test_a_step_never_moves_the_serving_groups_weight_until_the_candidate_takes_everything():
    for n in ((2, 1), (5, 1), (8, 2)):
        assert {node_weights(p, *n)[0] for p in (0, 5, 25, 50)} == {rollout.DEFAULT_WEIGHT}
        assert node_weights(100, *n) == (0, rollout.DEFAULT_WEIGHT)


def test_autoscaling_changes_the_share_not_the_weights():
    wc, wn = node_weights(5, 2, 1)
    assert (wc, wn) == (10, 1)  # 1 / (2 x 10 + 1) = 4.8 %
    assert share((2, wc), (2, wn)) > share((2, wc), (1, wn)) * Fraction(19, 10)  # the canary doubled: ~2x its share


# --- the program at every step -------------------------------------------------------------------------------


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_every_step_declares_two_weighted_groups_with_the_planned_share(example, tmp_path):
    cloud = yaml.safe_load(example.read_text())["config"]["gpufleet:fleet"]["cloud"]
    for step in STEPS:
        stack = write_stack(tmp_path, example, step)
        fleet = validation.load_fleet(stack, ROOT)
        inv = preview_stack(stack, ROOT)
        groups = groups_of(inv, cloud)
        assert sorted(groups) == ["llm-prod-asg-group", "llm-v2-prod-asg-group"], step
        cur, cand = groups["llm-prod-asg-group"]["inputs"], groups["llm-v2-prod-asg-group"]["inputs"]
        if step == "promoted":  # the old group held at its minimum, the candidate at the fleet's size
            assert (cur["minSize"], cur["maxSize"], cur["desiredCapacity"]) == (2, 2, 2)
            assert (cand["minSize"], cand["maxSize"], cand["desiredCapacity"]) == (2, 8, 2)
        else:  # the canary's default size next to the fleet's
            assert (cur["minSize"], cur["maxSize"], cur["desiredCapacity"]) == (2, 8, 2)
            assert (cand["minSize"], cand["maxSize"], cand["desiredCapacity"]) == (1, 8, 1)
        weights = declared_weights(inv, cloud)
        wc, wn = weights["llm-prod-asg-group"], weights["llm-v2-prod-asg-group"]
        assert (wc, wn) == rollout.weights(fleet.spec)
        percent = 100 if step == "promoted" else step
        got = share((int(cur["desiredCapacity"]), wc), (int(cand["desiredCapacity"]), wn))
        assert abs(got - Fraction(percent, 100)) < Fraction(1, 100), (step, wc, wn)
        assert wc == (0 if percent == 100 else rollout.DEFAULT_WEIGHT)  # the serving group's attachment stays
        if percent == 0:
            assert wn == 0
        if percent == 100:
            assert wc == 0
        # the candidate's nodes run the candidate's model
        configs = [r for r in inv.resources if r["name"] == "llm-v2-prod-asg-config"]
        assert len(configs) == 1
        assert fleet.candidate is not None and fleet.candidate.spec.model.name == "Qwen/Qwen3-8B"


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_after_finish_the_candidate_group_is_the_fleet_group_under_the_same_names(example, tmp_path):
    """URN names, physical names and inputs of the candidate group (promoted) equal the finished fleet's group: `pulumi
    up` after `rollout finish` replaces nothing of the serving group (it only drops the old group)."""

    def subtree(stack: str) -> dict[tuple[str, str], dict]:
        inv = preview_stack(stack, ROOT)
        by_name = {r["name"]: r for r in inv.resources}

        def chain(r) -> tuple[str, ...]:  # the parent types that are part of the URN
            out = []
            while r.get("parent"):
                parent = by_name.get(r["parent"])
                if parent is None:
                    break
                out.append(parent["type"])
                r = parent
            return tuple(out)

        return {
            (r["type"], r["name"]): {"urn": chain(r), **r["inputs"]} for r in inv.resources if r["name"].startswith("llm-v2-")
        }

    promoted = subtree(write_stack(tmp_path, example, "promoted"))
    finished = subtree(write_stack(tmp_path, example, "finished"))
    assert promoted and promoted.keys() == finished.keys()
    assert promoted == finished  # the same physical names (and every other input)
    names = [v for k, v in next(iter(finished.values())).items() if k.endswith("Name")]
    assert all("v2" in str(n) for n in names)
    # the rolling canary's group is the same group (a subset: it carries no schedule yet), under the same names
    rolling = subtree(write_stack(tmp_path, example, 5))
    assert rolling.keys() <= finished.keys()
    for key in rolling:
        for arg, value in rolling[key].items():
            if arg.endswith("Name") or arg == "name" or arg == "urn":
                assert finished[key][arg] == value, (key, arg)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_without_a_rollout_the_finished_stack_keeps_one_group(example, tmp_path):
    stack = write_stack(tmp_path, example, "finished")
    cloud = validation.load_fleet(stack, ROOT).spec.cloud
    inv = preview_stack(stack, ROOT)
    assert sorted(groups_of(inv, cloud)) == ["llm-v2-prod-asg-group"]
    assert set(declared_weights(inv, cloud).values()) == {rollout.DEFAULT_WEIGHT}
    assert "candidate_scaling_group_id" not in inv.outputs


# --- names in scope, cost, the simulation --------------------------------------------------------------------


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_the_names_of_both_groups_are_unique_in_their_scopes(example, tmp_path):
    stacks = [write_stack(tmp_path, example, step) for step in (5, "promoted")]
    # blue/green: both groups at full size with the fleet's schedules each
    blue_green = (
        example.read_text()
        .replace("strategy: canary   ", "strategy: blue_green")
        .replace("steps: [0, 5, 25, 50, 100]", "steps: [0, 100]")
        .replace("candidate_weight: 5 ", "candidate_weight: 0 ")
    )
    stacks.append(write_stack(tmp_path, example, "blue-green", blue_green))
    fleet = validation.load_fleet(stacks[-1], ROOT)
    assert fleet.spec.rollout is not None and fleet.spec.rollout.strategy == "blue_green"
    assert [len(g.spec.autoscaling.schedules) for g, _ in fleet.serving_groups()] == [2, 2]
    for stack in stacks:
        report = account.check(root=ROOT, only=[stack])
        assert report.problems == [] and account.clash_problems(report) == []
        assert any("v2" in n.value for n in report.names)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_cost_prices_the_candidate_group_on_top_of_the_fleet(example, tmp_path):
    stack = write_stack(tmp_path, example, 5)
    _, est = stack_estimate(stack)
    nodes = {ln.resource_name: ln.monthly_quantity for ln in est.lines if ln.category == "gpu_compute" and ln.unit == "hour"}
    assert nodes["llm-v2-prod-asg-config"] == 730  # the canary's one node all month
    assert float(nodes["llm-prod-asg-config"]) == pytest.approx(2.7738 * 730, rel=1e-4)  # the fleet's schedules' average
    # floor and peak: each group at its own min / max (8 + 8: the canary may scale to the fleet's max)
    assert (est.scenarios["floor"].nodes, est.scenarios["peak"].nodes) == (3, 16)
    assert est.scenarios["floor"].total.value < est.scenarios["average"].total.value < est.scenarios["peak"].total.value


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_the_simulation_splits_the_requests_by_the_declared_weights(example, tmp_path):
    cap = capacity.given(13.8)
    for step in (0, 25, "promoted"):
        stack = write_stack(tmp_path, example, step)
        p = plan.for_stack(stack)
        b = run.behaviour(p.fleet, p.resources)
        weights = {g.name: g.weight for g in b.groups}
        wc, wn = rollout.weights(p.fleet.spec)
        assert weights == {"llm-prod-asg-group": wc, "llm-v2-prod-asg-group": wn}
        tr = trace.profile("step", run.step_low(b, cap), datetime(2026, 12, 7, tzinfo=UTC), 10.0, run.day_shape(b))
        r = run.simulate(b, cap, tr)
        cur, cand = r.groups["llm-prod-asg-group"], r.groups["llm-v2-prod-asg-group"]
        total = sum(r.arrivals)
        assert sum(cur["arrivals"]) + sum(cand["arrivals"]) == pytest.approx(total)
        # every step: the candidate's share is its serving nodes x weight over all
        for k in range(0, len(r.times), 60):
            sc, sn = cur["serving"][k], cand["serving"][k]
            want = float(share((sc, wc), (sn, wn))) if sc * wc + sn * wn else 0.0
            if r.arrivals[k]:
                assert cand["arrivals"][k] / r.arrivals[k] == pytest.approx(want), (step, k)
        if step == 0:
            assert sum(cand["arrivals"]) == 0 and max(cand["queue_per_node"]) == 0
        if step == "promoted":
            assert sum(cur["arrivals"]) == 0 and sum(cand["arrivals"]) == pytest.approx(total)
        if step == 25:
            assert 0.05 < sum(cand["arrivals"]) / total < 0.25  # the old group scales out under the step; the canary does not


def test_the_candidates_nodes_load_their_own_model_in_the_simulation(tmp_path):
    from gpufleet.behaviour import timings

    stack = write_stack(tmp_path, EXAMPLES[0], "promoted")  # the candidate takes every request: it scales out
    p = plan.for_stack(stack)
    b = run.behaviour(p.fleet, p.resources)
    assert p.fleet.candidate is not None
    ready = {g.name: g.ready_s for g in b.groups}
    own = timings.node(p.fleet.candidate)
    fleet_ready = sum(b.timing(n) for n in run.READY)
    want = fleet_ready - b.timing("weights_fetch_s") - b.timing("cuda_graphs_s")
    want += own["weights_fetch_s"].seconds + own["cuda_graphs_s"].seconds
    assert ready == {"llm-prod-asg-group": None, "llm-v2-prod-asg-group": pytest.approx(want)}
    assert own["weights_fetch_s"].seconds != b.timing("weights_fetch_s")  # Qwen3-8B is not Qwen2.5-7B's size
    cap = capacity.given(13.8)
    tr = trace.profile("step", run.step_low(b, cap), datetime(2026, 12, 7, tzinfo=UTC), 10.0, run.day_shape(b))
    r = run.simulate(b, cap, tr)
    launched = [n for n in r.nodes if n.group == "llm-v2-prod-asg-group" and n.created > 0]
    assert launched
    for n in launched:
        assert n.ready - n.in_service == pytest.approx(want)


def test_the_simulation_without_weights_runs_one_queue_as_before():
    p = plan.for_stack("alicloud-cn-hangzhou-prod")
    b = run.behaviour(p.fleet, p.resources)
    assert {g.weight for g in b.groups} == {None}
    cap = capacity.given(13.8)
    tr = trace.profile("step", run.step_low(b, cap), datetime(2026, 12, 7, tzinfo=UTC), 10.0, run.day_shape(b))
    assert run.simulate(b, cap, tr).groups == {}


# --- the spec ------------------------------------------------------------------------------------------------


def example_raw() -> dict:
    return yaml.safe_load(EXAMPLES[0].read_text())["config"]["gpufleet:fleet"]


@pytest.mark.parametrize(
    "edit, expected",
    [
        (lambda f: f.update(label="v2"), "fleet.rollout.candidate.label: 'v2' is the fleet's own label"),
        (  # the current group answered requests for the candidate's model with its own, silently
            lambda f: f["model"].update(aliases=["Qwen/Qwen3-8B"]),
            "fleet.model.aliases: 'Qwen/Qwen3-8B' is the rollout candidate's model: the current group would answer",
        ),
        (lambda f: f["rollout"].update(candidate_weight=7), "fleet.rollout.candidate_weight: 7 is not one of the steps"),
        (lambda f: f["rollout"].update(phase="promoted"), "fleet.rollout: phase promoted sends every request"),
        (lambda f: f["rollout"]["candidate"].update(label="V2"), "fleet.rollout.candidate.label: 'V2' is not a version label"),
        (lambda f: f["rollout"].update(steps=[0, 50, 25, 100]), "fleet.rollout.steps: [0, 50, 25, 100] is not a list"),
        (
            lambda f: f["rollout"].update(phase="promoted", candidate_weight=100, retire_after="2026-12-06T14:00:00"),
            "fleet.rollout.retire_after: needs a zone",
        ),
        (lambda f: f["rollout"]["candidate"].update(gpu={"kind": "A1O"}), "fleet.rollout.candidate.gpu.kind"),
        (
            lambda f: f["rollout"]["candidate"]["model"].update(source="s3://x/y"),
            "fleet.rollout.candidate.model.source: must be an",
        ),
        (lambda f: f["rollout"].update(strategy="rainbow"), "fleet.rollout.strategy: Input should be 'canary' or"),
        (
            lambda f: f["rollout"]["gates"]["answers"].update(prompts="prompts/missing.jsonl"),
            "fleet.rollout.gates.answers.prompts: no such file 'prompts/missing.jsonl' in the project folder",
        ),
        (  # a name longer than the file system allows (Path.is_file raised OSError ENAMETOOLONG)
            lambda f: f["rollout"]["gates"]["answers"].update(prompts="p" * 300 + ".jsonl"),
            "fleet.rollout.gates.answers.prompts: no such file 'ppp",
        ),
        (
            lambda f: f["rollout"]["gates"]["answers"].update(prompts="../x.jsonl"),
            "fleet.rollout.gates.answers.prompts: '../x.jsonl': give a path inside the project folder",
        ),
    ],
)
def test_a_bad_rollout_section_is_one_line_per_problem(edit, expected):
    raw = example_raw()
    edit(raw)
    with pytest.raises(UserError) as info:
        validation.validate(raw, stack="x", file="stacks/Pulumi.x.yaml")
    shown = [str(p) for p in info.value.problems]
    assert any(s.startswith("stacks/Pulumi.x.yaml: " + expected) for s in shown), shown


def test_a_candidate_that_could_not_become_the_fleet_is_refused():
    raw = example_raw()
    raw["rollout"]["candidate"]["serving"] = {**raw["serving"], "tensor_parallel_size": 2}  # on 1 GPU
    with pytest.raises(UserError) as info:
        validation.validate(raw, stack="x", file="f")
    assert [str(p) for p in info.value.problems] == [
        "f: fleet.rollout.candidate.serving.tensor_parallel_size: 2 exceeds gpu.count (1) (the fleet after `rollout finish`)"
    ]


def test_candidate_replicas_are_the_rollouts_size_and_a_rolled_back_candidate_has_no_node(tmp_path):
    text = (
        EXAMPLES[0]
        .read_text()
        .replace("        label: v2  ", "        replicas: {min: 0, max: 1, desired: 0}  # rolled back\n        label: v2  ")
    )
    text = rollout_step_spec(text, 0)
    stack = write_stack(tmp_path, EXAMPLES[0], "rolled-back", text)
    assert validation.load_fleet(stack, ROOT).candidate is not None
    inv = preview_stack(stack, ROOT)
    cand = groups_of(inv, "alicloud")["llm-v2-prod-asg-group"]["inputs"]
    assert (cand["minSize"], cand["maxSize"], cand["desiredCapacity"]) == (0, 1, 0)
    assert declared_weights(inv, "alicloud")["llm-v2-prod-asg-group"] == 0
    # promoted, the candidate runs at the fleet's replicas; finished, the fleet keeps them
    promoted = yaml.safe_load(rollout_step_spec(text, "promoted", NOW))["config"]["gpufleet:fleet"]
    spec = validation.validate(promoted, stack="x", file="f").spec
    assert rollout.candidate_replicas(spec) == spec.replicas
    finished = yaml.safe_load(rollout_step_spec(text, "finished"))["config"]["gpufleet:fleet"]
    assert finished["replicas"] == {"min": 2, "max": 8, "desired": 2}


def test_weight_0_is_always_a_step_rolled_back():
    raw = example_raw()
    raw["rollout"].update(steps=[10, 100], candidate_weight=0)
    assert validation.validate(raw, stack="x", file="f").spec.rollout is not None
    raw["rollout"].update(candidate_weight=5)
    with pytest.raises(UserError, match="5 is not one of the steps"):
        validation.validate(raw, stack="x", file="f")


def test_blue_green_runs_both_groups_at_full_size():
    raw = example_raw()
    raw["rollout"].update(strategy="blue_green", steps=None, candidate_weight=0)
    fleet = validation.validate(raw, stack="x", file="f")
    assert fleet.spec.rollout is not None and fleet.spec.rollout.plan == (0, 100)
    assert rollout.candidate_replicas(fleet.spec) == fleet.spec.replicas
    assert len(rollout.candidate_spec(fleet.spec).autoscaling.schedules) == 2  # a full-size group keeps the schedules


def test_bad_rollout_input_exits_2_with_file_field_message(tmp_path):
    text = EXAMPLES[1].read_text().replace("candidate_weight: 5 ", "candidate_weight: 6 ")
    path = tmp_path / "Pulumi.bad-rollout.yaml"
    path.write_text(text)
    out = subprocess.run(
        [sys.executable, "-c", "from gpufleet.cli import main; main()", "preview", "--stack", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.returncode == 2, out.stderr
    assert f"{path}: fleet.rollout.candidate_weight: 6 is not one of the steps (0, 5, 25, 50, 100)" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_gpufleet_preview_takes_the_example_by_path(example):
    out = subprocess.run(
        [sys.executable, "-c", "from gpufleet.cli import main; main()", "preview", "--stack", str(example.relative_to(ROOT))],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**__import__("os").environ, "GPUFLEET_NOW": "2026-12-01T00:00:00+00:00"},
    )
    assert out.returncode == 0, out.stderr
    assert "llm-v2-prod-asg-group" in out.stdout and "llm-prod-asg-group" in out.stdout
    shown = subprocess.run(
        [sys.executable, "-c", "from gpufleet.cli import main; main()", "preview", "--stack", str(example), "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**__import__("os").environ, "GPUFLEET_NOW": "2026-12-01T00:00:00+00:00"},
    )
    notes = __import__("json").loads(shown.stdout)["notes"]
    assert (
        "rollout (canary rolling, 5 % planned): llm-prod 2 node(s) x weight 10, llm-v2-prod 1 node(s) x weight 1: "
        "4.8 % of requests to llm-v2-prod at these sizes" in " ".join(notes)
    )


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_the_security_invariants_hold_for_both_groups(example, tmp_path):
    """tests/test_policy.py's node invariants over a rollout stack: both groups' nodes, their user-data and tags."""
    from views import VIEWS, tag_map

    stack = write_stack(tmp_path, example, 25)
    fleet = validation.load_fleet(stack, ROOT)
    inv = preview_stack(stack, ROOT)
    v = VIEWS[fleet.spec.cloud](inv)
    assert v["node_public_bandwidth"] and all(bw == 0 for bw in v["node_public_bandwidth"])
    assert not any(v["node_public_ip"])
    assert len(v["user_data"]) >= 2  # one per group's launch / scaling configuration
    for text in v["user_data"]:
        assert '["serve", ' in text and "VLLM_API_KEY" not in text and "--api-key" not in text
        assert len(text.encode()) < 16 * 1024
    assert any("qwen3-8b.tar" in text for text in v["user_data"])  # the candidate's nodes fetch the candidate's model
    assert any("qwen2.5-7b-instruct.tar" in text for text in v["user_data"])
    for r in inv.resources:
        if "tags" in r["inputs"]:
            assert tag_map(r["inputs"]["tags"]).get("gpufleet:fleet"), r["name"]
    assert set(inv.outputs) == {"endpoint", "vpc_id", "scaling_group_id", "security_group_ids", "candidate_scaling_group_id"}


def test_a_prompt_file_in_the_project_is_accepted():
    raw = example_raw()
    raw["rollout"]["gates"]["answers"]["prompts"] = "examples/budgets-example.yaml"  # exists: only existence is checked here
    fleet = validation.validate(raw, stack="x", file="f")
    assert fleet.spec.rollout is not None and fleet.spec.rollout.gates.answers.prompts == "examples/budgets-example.yaml"


def test_cost_compare_moves_the_candidate_to_the_other_cloud_too():
    from gpufleet.cost import usage
    from gpufleet.finance import compare

    stack = loader.use_stack_file(EXAMPLES[0])
    (opt,) = compare.compare(stack, ["tencentcloud"], ["payg"], usage.load(stack))
    assert opt.estimate is not None, opt.problem
    names = {ln.resource_name for ln in opt.estimate.lines if ln.category == "gpu_compute"}
    assert names == {"llm-prod-asg-config", "llm-v2-prod-asg-config"}


# --- the model name clients send --------------------------------------------------------------------------------


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_the_candidate_also_serves_the_current_models_name_or_the_preview_says_clients_get_404(example, tmp_path):
    """Clients send the current model's name through the one load balancer; vLLM answers an unknown `model` with 404."""
    from gpufleet.components.userdata import vllm_args

    fleet = validation.load_fleet(write_stack(tmp_path, example, 5))
    current, cand = fleet.spec.model.name, fleet.spec.rollout.candidate.model
    assert current in cand.aliases and not any("get 404" in n for n in rollout.notes(fleet.spec))
    finished = validation.load_fleet(write_stack(tmp_path, example, "finished"))
    argv = vllm_args(finished)
    served = argv[argv.index("--served-model-name") + 1 : argv.index("--host")]
    assert served == [cand.name, current]  # the finished fleet still answers the old name (`aliases` stay with the model)

    text = example.read_text().replace(f"          aliases: [{current}]", "          aliases: []")
    bare = validation.load_fleet(write_stack(tmp_path, example, 5, rollout_step_spec(text, 5, NOW)))
    (note,) = [n for n in rollout.notes(bare.spec) if "404" in n]
    assert current in note and "aliases" in note


def test_a_model_is_not_its_own_alias(tmp_path):
    text = EXAMPLES[0].read_text().replace("aliases: [Qwen/Qwen2.5-7B-Instruct]", "aliases: [Qwen/Qwen3-8B]")
    with pytest.raises(UserError) as exc:
        validation.load_fleet(write_stack(tmp_path, EXAMPLES[0], 5, rollout_step_spec(text, 5, NOW)))
    assert "is the model's name already" in str(exc.value.problems)
