"""`gpufleet plan capacity --stack S`: the plan against everything that bounds the stack's replicas (its replicas and
every schedule's min and max while it holds), and the load test against the stack it plans (as `cost tokens` and
`plan scaling` warn)."""

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpufleet import validation
from gpufleet.sizing import capacity

ROOT = Path(__file__).resolve().parents[2]
LOADTEST = ROOT / "examples" / "loadtest-example.json"  # measured on alicloud-cn-hangzhou-prod's node (A10)
PROD = "alicloud-cn-hangzhou-prod"  # replicas max 8; schedule night: max 4, from 14:00 UTC until business-day
MONDAY = datetime(2026, 12, 7, 9, 30, tzinfo=UTC)


def run(argv: list, capsys) -> tuple[int, str]:
    from gpufleet.cli import main

    capsys.readouterr()
    try:
        main([str(a) for a in argv])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return code, out.out


@pytest.fixture(autouse=True)
def _wide(monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")  # a message is one line: it can be searched for whole
    monkeypatch.setenv("GPUFLEET_NOW", MONDAY.isoformat())


def test_a_schedule_max_below_the_plan_is_named_with_its_hours_and_the_fix():
    """6 nodes for 60 QPS fit replicas.max 8, but not the night schedule's max 4, which holds 103 h a week (weekday
    nights and the whole weekend): the plan was called room to spare."""
    spec = validation.load_fleet(PROD, ROOT).spec
    p = capacity.plan(60, 13.768)
    assert capacity.replicas_problems(spec.replicas, p) == []
    ((field, message),) = capacity.schedule_problems(spec.autoscaling, p, MONDAY)
    assert field == "fleet.autoscaling.schedules.1.max"
    assert message.startswith("4 is below the 6 nodes the peak of 60 QPS needs (13.768 QPS per node, N+1): schedule night")
    assert "from each firing ('0 14 * * *' UTC) until business-day ('0 1 * * 1-5' UTC) fires" in message
    assert "103 h of the 7 days from 2026-12-07 (UTC)" in message and "raise its max to 6" in message


def test_a_plan_within_every_schedule_is_no_problem_and_a_min_below_the_plan_is():
    spec = validation.load_fleet(PROD, ROOT).spec
    assert capacity.schedule_problems(spec.autoscaling, capacity.plan(40, 13.768), MONDAY) == []  # 4 nodes: night holds 4
    # --redundancy 2: a minimum of 3, above night's 2 (business-day holds 3), as replicas.min 2 is below it
    problems = capacity.schedule_problems(spec.autoscaling, capacity.plan(20, 13.768, redundancy=2), MONDAY)
    assert [f for f, _ in problems] == ["fleet.autoscaling.schedules.1.min"]
    assert problems[0][1].startswith("2 is below the planned minimum 3 (N+2): schedule night sets the fleet's min to 2")


def test_a_lone_schedule_holds_from_its_firing_on():
    spec = validation.load_fleet(PROD, ROOT).spec
    night = spec.autoscaling.schedules[1]
    alone = spec.autoscaling.model_copy(update={"schedules": [night]})
    ((_, message),) = capacity.schedule_problems(alone, capacity.plan(60, 13.768), MONDAY)
    assert "from each firing ('0 14 * * *' UTC) on (no other schedule resets it), 168 h of the 7 days" in message


def test_a_schedule_that_does_not_fire_this_week_says_so_not_0_h():
    """A schedule firing on one date a year (29 February) held "0 h of the 7 days" and still failed the plan: the
    failure stands on its max (whenever it fires, it holds), and the message says it does not fire this week."""
    spec = validation.load_fleet(PROD, ROOT).spec
    night = spec.autoscaling.schedules[1].model_copy(update={"cron": "0 14 29 2 *"})
    leap = spec.autoscaling.model_copy(update={"schedules": [spec.autoscaling.schedules[0], night]})
    ((_, message),) = capacity.schedule_problems(leap, capacity.plan(60, 13.768), MONDAY)
    assert "not in the 7 days from 2026-12-07 (UTC), but whenever it fires; raise its max to 6" in message
    assert "0 h" not in message


def test_the_command_exits_1_naming_the_schedule(capsys):
    args = ["plan", "capacity", "--stack", PROD, "--from-loadtest", LOADTEST, "--peak-qps", "60"]
    code, text = run(args, capsys)
    assert code == 1
    assert f"short {PROD}: fleet.autoscaling.schedules.1.max: 4 is below the 6 nodes" in text
    code, out = run([*args, "--json"], capsys)
    j = json.loads(out)
    assert code == 1 and len(j["short"]) == 1 and j["short"][0].startswith(f"{PROD}: fleet.autoscaling.schedules.1.max")
    assert j["warnings"] == j["short"]  # the load test was measured on this stack: nothing else to warn of
    assert run(["plan", "capacity", "--stack", PROD, "--from-loadtest", LOADTEST, "--peak-qps", "40"], capsys)[0] == 0


@pytest.mark.parametrize(
    "stack, says",
    [
        ("alicloud-cn-hangzhou-dev", "gpu: measured with '1x A10', the stack has '1x T4'"),
        (
            "tencentcloud-ap-guangzhou-prod",
            "instance_type: measured with 'ecs.gn7i-c8g1.2xlarge', the stack has 'GNV4.3XLARGE44'",
        ),
    ],
)
def test_a_load_test_of_another_node_is_warned_of_as_cost_tokens_warns(capsys, stack, says):
    """The A10 load test planned the T4/AWQ dev stack without a word, while `cost tokens` and `plan scaling` warned:
    the same lines (gpufleet.sizing.loadtest.measured_elsewhere), in the table and the JSON's warnings; a warning is
    not a failed check (the Tencent plan fits its replicas and schedules: exit 0)."""
    args = ["plan", "capacity", "--stack", stack, "--from-loadtest", LOADTEST, "--peak-qps", "10"]
    code, text = run(args, capsys)
    tokens = run(["cost", "tokens", "--stack", stack, "--from-loadtest", LOADTEST, "--json"], capsys)[1]
    measured = [w for w in json.loads(tokens)["warnings"] if w.startswith(f"{LOADTEST}: ")]
    assert f"{LOADTEST}: {says}" in measured
    for w in measured:
        assert f"warning {w}" in text
    assert f"warning the plan sizes {stack}'s replicas at throughput measured on another configuration" in text
    code_json, out = run([*args, "--json"], capsys)
    j = json.loads(out)
    assert j["warnings"][: len(measured)] == measured and j["warnings"][len(measured) :] == [
        "the plan sizes " + stack + "'s replicas at throughput measured on another configuration",
        *j["short"],
    ]
    assert code == code_json == (1 if j["short"] else 0)
    if stack.startswith("tencentcloud"):
        assert code == 0 and j["short"] == []
