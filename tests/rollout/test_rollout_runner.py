"""The runner's transitions on a copy of the example stack, without servers: the gates here are a given verdict (what
is checked is what the runner does with it: the stack file, the state file, the resume after an interruption)."""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from rollout_helpers import stack_copy

from gpufleet.errors import Problem, UserError
from gpufleet.rollout import runner
from gpufleet.rollout.gates import Gate
from gpufleet.stacks import loader
from gpufleet.validation import load_fleet

ROOT = Path(__file__).resolve().parents[2]


def passing():
    return [Gate("health", 200, 200, "==", True, "ok")], {}


def context(path: Path, environ: dict | None = None, say=None, now=None) -> runner.Context:
    spec = load_fleet(loader.use_stack_file(path), sizing=False).spec
    return runner.Context(
        stack=path.name[len("Pulumi.") : -len(".yaml")],
        stack_file=path,
        project=ROOT,
        rollout=spec.rollout,
        environ=environ if environ is not None else {"PATH": ""},
        say=say or (lambda text: None),
        now=now or (lambda: datetime(2026, 12, 5, 13, 0, 0, 123456, tzinfo=UTC)),
    )


def rollout_of(path: Path) -> dict:
    return yaml.safe_load(path.read_text())["config"]["gpufleet:fleet"].get("rollout")


def test_an_interrupted_promote_keeps_the_retire_after_it_wrote(tmp_path):
    path = stack_copy(tmp_path, "staging")
    runner.start(context(path))
    for _ in range(4):
        runner.step(context(path), passing)
    assert rollout_of(path)["candidate_weight"] == 100
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "pulumi").write_text('#!/bin/sh\n[ "$1" = version ] && echo v3.205.0\nexit 0\n')
    (fake / "pulumi").chmod(0o755)

    def interrupt(text: str) -> None:  # Ctrl-C right after the stack file is written, before its pulumi up
        if text.startswith("pulumi up"):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        runner.promote(context(path, {"PATH": str(fake)}, interrupt), passing)
    written = rollout_of(path)["retire_after"]
    assert written == "2026-12-06T13:00:00+00:00"  # now + keep_previous_hours (24), whole seconds
    assert not (tmp_path / ".rollout-alicloud-cn-hangzhou-staging-rollout.lock").exists()  # the lock went with it
    later = context(path, now=lambda: datetime(2026, 12, 5, 15, 0, tzinfo=UTC))
    rep = runner.promote(later, passing)
    assert "resuming `rollout promote`" in " ".join(rep["notes"]) and rep["awaiting_deploy"]["change"]["kind"] == "promote"
    assert rollout_of(path)["retire_after"] == written  # not moved by the resume
    state = tmp_path / ".rollout-alicloud-cn-hangzhou-staging-rollout.json"
    awaited = state.read_bytes()
    with pytest.raises(UserError, match="kept until 2026-12-06T13:00:00"):
        runner.finish(later)  # inside the window: refused before the promote's deploy is taken as done
    assert state.read_bytes() == awaited  # a refused command changes nothing (the deploy is still awaited)
    runner.status(later)
    rep = runner.promote(later, passing)  # the next command takes the promote's deploy as done
    st = json.loads(state.read_text())
    assert (st["status"], st["retire_after"], st["awaiting_deploy"]) == ("promoted", written, None), rep
    with pytest.raises(UserError, match="kept until 2026-12-06T13:00:00"):
        runner.finish(later)
    after = context(path, now=lambda: datetime(2026, 12, 6, 13, 0, 1, tzinfo=UTC))
    assert runner.finish(after)["awaiting_deploy"]["change"]["kind"] == "finish"
    assert rollout_of(path) is None
    assert runner.finish(after)["status"] == "finished"  # a second finish after the deploy: done, not an error


@pytest.mark.parametrize(
    "edit",
    [
        lambda text: text.replace("keep_previous_hours: 24", "keep_previous_hours:\t24"),  # libyaml reads it
        lambda text: "\ufeff" + text,  # a BOM, as an editor on Windows saves it
    ],
    ids=["tab-after-colon", "bom"],
)
def test_a_stack_file_the_loader_reads_is_rewritten_as_the_loader_reads_it(tmp_path, edit):
    """The step writer parsed the file with PyYAML's own scanner: a tab after `key:` or a BOM, both taken by the loader,
    were a ScannerError traceback in rollout start."""
    path = stack_copy(tmp_path, "staging")
    path.write_text(edit(path.read_text()), encoding="utf-8")
    runner.start(context(path))
    from gpufleet import inputs

    assert inputs.load_yaml(path)["config"]["gpufleet:fleet"]["rollout"]["candidate_weight"] == 0


def test_a_stack_file_that_cannot_take_the_change_is_refused_before_anything_is_recorded(tmp_path):
    """The state file recorded the transition first: a refused write left `rollout start` half made (the next command
    resumed it and failed again)."""
    path = stack_copy(tmp_path, "staging")
    path.write_text(path.read_text().replace("candidate_weight: 5 ", "candidate_weight: &w 5 "))
    before, text = sorted(os.listdir(tmp_path)), path.read_text()
    with pytest.raises(UserError, match="candidate_weight is not a plain one-line value"):
        runner.start(context(path))
    assert sorted(os.listdir(tmp_path)) == before and path.read_text() == text


def test_a_damaged_state_file_is_refused_naming_it_and_leaves_no_lock(tmp_path):
    path = stack_copy(tmp_path, "staging")
    state = tmp_path / ".rollout-alicloud-cn-hangzhou-staging-rollout.json"
    state.write_text('{"version": 1, "stack": "x"')
    with pytest.raises(UserError, match="not valid JSON"):
        runner.step(context(path), passing)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == [state.name]


@pytest.mark.parametrize("command", ["status", "abort", "finish"])
def test_a_state_file_nested_too_deep_is_bad_input_of_every_rollout_command(tmp_path, capsys, command):
    """JSON nested past the decoder's limit in the state file was a RecursionError traceback (exit 1) of every rollout
    command, `abort` included."""
    from gpufleet.cli import main

    path = stack_copy(tmp_path, "staging")
    state = tmp_path / ".rollout-alicloud-cn-hangzhou-staging-rollout.json"
    state.write_text("[" * 5000 + "]" * 5000)
    files = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(SystemExit) as exc:
        main(["rollout", command, "--stack", str(path)])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "Traceback" not in err, err
    assert f"{state}: nested deeper than 64 levels (a rollout's state file: restore it" in err, err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == files  # no lock left behind, nothing changed


def test_nothing_is_written_for_a_command_refused_before_any_rollout(tmp_path):
    path = stack_copy(tmp_path, "staging")
    before = sorted(os.listdir(tmp_path))
    for call in (lambda c: runner.step(c, passing), lambda c: runner.promote(c, passing), runner.abort, runner.finish):
        with pytest.raises(UserError, match="no rollout in progress"):
            call(context(path))
    assert sorted(os.listdir(tmp_path)) == before


def test_promote_before_the_last_step_is_refused(tmp_path):
    path = stack_copy(tmp_path, "staging")
    runner.start(context(path))
    runner.step(context(path), passing)
    state = tmp_path / ".rollout-alicloud-cn-hangzhou-staging-rollout.json"
    before = state.read_bytes()
    said: list[str] = []
    with pytest.raises(UserError, match="at 5 %, not the last step"):
        runner.promote(context(path, say=said.append), passing)
    assert state.read_bytes() == before and not said  # the 5 % deploy is still awaited: refused, nothing changed
    runner.step(context(path), passing)
    st = json.loads(state.read_text())
    assert st["weight"] == 5 and st["awaiting_deploy"]["change"]["weight"] == 25  # 5 % confirmed by the step


def test_promote_at_the_step_before_the_last_is_refused(tmp_path):
    """docs/rollout.md: canary steps 0 -> 5 -> 25 -> 50 -> 100; `rollout promote` runs at 100 %, and a `promote`
    before the last step is refused (exit 2, nothing changed). At 50 %, the step just before 100 %, too: the start
    and 3 steps leave the 50 % deploy awaited, which promote takes as done (as the test above's 5 %)."""
    path = stack_copy(tmp_path, "staging")
    runner.start(context(path))
    for _ in range(3):
        runner.step(context(path), passing)
    state = tmp_path / ".rollout-alicloud-cn-hangzhou-staging-rollout.json"
    st = json.loads(state.read_text())
    assert st["weight"] == 25 and st["awaiting_deploy"]["change"]["weight"] == 50
    before = state.read_bytes()
    with pytest.raises(UserError, match=r"at 50 %, not the last step \(100 %\)"):
        runner.promote(context(path), passing)
    assert state.read_bytes() == before


@pytest.mark.parametrize("command", ["step", "promote"])
@pytest.mark.parametrize("steps", [0, 1], ids=["start's deploy", "a step's deploy"])
def test_a_refused_gated_command_leaves_the_awaited_deploy_awaited(tmp_path, command, steps):
    """A `step` or `promote` refused (exit 2) took the awaited deploy as done first and saved it: the reminder that
    `pulumi up` was never run was gone (a promote typed by mistake, a mistyped --candidate-url), although the
    message said "nothing was changed"."""
    path = stack_copy(tmp_path, "staging")
    runner.start(context(path))
    for _ in range(steps):
        runner.step(context(path), passing)
    state = tmp_path / ".rollout-alicloud-cn-hangzhou-staging-rollout.json"
    before, stack_before = state.read_bytes(), path.read_bytes()

    def unreachable():
        raise UserError([Problem("--candidate-url", "", "cannot reach http://127.0.0.1:9; nothing was changed")])

    said: list[str] = []
    with pytest.raises(UserError, match="cannot reach|not the last step"):
        getattr(runner, command)(context(path, say=said.append), unreachable)
    assert state.read_bytes() == before and path.read_bytes() == stack_before and not said
    rep = runner.step(context(path, say=said.append), passing)  # the next step confirms it, as before
    assert "taking the deploy of" in said[0] and (rep["step"], rep["weight"]) == (steps, [0, 5][steps])


def test_a_rolled_back_candidate_must_be_given_a_size_before_starting_again(tmp_path):
    path = stack_copy(tmp_path, "staging")
    runner.start(context(path))
    runner.abort(context(path))  # weight already 0: only the nodes go
    assert runner.abort(context(path))["status"] == "aborted"
    assert rollout_of(path)["candidate"]["replicas"] == {"min": 0, "max": 8, "desired": 0}
    with pytest.raises(UserError, match="is 0 nodes"):
        runner.start(context(path))


@pytest.mark.parametrize(
    "edits, said",
    [
        ([("candidate_weight: 5 ", "candidate_weight: 25 ")], "candidate_weight: is 25 %, but the rollout recorded"),
        (
            [("phase: rolling", "phase: promoted"), ("candidate_weight: 5 ", "candidate_weight: 100 ")],
            "phase: is promoted, but the rollout recorded",
        ),
    ],
    ids=["weight", "phase"],
)
def test_a_stack_file_edited_away_from_the_recorded_step_is_refused_before_measuring(tmp_path, edits, said):
    """The stack file's weight changed by hand between two commands was not noticed: `step` measured the gates "before"
    the next step of the state file and wrote it over the hand edit (a canary at 25 % by hand, reported at 5 %)."""
    path = stack_copy(tmp_path, "staging")
    runner.start(context(path))
    runner.step(context(path), passing)  # the stack file at 5 %, its deploy awaited
    text = edited = path.read_text()
    for old, new in edits:
        assert old in edited
        edited = edited.replace(old, new)
    path.write_text(edited)
    state_file = tmp_path / ".rollout-alicloud-cn-hangzhou-staging-rollout.json"

    def measured():
        raise AssertionError("measured the gates of a stack file that is not where the rollout is")

    before = state_file.read_bytes()
    for call in (runner.step, runner.promote):
        with pytest.raises(UserError, match=f"rollout.{said}.* is rolling at 5 %.*set it back"):
            call(context(path), measured)  # refused: the 5 % deploy stays awaited
        assert state_file.read_bytes() == before
    path.write_text(text)
    runner.step(context(path), passing)
    assert rollout_of(path)["candidate_weight"] == 25  # set back: the rollout goes on


@pytest.mark.parametrize("steps, weight", [(0, 0), (1, 5)], ids=["start's deploy", "a step's deploy"])
def test_finish_of_a_rolling_rollout_with_a_deploy_awaited_is_refused_and_changes_nothing(tmp_path, steps, weight):
    """`finish` while a step's deploy was awaited took the deploy as done and ended with exit 0, as if it had finished;
    then it was refused (exit 2) but still took the deploy as done first: the reminder that `pulumi up` was never run
    was gone, and the next `step` measured a candidate group that did not exist."""
    path = stack_copy(tmp_path, "staging")
    runner.start(context(path))
    for _ in range(steps):
        runner.step(context(path), passing)  # 5 %, its deploy awaited
    state = tmp_path / ".rollout-alicloud-cn-hangzhou-staging-rollout.json"
    before, stack_before = state.read_bytes(), path.read_bytes()
    said: list[str] = []
    with pytest.raises(UserError, match="status: is rolling: `rollout finish` needs promoted or finished"):
        runner.finish(context(path, say=said.append))
    assert state.read_bytes() == before and path.read_bytes() == stack_before and not said
    st = json.loads(state.read_text())
    assert st["status"] == "rolling" and st["awaiting_deploy"]["change"]["weight"] == weight  # still awaited
    assert rollout_of(path)["candidate_weight"] == weight


@pytest.mark.parametrize(
    ("command", "version", "fix"),
    [("start", "2.0.0", "upgrade it"), ("abort", "2.0.0", "upgrade it"), ("start", "4.1.0", "install a 3.x CLI")],
)
def test_a_pulumi_cli_the_automation_api_will_not_drive_is_refused_before_the_stack_file_changes(
    tmp_path, monkeypatch, capsys, command, version, fix
):
    """A `pulumi` on PATH older than the Automation API's minimum ended `rollout start` in a traceback (exit 1) from
    InvalidVersionError, with the stack file already at weight 0 and the state left in progress."""
    from gpufleet.cli import main

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "pulumi").write_text(f'#!/bin/sh\ncase "$*" in version) echo v{version} ;; *) exit 99 ;; esac\n')
    (bin_dir / "pulumi").chmod(0o755)
    path = stack_copy(tmp_path, "staging")
    if command == "abort":
        runner.start(context(path))  # without the CLI: the 0 % deploy awaited
    files = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK", raising=False)
    with pytest.raises(SystemExit) as exc:
        main(["rollout", command, "--stack", str(path)])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "Traceback" not in err, err
    assert "version: the Pulumi CLI on PATH" in err and "3.1.0" in err and version in err and fix in err, err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == files  # nothing changed


def test_an_abort_refused_for_a_rollout_section_removed_by_hand_drops_nothing_and_says_the_way_out(tmp_path):
    """With the `rollout:` section deleted by hand, `abort` said it dropped the unfinished step (it had not: the
    state was not saved), then refused with no fix, and every other command refused too."""
    path = stack_copy(tmp_path, "staging")
    runner.start(context(path))
    runner.step(context(path), passing)  # the stack file at 5 %, its deploy awaited
    doc = yaml.safe_load(path.read_text())
    del doc["config"]["gpufleet:fleet"]["rollout"]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    state = tmp_path / ".rollout-alicloud-cn-hangzhou-staging-rollout.json"
    before, stack_before = state.read_bytes(), path.read_bytes()
    said: list[str] = []
    with pytest.raises(UserError, match=f"no gpufleet:fleet rollout section: .*remove {re.escape(str(state))} to forget"):
        runner.abort(context(path, say=said.append))
    assert not said and state.read_bytes() == before and path.read_bytes() == stack_before


def test_the_report_after_a_rollbacks_weight_0_is_deployed_says_0_percent(tmp_path):
    """After the rollback's weight 0 was confirmed deployed, `abort` and `status` said "candidate at 5 %" (the state's
    step moves only when the whole rollback ends), against the `declared:` line's weight 0."""
    path = stack_copy(tmp_path, "staging")
    runner.start(context(path))
    runner.step(context(path), passing)  # 5 %, awaited

    def failing():
        return [Gate("error_rate", 0.5, 0.01, "<=", False, "half failed")], {}

    rep = runner.step(context(path), failing)  # confirms 5 %, the gate fails: weight 0 written, awaited
    assert (rep["weight"], rep["awaiting_deploy"]["change"]) == (5, {"kind": "weight", "weight": 0})
    rep = runner.abort(context(path))  # confirms weight 0, writes the 0-node rollback
    assert rep["awaiting_deploy"]["change"]["kind"] == "rollback" and rep["weight"] == 0, rep
    assert runner.status(context(path))["weight"] == 0
    assert rollout_of(path)["candidate_weight"] == 0


def test_the_hint_after_a_promote_names_finish_not_a_step_that_needs_urls(tmp_path):
    """After `promote` (no Pulumi CLI) the hint was `rollout step --current-url URL --candidate-url URL ...`: a step
    that demands two group URLs it never measures; `finish` is what continues a promote."""
    from rich.console import Console

    from gpufleet.cli.rollout import _draw

    path = stack_copy(tmp_path, "staging")
    runner.start(context(path))
    for _ in range(4):
        runner.step(context(path), passing)
    rep = runner.promote(context(path), passing)
    assert rep["awaiting_deploy"]["change"]["kind"] == "promote"
    console = Console(record=True, width=400)
    _draw(rep | {"declared": []})(console)
    text = console.export_text()
    assert f"then `gpufleet rollout finish --stack {path}` after the stack file's rollout.retire_after" in text, text
    assert "--current-url URL" not in text


def test_gate_load_options_are_bounded_and_a_load_cut_by_time_says_so(tmp_path, capsys, monkeypatch):
    """`--requests 99999999999999999999999` and `--max-tokens 999999999999` were accepted, and the load stopped
    starting requests after a hidden max(--timeout-s, 60) s: the gate judged 5554 requests while "measuring:" said the
    number asked. The bounds refuse (exit 2, nothing written), the limit is --max-duration-s, and a cut load says so."""
    from fake_openai import FakeServer
    from rollout_helpers import CANDIDATE_MODEL, CURRENT_MODEL, group

    from gpufleet.cli import main

    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no Pulumi CLI: deploys are printed
    path = stack_copy(tmp_path, "staging", max_latency_p95_ratio=5, max_ttft_p95_ratio=5)
    with FakeServer(group(CURRENT_MODEL)) as cur, FakeServer(group(CANDIDATE_MODEL)) as cand:
        urls = [
            "--current-url", cur.url, "--candidate-url", cand.url,
            "--current-metrics-url", f"{cur.url}/metrics", "--candidate-metrics-url", f"{cand.url}/metrics",
        ]  # fmt: skip
        main(["rollout", "start", "--stack", str(path)])
        capsys.readouterr()
        files = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
        bad = ["--requests", "99999999999999999999999", "--max-tokens", "999999999999", "--max-duration-s", "0"]
        with pytest.raises(SystemExit) as exc:
            main(["rollout", "step", "--stack", str(path), *urls, *bad])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and "Traceback" not in err, err
        assert "--requests: 99999999999999999999999 is above 100000" in err and "--max-tokens: 999999999999 is above" in err
        assert "--max-duration-s: must be a positive number of seconds, at most 3600" in err, err
        assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == files
        cut = ["--requests", "100000", "--max-duration-s", "1", "--timeout-s", "1", "--json"]
        main(["rollout", "step", "--stack", str(path), *urls, *cut])
    out = capsys.readouterr()
    sent = json.loads(out.out)["figures"]["traffic"]["current"]["requests"]
    assert 0 < sent < 100000, sent
    assert "(none started after 1 s)" in out.err and "the load stopped at --max-duration-s 1 s" in out.err, out.err
    assert f"{sent} sent to the current group" in out.err, out.err


# ---- the candidate checked as `gpufleet preview` checks it ---------------------------------------------------------

A_14B = ("name: Qwen/Qwen3-8B", "name: Qwen/Qwen2.5-14B-Instruct")  # 27.5 GiB of weights: no KV cache left on an A10
MISSPELT_FLAG = (
    "        label: v2",
    "        label: v2\n"
    "        serving:\n"
    "          port: 8000\n"
    "          dtype: bfloat16\n"
    "          max_model_len: 8192\n"
    "          gpu_memory_utilization: 0.9\n"
    "          max_num_seqs: 32\n"
    "          max_num_batched_tokens: 8192\n"
    "          api_key_secret: gpufleet-prod-vllm-api-key\n"
    "          extra_args: {enable_prefix_cachingg: true}",
)
CHECKS_SAY = {
    "does not fit": "fleet.rollout.candidate.serving: Qwen/Qwen2.5-14B-Instruct does not fit 1x A10 as configured",
    "misspelt flag": "fleet.rollout.candidate.serving: --enable-prefix-cachingg is not a vLLM 0.33.0 engine argument "
    "(did you mean '--enable-prefix-caching'?)",
}


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))


def cli(capsys, *argv: str) -> tuple[int, str]:
    """`gpufleet ARGV`: (exit code, standard error)."""
    from gpufleet.cli import main

    try:
        main(list(argv))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, capsys.readouterr().err


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


@pytest.mark.parametrize("change, said", [(A_14B, "does not fit"), (MISSPELT_FLAG, "misspelt flag")], ids=list(CHECKS_SAY))
def test_rollout_start_refuses_a_candidate_that_preview_refuses_and_writes_nothing(tmp_path, capsys, monkeypatch, change, said):
    """`rollout start` loaded the stack without the sizing checks: a candidate that does not fit the GPU, or a vLLM flag
    the pinned vLLM does not know, was refused by `preview` (exit 2) but started (exit 0, the stack file at weight 0,
    `pulumi up` printed)."""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no Pulumi CLI: a start would print the deploy, not run it
    path = stack_copy(tmp_path, "staging")
    edit(path, *change)
    files = files_of(tmp_path)
    code, preview_err = cli(capsys, "preview", "--stack", str(path))
    assert code == 2 and CHECKS_SAY[said] in preview_err, preview_err
    code, err = cli(capsys, "rollout", "start", "--stack", str(path))
    assert code == 2 and "Traceback" not in err, err
    assert err.splitlines() == preview_err.splitlines()  # the same problems, in the same words
    assert files_of(tmp_path) == files  # no state file, no lock, the stack file as it was


def test_every_command_that_writes_refuses_a_candidate_edited_into_one_that_does_not_fit(tmp_path, capsys, monkeypatch):
    """A candidate changed by hand between two commands (its model, its flags) is checked again by each command that
    writes the stack file: refused before the gates are measured or anything is written, the deploy awaited kept
    awaited. `abort` too: the program that deploys its rollback refuses that stack file (as `preview` does)."""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    path = stack_copy(tmp_path, "staging")
    runner.start(context(path))  # 0 %, its deploy awaited
    good = path.read_text()
    edit(path, *A_14B)
    files = files_of(tmp_path)
    urls = ["--current-url", "http://127.0.0.1:9", "--candidate-url", "http://127.0.0.2:10"]
    for argv in (["step", *urls], ["promote", *urls], ["finish", "--force"], ["abort"]):
        code, err = cli(capsys, "rollout", *argv, "--stack", str(path))
        assert code == 2 and CHECKS_SAY["does not fit"] in err and "measuring" not in err, (argv, err)
        assert files_of(tmp_path) == files, argv
    assert cli(capsys, "preview", "--stack", str(path))[0] == 2  # as the program refuses it: an abort's `pulumi up` would fail
    path.write_text(good)  # the candidate put back: the abort goes through
    code, err = cli(capsys, "rollout", "abort", "--stack", str(path))
    assert code == 0, err
    assert rollout_of(path)["candidate"]["replicas"] == {"min": 0, "max": 8, "desired": 0}


def test_finish_refuses_a_promoted_candidate_that_does_not_fit_now(tmp_path, capsys, monkeypatch):
    """`finish` makes the candidate the fleet: a candidate that could not serve is not made the fleet."""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    path = stack_copy(tmp_path, "staging")
    runner.start(context(path))
    for _ in range(4):
        runner.step(context(path), passing)
    runner.promote(context(path), passing)  # promoted, its deploy awaited
    edit(path, *A_14B)
    files = files_of(tmp_path)
    code, err = cli(capsys, "rollout", "finish", "--force", "--stack", str(path))
    assert code == 2 and CHECKS_SAY["does not fit"] in err, err
    assert files_of(tmp_path) == files and rollout_of(path)["phase"] == "promoted"


# --- a write that fails inside a transition (a full disk) ---------------------------------------------------------


def full_disk_on(monkeypatch, wanted) -> list[str]:
    """files' temporary write fails with ENOSPC for the writes `wanted(name, count of that name so far)` picks (the
    stack file's, the state file's); every temporary write's file name is recorded."""
    import errno

    from gpufleet import files

    real, names = files._write_temp, []

    def full_disk(folder, name, data, mode):
        names.append(name)
        if wanted(name, names.count(name)):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(folder, name, data, mode)

    monkeypatch.setattr(files, "_write_temp", full_disk)
    return names


def test_a_start_whose_stack_file_cannot_be_written_records_nothing(tmp_path, capsys, monkeypatch):
    """`rollout start` recorded the rollout (a new state file saying rolling), then failed to write the stack file and
    said 'the old file is unchanged' with exit 2 (bad input, nothing done): a rollout the user was told never started
    was left to find and abort. Now the record this start made is taken back: exit 2, no file but the stack file as it
    was; once the disk has room the same start goes through."""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no Pulumi CLI: the start prints the deploy
    path = stack_copy(tmp_path, "staging")
    before = files_of(tmp_path)
    names = full_disk_on(monkeypatch, lambda name, n: name == path.name)
    code, err = cli(capsys, "rollout", "start", "--stack", str(path))
    assert code == 2 and "Traceback" not in err, err
    assert f"error {path}: cannot write: No space left on device; the old file is unchanged" in err, err
    assert err.count(str(path)) == 1 + err.count(f"--stack {path}"), err  # the stack file named once, not twice
    assert "`rollout start` made no change" in err, err
    assert files_of(tmp_path) == before  # no state file, no lock, the stack file as it was
    assert names[0].startswith(".rollout-") and path.name in names  # the state was recorded first (crash recovery)
    monkeypatch.undo()
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    code, err = cli(capsys, "rollout", "start", "--stack", str(path))
    assert code == 0 and rollout_of(path)["candidate_weight"] == 0, err


def test_a_restart_whose_stack_file_cannot_be_written_puts_the_old_state_back(tmp_path, monkeypatch):
    """A start over a rollout that ended (here aborted) replaced its state file: the old one is put back."""
    path = stack_copy(tmp_path, "staging")
    runner.start(context(path))
    runner.abort(context(path))
    runner.abort(context(path))  # its deploys taken as done: aborted
    state = tmp_path / ".rollout-alicloud-cn-hangzhou-staging-rollout.json"
    text = rollout_of(path)
    assert (text["candidate_weight"], text["candidate"]["replicas"]) == (0, {"min": 0, "max": 8, "desired": 0})
    edit(path, "replicas: {min: 0, max: 8, desired: 0}", "replicas: {min: 1, max: 8, desired: 1}")  # its size again
    edit(path, "candidate_weight: 0", "candidate_weight: 5")  # and a weight the start sets back to 0: it writes
    old, stack_before = state.read_bytes(), path.read_bytes()
    assert json.loads(old)["status"] == "aborted"
    full_disk_on(monkeypatch, lambda name, n: name == path.name)
    with pytest.raises(UserError, match="made no change"):
        runner.start(context(path))
    assert state.read_bytes() == old and path.read_bytes() == stack_before


def test_a_step_whose_stack_file_cannot_be_written_is_not_made(tmp_path, monkeypatch):
    """A step whose gates passed records its measurement; the step itself, recorded then not written, is taken back."""
    path = stack_copy(tmp_path, "staging")
    runner.start(context(path))
    state = tmp_path / ".rollout-alicloud-cn-hangzhou-staging-rollout.json"
    stack_before = path.read_bytes()
    full_disk_on(monkeypatch, lambda name, n: name == path.name)
    with pytest.raises(UserError, match="`rollout step` made no change"):
        runner.step(context(path), passing)
    st = json.loads(state.read_text())
    assert (st["step"], st["in_progress"], st["awaiting_deploy"], len(st["history"])) == (0, None, None, 1)
    assert path.read_bytes() == stack_before
    monkeypatch.undo()
    rep = runner.step(context(path), passing)
    assert (rep["step"], rep["awaiting_deploy"]["change"]) == (0, {"kind": "weight", "weight": 5})


def test_a_rollback_that_cannot_be_written_stays_recorded_and_abort_makes_it(tmp_path, capsys, monkeypatch):
    """A failed gate's rollback is not taken back (the next step would measure again and could pass): it stays
    recorded, the command says so and how to go on, exit 1 (a gate failed); `rollout abort` makes it."""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    path = stack_copy(tmp_path, "staging")
    runner.start(context(path))
    runner.step(context(path), passing)  # 0 % confirmed, 5 % awaited
    stack_before = path.read_bytes()

    def failing():
        return [Gate("error_rate", 0.5, 0.01, "<=", False, "half failed")], {}

    full_disk_on(monkeypatch, lambda name, n: name == path.name)
    with pytest.raises(runner.Unfinished) as exc:
        runner.step(context(path), failing)
    said = str(exc.value)
    assert "cannot write: No space left on device" in said and "rollback" in said, said
    assert f"`gpufleet rollout abort --stack {path}`" in said, said
    assert path.read_bytes() == stack_before
    state = json.loads((tmp_path / ".rollout-alicloud-cn-hangzhou-staging-rollout.json").read_text())
    assert state["in_progress"]["then"]["status"] == "rolled_back"
    monkeypatch.undo()
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    code, err = cli(capsys, "rollout", "abort", "--stack", str(path))
    assert code == 0 and rollout_of(path)["candidate_weight"] == 0, err


def test_a_state_file_that_cannot_be_saved_after_the_stack_file_changed_says_the_start_is_recorded(tmp_path, capsys, monkeypatch):
    """The stack file written, the state's next save (the deploy awaited) fails: the stack file holds the change and
    the state records the start as in progress. Not exit 2 'the old file is unchanged': exit 1 saying what is
    recorded and the command that finishes it, which then does."""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    path = stack_copy(tmp_path, "staging")
    state = tmp_path / ".rollout-alicloud-cn-hangzhou-staging-rollout.json"
    full_disk_on(monkeypatch, lambda name, n: name == state.name and n == 2)
    code, err = cli(capsys, "rollout", "start", "--stack", str(path))
    assert code == 1 and "Traceback" not in err, err
    assert f"error {state}: cannot write: No space left on device" in err, err
    assert "`rollout start` is recorded" in err and f"`gpufleet rollout start --stack {path}`" in err, err
    assert rollout_of(path)["candidate_weight"] == 0
    assert json.loads(state.read_text())["in_progress"]["command"] == "start"
    monkeypatch.undo()
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    code, err = cli(capsys, "rollout", "start", "--stack", str(path))
    assert code == 0 and json.loads(state.read_text())["awaiting_deploy"]["change"] == {"kind": "weight", "weight": 0}, err


# --- a failed gate whose rollback cannot be recorded --------------------------------------------------------------


def failing():
    return [Gate("error_rate", 0.5, 0.01, "<=", False, "half failed")], {}


def state_writes_fail(monkeypatch, state: Path, wanted) -> list[bytes]:
    """The state file's temporary writes fail with ENOSPC when `wanted(data)` (the JSON to be written) says so; the
    data of every state write asked for is recorded."""
    import errno

    from gpufleet import files

    real, asked = files._write_temp, []

    def full_disk(folder, name, data, mode):
        if name == state.name:
            asked.append(data)
            if wanted(data):
                raise OSError(errno.ENOSPC, "No space left on device")
        return real(folder, name, data, mode)

    monkeypatch.setattr(files, "_write_temp", full_disk)
    return asked


def at_5_percent(tmp_path: Path) -> tuple[Path, Path]:
    """A staging rollout at 0 %, its step to 5 % awaited (no Pulumi CLI): (the stack file, the state file)."""
    path = stack_copy(tmp_path, "staging")
    runner.start(context(path))
    runner.step(context(path), passing)
    return path, tmp_path / ".rollout-alicloud-cn-hangzhou-staging-rollout.json"


def test_a_failed_gate_whose_rollback_cannot_be_recorded_is_exit_1_and_the_next_step_does_not_advance(tmp_path, monkeypatch):
    """The failed measurement was saved, then the rollback's record failed to save (a full disk): a plain UserError
    (exit 2, 'the old file is unchanged'), the state rolling with no rollback, and the next passing `rollout step`
    moved the candidate to 25 %. Now the failed gates and the rollback's record are one save; when that fails the
    failed gates are kept alone, the command ends Unfinished (exit 1) naming `rollout abort`, and `step` / `promote`
    refuse until the rollback is made."""
    path, state = at_5_percent(tmp_path)
    stack_before = path.read_bytes()
    asked = state_writes_fail(monkeypatch, state, lambda data: b'"rolled_back"' in data)
    with pytest.raises(runner.Unfinished) as exc:
        runner.step(context(path), failing)
    said = str(exc.value)
    assert "cannot write: No space left on device" in said and "error_rate 0.5" in said, said
    assert f"`gpufleet rollout abort --stack {path}` rolls back" in said, said
    assert exc.value.report["result"] == "failed" and exc.value.report["gates"][0]["name"] == "error_rate"
    # one save for the failed gates and the rollback (it failed), then the failed gates alone
    assert [b'"rolled_back"' in a for a in asked] == [True, False], asked
    st = json.loads(state.read_text())
    assert (st["status"], st["in_progress"], st["history"][-1]["result"]) == ("rolling", None, "failed")
    assert st["reason"].startswith("gate failed at 5 %: error_rate 0.5") and path.read_bytes() == stack_before
    monkeypatch.undo()
    kept = files_of(tmp_path)
    for command in (runner.step, runner.promote):
        with pytest.raises(UserError, match=r"no rollback is recorded: `gpufleet rollout abort --stack .*` makes that rollback"):
            command(context(path), passing)
        assert files_of(tmp_path) == kept  # refused before measuring: nothing changed, the deploy of 5 % still awaited
    rep = runner.abort(context(path))  # the rollback the gate called for: weight 0 first
    assert rep["reason"].startswith("gate failed at 5 %: error_rate 0.5"), rep["reason"]
    assert rollout_of(path)["candidate_weight"] == 0
    runner.abort(context(path))
    rep = runner.abort(context(path))
    assert rep["status"] == "rolled_back" and rollout_of(path)["candidate"]["replicas"]["desired"] == 0


def test_a_failed_gate_with_no_state_write_left_is_exit_1_naming_abort(tmp_path, monkeypatch):
    """Not even the failed gates can be saved: the state file is as it was, and the command still ends Unfinished
    (exit 1: a gate failed) naming `rollout abort`, not exit 2 'bad input, nothing done'."""
    path, state = at_5_percent(tmp_path)
    before = files_of(tmp_path)
    state_writes_fail(monkeypatch, state, lambda data: True)
    with pytest.raises(runner.Unfinished) as exc:
        runner.step(context(path), failing)
    said = str(exc.value)
    assert f"{state} is unchanged" in said and f"`gpufleet rollout abort --stack {path}` rolls back" in said, said
    assert files_of(tmp_path) == before


def test_a_state_file_with_a_failed_gate_and_no_rollback_refuses_step_and_promote(tmp_path):
    """A state file an earlier gpufleet left (the failed gates saved, their rollback's record not): `rollout step`
    measured again, passed and moved the candidate on. Now step and promote refuse before measuring; abort rolls back
    with the gate's reason."""
    path, state = at_5_percent(tmp_path)
    st = json.loads(state.read_text())
    entry = dict(st["history"][-1], result="failed", gates=[failing()[0][0].as_json()])
    st["history"].append(entry)
    state.write_text(json.dumps(st))
    kept = files_of(tmp_path)
    measured = []

    def measure():
        measured.append(1)
        return passing()

    for command in (runner.step, runner.promote):
        with pytest.raises(UserError) as exc:
            command(context(path), measure)
        (problem,) = exc.value.problems
        assert problem.file == str(state) and "error_rate 0.5 (must be <= 0.01: half failed)" in str(problem), problem
        assert files_of(tmp_path) == kept and measured == []
    rep = runner.abort(context(path), "seen in the report")
    assert rep["reason"] == (
        "gate failed at 0 %: error_rate 0.5 (must be <= 0.01: half failed); rolled back by `rollout abort`: seen in the report"
    )
    runner.abort(context(path))
    assert runner.abort(context(path))["status"] == "rolled_back"


def test_an_unfinished_step_prints_and_writes_its_gate_report(tmp_path, capsys, monkeypatch):
    """`rollout step` ending Unfinished (exit 1) printed only the error line: the gates it measured were neither shown
    nor written to -o. Now the report is printed (or written to -o) and the command exits 1."""
    from gpufleet.cli import rollout as cli_rollout

    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    path, state = at_5_percent(tmp_path)
    monkeypatch.setattr(cli_rollout, "_measure", lambda ctx, fleet, **options: failing)
    urls = ["--current-url", "http://127.0.0.1:9", "--candidate-url", "http://127.0.0.2:10"]
    out = tmp_path / "report.json"
    state_writes_fail(monkeypatch, state, lambda data: b'"rolled_back"' in data)
    code, err = cli(capsys, "rollout", "step", "--stack", str(path), *urls, "-o", str(out))
    assert code == 1 and "Traceback" not in err and "`gpufleet rollout abort --stack" in err, err
    report = json.loads(out.read_text())
    assert (report["result"], report["gates"][0]["name"], report["status"]) == ("failed", "error_rate", "rolling"), report
    assert report["to"] == "25 %" and report["reason"].startswith("gate failed at 5 %: error_rate 0.5"), report
    monkeypatch.undo()
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    code, err = cli(capsys, "rollout", "abort", "--stack", str(path))  # the rollback the gate called for, made
    assert code == 0 and rollout_of(path)["candidate_weight"] == 0, err


def test_an_unfinished_step_prints_its_table(tmp_path, capsys, monkeypatch):
    from gpufleet.cli import main
    from gpufleet.cli import rollout as cli_rollout

    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    path, state = at_5_percent(tmp_path)
    monkeypatch.setattr(cli_rollout, "_measure", lambda ctx, fleet, **options: failing)
    state_writes_fail(monkeypatch, state, lambda data: True)
    with pytest.raises(SystemExit) as exc:
        main(
            [
                "rollout",
                "step",
                "--stack",
                str(path),
                "--current-url",
                "http://127.0.0.1:9",
                "--candidate-url",
                "http://127.0.0.2:10",
            ]
        )
    captured = capsys.readouterr()
    assert exc.value.code == 1 and "gates before 25 %: failed" in captured.out and "error_rate" in captured.out, captured
    assert f"{state} is unchanged" in captured.err, captured.err


def test_a_passing_step_left_unfinished_writes_its_report_and_exits_1(tmp_path, capsys, monkeypatch):
    """Gates passed, the stack file moved to 25 %, then the state's save failed: exit 1 naming `rollout step`, and the
    gates measured are in -o (they were dropped)."""
    from gpufleet.cli import rollout as cli_rollout

    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    path, state = at_5_percent(tmp_path)
    monkeypatch.setattr(cli_rollout, "_measure", lambda ctx, fleet, **options: passing)
    out = tmp_path / "report.json"
    full_disk_on(monkeypatch, lambda name, n: name == state.name and n == 3)  # the save after the stack file's write
    argv = ["--current-url", "http://127.0.0.1:9", "--candidate-url", "http://127.0.0.2:10", "-o", str(out)]
    code, err = cli(capsys, "rollout", "step", "--stack", str(path), *argv)
    assert code == 1 and "`rollout step` is recorded" in err and "Traceback" not in err, err
    assert rollout_of(path)["candidate_weight"] == 25
    report = json.loads(out.read_text())
    assert (report["result"], report["to"], report["gates"][0]["name"]) == ("passed", "25 %", "health"), report
