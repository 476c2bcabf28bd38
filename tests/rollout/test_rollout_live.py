"""`gpufleet rollout` for real: two local OpenAI-compatible groups (tests/sizing/fake_openai.py: vLLM's /metrics,
/health, greedy answers) behind a real nginx whose weighted upstream follows the stack file step by step (rollout_helpers.py:
`lb.deploy()` plays the `pulumi up` the command prints). The gates measure each group on its own endpoint; the
load-test client also goes through nginx to check the share each step gives the candidate."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from fake_openai import default_answer
from rollout_helpers import CANDIDATE_MODEL, CURRENT_MODEL, group

from gpufleet.cli import main
from gpufleet.sizing import loadtest
from gpufleet.stacks import loader
from gpufleet.stacks import rollout as steps
from gpufleet.validation import load_fleet


def run_cli(capsys, *args: str) -> tuple[int, dict | None, str]:
    """gpufleet ARGS --json in this process: (exit code, the JSON report or None, standard error)."""
    try:
        main([*args, "--json"])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


def gate_args(cur, cand, *extra: str) -> list[str]:
    return [
        "--current-url", cur.url, "--candidate-url", cand.url,
        "--current-metrics-url", f"{cur.url}/metrics", "--candidate-metrics-url", f"{cand.url}/metrics",
        "--requests", "16", "--concurrency", "4", *extra,
    ]  # fmt: skip


def share_through_lb(lb, cur, cand, requests: int = 40) -> float:
    """The candidate's share of `requests` sent by the load-test client through nginx."""
    before = (cur.behaviour.count, cand.behaviour.count)
    s = loadtest.settings(
        url=lb.url, model=CURRENT_MODEL, concurrency="2", requests=requests, max_tokens=2, api_key_env=None,
        slo_p95_ms=None, timeout_s=10, max_duration_s=30, prompt=None, environ={},
    )  # fmt: skip
    result = asyncio.run(loadtest.run(s))
    assert result["levels"][0]["errors"] == 0, result["levels"][0]["top_errors"]
    got = (cur.behaviour.count - before[0], cand.behaviour.count - before[1])
    assert sum(got) == requests
    return got[1] / requests


def fleet_of(path) -> dict:
    return yaml.safe_load(path.read_text())["config"]["gpufleet:fleet"]


def by_name(report) -> dict:
    return {g["name"]: g for g in report["gates"]}


def test_a_good_canary_walks_every_step_to_promotion_and_finish(fleet, capsys):
    path, lb, cur, cand = fleet(max_latency_p95_ratio=2, max_ttft_p95_ratio=2)
    stack = ["--stack", str(path)]
    code, rep, _ = run_cli(capsys, "rollout", "start", *stack)
    assert code == 0 and rep["status"] == "rolling"
    assert rep["awaiting_deploy"]["commands"] == [
        f"GPUFLEET_STACK_FILE={path} pulumi up --cwd {os.getcwd()} --stack alicloud-cn-hangzhou-prod-rollout --yes "
        f"--config-file {path}"
    ]
    assert fleet_of(path)["rollout"]["candidate_weight"] == 0
    lb.deploy()
    assert lb.upstream["candidate"] is None and share_through_lb(lb, cur, cand) == 0

    for weight in (5, 25, 50, 100):
        code, rep, err = run_cli(capsys, "rollout", "step", *stack, *gate_args(cur, cand))
        assert code == 0, (rep, err)
        assert rep["result"] == "passed" and all(g["passed"] for g in rep["gates"]), rep["gates"]
        assert set(by_name(rep)) == {
            "health", "error_rate", "latency_p95_ratio", "ttft_p95_ratio", "queue_per_node", "kv_cache_percent",
            "answers_exact_match", "answers_similarity",
        }  # fmt: skip
        assert by_name(rep)["answers_exact_match"]["measured"] == 1.0  # the same answers: the gate passes them
        assert rep["figures"]["traffic"]["candidate"]["kv_cache_percent_max"] > 0  # read from vLLM's own metric
        assert fleet_of(path)["rollout"]["candidate_weight"] == weight
        assert f"{weight} % planned" in rep["declared"][0]  # what the written stack file declares, as preview says
        lb.deploy()
        expected = weight / 100 if weight in (0, 100) else None
        measured = share_through_lb(lb, cur, cand)
        if expected is None:  # per-node weights for 2 current nodes and 1 candidate node: the nearest share
            n_cur, n_cand = lb.upstream["current"], lb.upstream["candidate"]
            expected = n_cand / (n_cur + n_cand)
            assert abs(expected - weight / 100) < 0.02  # the nearest share integer weights give (25 %: 7 / 27)
        assert abs(measured - expected) <= 0.05, (weight, measured)

    code, rep, err = run_cli(capsys, "rollout", "step", *stack, *gate_args(cur, cand))
    assert code == 0 and "rollout promote" in err  # at the last step: nothing to step, promote is next

    code, rep, err = run_cli(capsys, "rollout", "promote", *stack, *gate_args(cur, cand))
    assert code == 0 and rep["result"] == "passed" and rep["awaiting_deploy"]["change"]["kind"] == "promote", (rep, err)
    r = fleet_of(path)["rollout"]
    assert r["phase"] == "promoted" and r["candidate_weight"] == 100
    assert datetime.fromisoformat(r["retire_after"]) > datetime.now(UTC)
    lb.deploy()
    assert share_through_lb(lb, cur, cand) == 1.0

    code, _, err = run_cli(capsys, "rollout", "finish", *stack)
    assert code == 2 and "retire_after" in err and "--force" in err  # refused within the keep window
    code, rep, _ = run_cli(capsys, "rollout", "status", *stack)
    assert rep["status"] == "rolling" and rep["awaiting_deploy"]["change"]["kind"] == "promote"  # refused: nothing done
    assert rep["in_progress"]["then"]["retire_after"] == r["retire_after"]
    code, rep, _ = run_cli(capsys, "rollout", "finish", *stack, "--force")
    assert code == 0
    code, rep, _ = run_cli(capsys, "rollout", "finish", *stack)  # takes the deploy as done
    assert code == 0 and rep["status"] == "finished"
    done = fleet_of(path)
    assert "rollout" not in done and done["label"] == "v2" and done["model"]["name"] == CANDIDATE_MODEL
    code, _, err = run_cli(capsys, "rollout", "start", *stack)
    assert code == 2 and "rollout" in err  # nothing left to roll out


def test_a_slow_candidate_is_rolled_back_naming_the_gate(fleet, capsys):
    # 1 s to the first token against 50 ms: both p95 gates fail even when a loaded machine stalls the current
    # group's p95 by a few hundred ms (16 requests a gate, so one stall is the p95; 0.4 s once passed the latency gate)
    path, lb, cur, cand = fleet(candidate=group(CANDIDATE_MODEL, first_token_s=1.0))  # prod, as shipped
    stack = ["--stack", str(path)]
    assert run_cli(capsys, "rollout", "start", *stack)[0] == 0
    lb.deploy()
    code, rep, err = run_cli(capsys, "rollout", "step", *stack, *gate_args(cur, cand))
    assert code == 1 and rep["result"] == "failed"
    failing = {g["name"] for g in rep["gates"] if not g["passed"]}
    assert {"ttft_p95_ratio", "latency_p95_ratio"} <= failing and "error_rate" not in failing
    assert "ttft_p95_ratio" in rep["reason"] and "rolling back" in err
    g = by_name(rep)["ttft_p95_ratio"]
    assert g["measured"] > 2 and g["threshold"] == 1.25  # 1 s vs 50 ms to the first token, less under load
    # the candidate had no traffic (0 %): the rollback is its group to 0 nodes
    assert rep["awaiting_deploy"]["change"] == {"kind": "rollback", "weight": None}
    assert fleet_of(path)["rollout"]["candidate"]["replicas"] == {"min": 0, "max": 8, "desired": 0}
    lb.deploy()
    code, rep, _ = run_cli(capsys, "rollout", "step", *stack, *gate_args(cur, cand))
    assert code == 0 and rep["status"] == "rolled_back"
    assert lb.upstream["candidate"] is None and share_through_lb(lb, cur, cand) == 0


def test_an_erroring_candidate_is_rolled_back_weight_first_then_nodes(fleet, capsys):
    path, lb, cur, cand = fleet(env="staging", max_latency_p95_ratio=2, max_ttft_p95_ratio=2)
    stack = ["--stack", str(path)]
    assert run_cli(capsys, "rollout", "start", *stack)[0] == 0
    lb.deploy()
    code, rep, _ = run_cli(capsys, "rollout", "step", *stack, *gate_args(cur, cand))
    assert code == 0 and fleet_of(path)["rollout"]["candidate_weight"] == 5
    lb.deploy()
    assert share_through_lb(lb, cur, cand) > 0
    cand.behaviour.fail_every = 3  # the candidate starts failing a third of its requests
    code, rep, err = run_cli(capsys, "rollout", "step", *stack, *gate_args(cur, cand))
    assert code == 1
    failing = {g["name"] for g in rep["gates"] if not g["passed"]}
    assert failing - {"answers_exact_match", "answers_similarity"} == {"error_rate"}  # its answers fail too, some
    assert by_name(rep)["error_rate"]["measured"] > 0.2 and "engine overloaded" in by_name(rep)["error_rate"]["detail"]
    # first the traffic: weight 0, deployed; then the nodes
    assert rep["awaiting_deploy"]["change"] == {"kind": "weight", "weight": 0}
    assert fleet_of(path)["rollout"]["candidate_weight"] == 0 and "replicas" not in fleet_of(path)["rollout"]["candidate"]
    lb.deploy()
    assert share_through_lb(lb, cur, cand) == 0
    code, rep, _ = run_cli(capsys, "rollout", "abort", *stack)
    assert code == 0 and rep["awaiting_deploy"]["change"]["kind"] == "rollback"
    assert fleet_of(path)["rollout"]["candidate"]["replicas"]["desired"] == 0
    lb.deploy()
    code, rep, _ = run_cli(capsys, "rollout", "abort", *stack)
    assert code == 0 and rep["status"] == "rolled_back" and rep["awaiting_deploy"] is None
    code, rep, _ = run_cli(capsys, "rollout", "status", *stack)
    assert rep["status"] == "rolled_back" and "error_rate" in rep["reason"]
    assert [(h["weight"], h["to"], h["result"]) for h in rep["history"]] == [(0, "5 %", "passed"), (5, "25 %", "failed")]
    main(["rollout", "status", "--stack", str(path)])
    table = capsys.readouterr().out
    assert "measurements" in table and "error_rate" in table and "reason: gate failed at 5 %: error_rate" in table


def test_the_answer_gate_flags_a_candidate_that_answers_differently(fleet, capsys, tmp_path):
    def drifted(prompt: str) -> str:  # a quantized model that words a third of its answers differently
        text = default_answer(prompt)
        return text.replace("words long", "words in length") if len(prompt) % 3 == 0 else text

    mine = tmp_path / "prompts.yaml"
    mine.write_text("- {id: refund, prompt: Summarise our refund policy in one line.}\n")
    path, lb, cur, cand = fleet(
        env="staging", candidate=group(CANDIDATE_MODEL, answer=drifted), max_latency_p95_ratio=3, max_ttft_p95_ratio=3
    )
    stack = ["--stack", str(path)]
    assert run_cli(capsys, "rollout", "start", *stack)[0] == 0
    code, rep, _ = run_cli(capsys, "rollout", "step", *stack, *gate_args(cur, cand, "--prompts", str(mine)))
    assert code == 1
    assert {g["name"] for g in rep["gates"] if not g["passed"]} == {"answers_exact_match"}
    answers = rep["figures"]["answers"]
    assert answers["prompts"] == 11  # the 10 shipped and the user's
    assert 0 < len(answers["changed"]) < 11
    for ch in answers["changed"]:
        assert "words in length" in ch["candidate"] and "words long" in ch["current"]
        assert 0.8 < ch["similarity"] < 1
    # the report lists the changed prompts in the table too
    main(["rollout", "status", "--stack", str(path)])
    table = capsys.readouterr().out
    assert "answers that changed" in table and answers["changed"][0]["id"] in table


def _spawn_step(path, cur, cand, env=None):
    return subprocess.Popen(
        [str(Path(sys.executable).parent / "gpufleet"), "rollout", "step", "--stack", str(path), *gate_args(cur, cand), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: the test kills it (and a child) by that id
        env=env or os.environ.copy(),
    )


def _wait_for(cond, what: str, timeout: float = 30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_second_operator_is_refused_and_a_crash_resumes_cleanly(fleet, capsys):
    # latency is not what this test is about: the killed operator's requests still hang on the candidate
    path, lb, cur, cand = fleet(env="staging", candidate=group(CANDIDATE_MODEL, hang_s=30), max_latency_p95_ratio=100)
    stack = ["--stack", str(path)]
    assert run_cli(capsys, "rollout", "start", *stack)[0] == 0
    lb.deploy()
    state_file = path.parent / ".rollout-alicloud-cn-hangzhou-staging-rollout.json"
    first = _spawn_step(path, cur, cand)
    try:
        _wait_for(lambda: cand.behaviour.count > 0, "the first operator's load on the candidate")
        code, _, err = run_cli(capsys, "rollout", "step", *stack, *gate_args(cur, cand))
        assert code == 2 and "another operator is running `rollout step`" in err and f"pid {first.pid}" in err
        code, _, err = run_cli(capsys, "rollout", "abort", *stack)
        assert code == 2 and "another operator" in err
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # the crash: no clean-up runs
        first.wait()
    # the state file is whole, at the last finished step: the start's, its deploy still awaited (the killed step had
    # confirmed it only in memory, to be saved with its gates)
    st = json.loads(state_file.read_text())
    assert st["step"] == -1 and st["awaiting_deploy"] and st["history"] == []
    cand.behaviour.hang_s = 0
    code, rep, err = run_cli(capsys, "rollout", "step", *stack, *gate_args(cur, cand, "--concurrency", "2"))
    assert code == 0 and rep["result"] == "passed", (rep, err)
    assert f"pid {first.pid}" in err and "ended without finishing" in err
    assert fleet_of(path)["rollout"]["candidate_weight"] == 5


FAKE_PULUMI = """#!/bin/sh
# A stand-in for the Pulumi CLI (none can be installed here): records each call and answers what the Automation API
# asks (version, stack history, stack output); `up` hangs, succeeds or fails as $FAKE_PULUMI_UP says.
echo "$*" >> "{log}"
case "$*" in
  version) echo v3.205.0 ;;
  *"stack history"*) echo '[{{"kind": "update", "startTime": "2026-12-05T12:00:00.000Z", "message": "", "environment": {{}},
    "config": {{}}, "result": "succeeded", "endTime": "2026-12-05T12:00:05.000Z", "resourceChanges": {{"update": 1}}}}]' ;;
  *"stack output"*) echo '{{}}' ;;
  *" up "*)
    case "$FAKE_PULUMI_UP" in
      hang) sleep 60 ;;
      fail) echo "error: update failed: ESS says QuotaExceeded" >&2; exit 255 ;;
      *) echo "Updating (alicloud-cn-hangzhou-staging-rollout)"; echo "Resources: 1 updated" ;;
    esac ;;
esac
"""


def fake_pulumi(tmp_path, up: str) -> tuple[dict, Path]:
    """An environment with the stand-in `pulumi` first on PATH, and the file its calls are recorded in."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / "pulumi-calls.log"
    (bin_dir / "pulumi").write_text(FAKE_PULUMI.format(log=log))
    (bin_dir / "pulumi").chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "FAKE_PULUMI_UP": up}, log


def test_with_the_pulumi_cli_each_change_is_deployed_through_the_automation_api(fleet, capsys, tmp_path, monkeypatch):
    path, lb, cur, cand = fleet(env="staging", max_latency_p95_ratio=2, max_ttft_p95_ratio=2)
    stack = ["--stack", str(path)]
    env, log = fake_pulumi(tmp_path, "ok")
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    code, rep, err = run_cli(capsys, "rollout", "start", *stack)
    assert code == 0 and rep["awaiting_deploy"] is None and rep["step"] == 0 and rep["weight"] == 0, (rep, err)
    assert "Resources: 1 updated" in err  # the update's own output, on standard error
    lb.deploy()
    code, rep, err = run_cli(capsys, "rollout", "step", *stack, *gate_args(cur, cand))
    assert code == 0 and rep["awaiting_deploy"] is None and rep["weight"] == 5  # gated, deployed, done: no wait
    ups = [c for c in log.read_text().splitlines() if " up " in c]
    assert len(ups) == 2 and all(f"up --yes --skip-preview --config-file {path}" in c for c in ups)
    assert all("--stack alicloud-cn-hangzhou-staging-rollout" in c and "--show-secrets" not in c for c in ups)
    monkeypatch.setenv("FAKE_PULUMI_UP", "fail")
    lb.deploy()
    code, rep, err = run_cli(capsys, "rollout", "step", *stack, *gate_args(cur, cand))
    assert code == 1 and "QuotaExceeded" in err and "Traceback" not in err
    st = json.loads((path.parent / ".rollout-alicloud-cn-hangzhou-staging-rollout.json").read_text())
    assert st["step"] == 1 and st["in_progress"]["changes"] == [{"kind": "weight", "weight": 25}]
    monkeypatch.setenv("FAKE_PULUMI_UP", "ok")  # the next command makes the recorded change again and deploys it
    code, rep, err = run_cli(capsys, "rollout", "status", *stack)
    assert rep["in_progress"] and rep["weight"] == 5
    code, rep, err = run_cli(capsys, "rollout", "step", *stack, *gate_args(cur, cand))
    assert code == 0 and "resuming `rollout step`" in err
    assert rep["weight"] == 25 and "gates" not in rep  # the failed step made, and no further one


def test_a_crash_inside_the_automation_apis_pulumi_up_resumes(fleet, capsys, tmp_path):
    path, lb, cur, cand = fleet(env="staging", max_latency_p95_ratio=2, max_ttft_p95_ratio=2)
    stack = ["--stack", str(path)]
    assert run_cli(capsys, "rollout", "start", *stack)[0] == 0
    lb.deploy()
    extra, log = fake_pulumi(tmp_path, "hang")
    env = os.environ.copy() | extra
    proc = _spawn_step(path, cur, cand, env)
    try:
        _wait_for(lambda: log.exists() and " up " in log.read_text(), "pulumi up")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # crash in the middle of the deploy
        proc.wait()
    calls = log.read_text().splitlines()
    assert calls[0] == "version"  # gpufleet's own check of the CLI, before anything is changed (the SDK asks again)
    calls = [c for c in calls if c != "version"]
    assert "stack select --stack alicloud-cn-hangzhou-staging-rollout" in calls[0]
    assert f"up --yes --skip-preview --config-file {path}" in calls[1] and "--show-secrets" not in calls[1]
    assert fleet_of(path)["rollout"]["candidate_weight"] == 5  # written before the deploy
    st = json.loads((path.parent / ".rollout-alicloud-cn-hangzhou-staging-rollout.json").read_text())
    assert st["in_progress"]["changes"] == [{"kind": "weight", "weight": 5}] and st["step"] == 0
    # without the CLI now: the recorded step is made again (the same file) and its deploy printed
    code, rep, err = run_cli(capsys, "rollout", "step", *stack, *gate_args(cur, cand))
    assert code == 0 and "resuming `rollout step`" in err
    assert rep["awaiting_deploy"]["change"] == {"kind": "weight", "weight": 5}
    lb.deploy()
    code, rep, _ = run_cli(capsys, "rollout", "status", *stack)
    assert rep["weight"] == 0 and rep["awaiting_deploy"]  # until the next step takes the deploy as done


@pytest.mark.parametrize("names", ["0.33.0", "0.10.0-v0"])
def test_a_candidate_with_a_long_queue_and_full_kv_cache_fails_those_gates(fleet, capsys, names):
    cand_b = group(CANDIDATE_MODEL, max_num_seqs=1, kv_per_seq=0.97, metric_names=names, first_token_s=0.02)
    path, lb, cur, cand = fleet(env="staging", candidate=cand_b, max_latency_p95_ratio=100, max_ttft_p95_ratio=100)
    stack = ["--stack", str(path)]
    assert run_cli(capsys, "rollout", "start", *stack)[0] == 0
    code, rep, _ = run_cli(capsys, "rollout", "step", *stack, *gate_args(cur, cand, "--concurrency", "8"))
    assert code == 1
    g = by_name(rep)
    assert not g["queue_per_node"]["passed"] and g["queue_per_node"]["measured"] > 4 and g["queue_per_node"]["threshold"] == 4
    assert not g["kv_cache_percent"]["passed"] and g["kv_cache_percent"]["measured"] == 97.0


KEY = "sk-rollout-3b5d5c3712955042212316173ccf37be"


def test_the_key_is_read_from_the_environment_or_a_file_and_never_shown(fleet, capsys, monkeypatch, tmp_path):
    path, lb, cur, cand = fleet(
        env="staging",
        current=group(CURRENT_MODEL, api_key=KEY),
        candidate=group(CANDIDATE_MODEL, api_key=KEY),  # echoes a wrong Authorization header back, like a careless server
        max_latency_p95_ratio=2,
        max_ttft_p95_ratio=2,
    )
    stack = ["--stack", str(path)]
    assert run_cli(capsys, "rollout", "start", *stack)[0] == 0
    state_file = path.parent / ".rollout-alicloud-cn-hangzhou-staging-rollout.json"
    before = (state_file.read_text(), path.read_text())

    wrong = "sk-wrong-00000000000000000000000000000000"
    monkeypatch.setenv("ROLLOUT_KEY", wrong)
    code, rep, err = run_cli(capsys, "rollout", "step", *stack, *gate_args(cur, cand, "--api-key-env", "ROLLOUT_KEY"))
    assert code == 2 and rep is None
    errors = [line for line in err.splitlines() if line.startswith("error ")]
    assert errors == [
        "error --api-key-env / --api-key-file: the current group refused the key (HTTP 401): give the fleet's key; "
        "nothing was changed"
    ]
    assert wrong not in err
    assert path.read_text() == before[1]  # a wrong key rolls nothing back
    assert state_file.read_text() == before[0]  # a refused step records nothing: the start's deploy is still awaited

    key_file = tmp_path / "key"
    key_file.write_text(KEY + "\n")
    code, rep, err = run_cli(capsys, "rollout", "step", *stack, *gate_args(cur, cand, "--api-key-file", str(key_file)))
    assert code == 0 and rep["result"] == "passed", (rep, err)
    monkeypatch.setenv("ROLLOUT_KEY", KEY)
    code, rep, err = run_cli(capsys, "rollout", "status", *stack)
    for text in (json.dumps(rep), err, state_file.read_text(), path.read_text()):
        assert KEY not in text


def _leaky(prompt: str) -> str:
    """A candidate that reflects the key in one answer (a model or middleware repeating a header or system prompt):
    once whole, and once where the report's 160-character cut would fall inside it."""
    text = default_answer(prompt)
    if "17 multiplied" not in prompt:
        return text
    text += f" key={KEY}"
    return text + " " + "y" * (150 - len(text) - 2) + " " + KEY  # the second starts at character 150


def test_a_key_the_server_echoes_in_an_answer_is_masked_in_the_state_file_report_and_status(fleet, capsys, monkeypatch, tmp_path):
    path, lb, cur, cand = fleet(
        env="staging",
        current=group(CURRENT_MODEL, api_key=KEY),
        candidate=group(CANDIDATE_MODEL, api_key=KEY, answer=_leaky),
        max_latency_p95_ratio=3,
        max_ttft_p95_ratio=3,
    )
    stack = ["--stack", str(path)]
    monkeypatch.setenv("ROLLOUT_KEY", KEY)
    assert run_cli(capsys, "rollout", "start", *stack)[0] == 0
    report = tmp_path / "step.json"
    code, _, err = run_cli(
        capsys, "rollout", "step", *stack, *gate_args(cur, cand, "--api-key-env", "ROLLOUT_KEY", "-o", str(report))
    )
    assert code == 0, err  # 1 of 10 answers changed: the gate passes at the default 0.9
    (changed,) = json.loads(report.read_text())["figures"]["answers"]["changed"]
    assert changed["id"] == "arithmetic" and changed["candidate"].count("***") == 2, changed
    table = tmp_path / "step.txt"
    main(["rollout", "status", *stack, "-o", str(table)])
    code, status, _ = run_cli(capsys, "rollout", "status", *stack)
    state = (path.parent / ".rollout-alicloud-cn-hangzhou-staging-rollout.json").read_text()
    for text in (report.read_text(), table.read_text(), json.dumps(status), state, err):
        assert KEY[:12] not in text  # neither the key nor the part of it a cut would keep
    assert "key=***" in table.read_text()


@pytest.mark.parametrize("mark", ["?", "#"], ids=["query", "fragment"])
def test_a_metrics_url_with_a_token_in_its_query_is_stored_and_shown_without_it(fleet, capsys, tmp_path, mark):
    """A Prometheus proxy or federation URL takes its token as ?access_token=: it was written to the state file and
    the report as given, and printed in the error when the endpoint failed. A token after # (the OAuth implicit
    flow's shape) is never sent, and was stored and printed whole (review finding 6)."""
    path, lb, cur, cand = fleet(env="staging", max_latency_p95_ratio=3, max_ttft_p95_ratio=3)
    stack = ["--stack", str(path)]
    assert run_cli(capsys, "rollout", "start", *stack)[0] == 0
    token = "SEKRET123Q-metrics-token"
    args = gate_args(cur, cand)
    args[args.index("--current-metrics-url") + 1] = f"{cur.url}/metrics{mark}access_token={token}"
    args[args.index("--candidate-metrics-url") + 1] = f"{cand.url}/metrics{mark}access_token={token}&match[]=vllm"
    report = tmp_path / "step.json"
    code, _, err = run_cli(capsys, "rollout", "step", *stack, *args, "-o", str(report))
    assert code == 0, err  # the request itself carries the query: the metrics were read
    figures = json.loads(report.read_text())["figures"]["traffic"]
    assert figures["current"]["metrics_url"] == f"{cur.url}/metrics{mark}***"
    assert figures["candidate"]["metrics_url"] == f"{cand.url}/metrics{mark}***"
    assert figures["candidate"]["kv_cache_percent_max"] > 0
    _, status, _ = run_cli(capsys, "rollout", "status", *stack)
    state = (path.parent / ".rollout-alicloud-cn-hangzhou-staging-rollout.json").read_text()
    for text in (report.read_text(), json.dumps(status), state, err):
        assert token not in text
    args[args.index("--candidate-metrics-url") + 1] = f"{cand.url}/no-metrics{mark}access_token={token}"
    code, _, err = run_cli(capsys, "rollout", "step", *stack, *args)
    assert code == 2 and f"--candidate-metrics-url: GET {cand.url}/no-metrics{mark}***: HTTP 404" in err, err
    assert token not in err


def test_an_unreachable_endpoint_is_bad_input_and_rolls_nothing_back(fleet, capsys):
    path, lb, cur, cand = fleet(env="staging")
    stack = ["--stack", str(path)]
    assert run_cli(capsys, "rollout", "start", *stack)[0] == 0
    before = path.read_text()
    args = gate_args(cur, cand)
    args[args.index("--candidate-url") + 1] = "http://127.0.0.1:9"
    code, rep, err = run_cli(capsys, "rollout", "step", *stack, *args)
    assert code == 2 and "--candidate-url: cannot reach http://127.0.0.1:9" in err and "Traceback" not in err
    assert path.read_text() == before
    args[args.index("--candidate-url") + 1] = cand.url
    args[args.index("--candidate-metrics-url") + 1] = f"{cand.url}/no-metrics-here"
    code, rep, err = run_cli(capsys, "rollout", "step", *stack, *args)
    assert code == 2 and f"--candidate-metrics-url: GET {cand.url}/no-metrics-here: HTTP 404" in err
    assert path.read_text() == before
    args[args.index("--candidate-metrics-url") + 1] = "http://user:secret@127.0.0.1:9/metrics"
    code, rep, err = run_cli(capsys, "rollout", "step", *stack, *args)
    assert code == 2 and "--candidate-metrics-url: has credentials in it" in err and "secret" not in err
    assert "--candidate-url: cannot reach" not in err  # options are checked before anything is measured
    code, rep, _ = run_cli(capsys, "rollout", "status", *stack)
    assert rep["history"] == [] and rep["status"] == "rolling"


def test_a_current_group_failing_every_request_judges_nothing_and_rolls_nothing_back(fleet, capsys):
    # both groups failing alike (a --timeout-s too short, a network to both) rolled the candidate back (exit 1): the
    # gates compare it with the current group, which gave nothing to compare with
    path, lb, cur, cand = fleet(env="staging", max_latency_p95_ratio=2, max_ttft_p95_ratio=2)
    stack = ["--stack", str(path)]
    assert run_cli(capsys, "rollout", "start", *stack)[0] == 0
    before = path.read_text()
    cur.behaviour.fail_every = 1
    code, rep, err = run_cli(capsys, "rollout", "step", *stack, *gate_args(cur, cand))
    assert code == 2 and rep is None and "Traceback" not in err
    assert f"--current-url: not one of 16 requests to the current group at {cur.url} succeeded (most: " in err
    assert "nothing was changed" in err
    assert path.read_text() == before
    code, rep, _ = run_cli(capsys, "rollout", "status", *stack)
    assert rep["history"] == [] and rep["status"] == "rolling"


def test_blue_green_goes_from_0_to_100_with_both_groups_at_full_size(fleet, capsys):
    path, lb, cur, cand = fleet(env="staging", max_latency_p95_ratio=2, max_ttft_p95_ratio=2)
    path.write_text(
        path.read_text()
        .replace("strategy: canary", "strategy: blue_green")
        .replace("steps: [0, 5, 25, 50, 100]", "steps: null")
        .replace("candidate_weight: 5 ", "candidate_weight: 0 ")
    )
    stack = ["--stack", str(path)]
    code, rep, _ = run_cli(capsys, "rollout", "start", *stack)
    assert code == 0 and rep["steps"] == [0, 100] and rep["strategy"] == "blue_green"
    lb.deploy()
    code, rep, _ = run_cli(capsys, "rollout", "step", *stack, *gate_args(cur, cand))
    assert code == 0 and rep["to"] == "100 %" and fleet_of(path)["rollout"]["candidate_weight"] == 100
    lb.deploy()
    spec = load_fleet(loader.use_stack_file(path), sizing=False).spec
    assert steps.candidate_replicas(spec) == spec.replicas == steps.current_replicas(spec)  # both at full size
    assert share_through_lb(lb, cur, cand) == 1.0
    code, rep, _ = run_cli(capsys, "rollout", "promote", *stack, *gate_args(cur, cand))
    assert code == 0 and rep["result"] == "passed" and rep["awaiting_deploy"]["change"]["kind"] == "promote"
