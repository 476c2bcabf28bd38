"""gpufleet.rollout's parts on their own: the plan, the gate verdicts, the answer comparison, the metrics reading,
the state file and the operator lock, the deploy's command detection."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gpufleet.errors import UserError
from gpufleet.rollout import answers, deploy, gates, measure, plan, state
from gpufleet.rollout.plan import Change

T = gates.Thresholds(
    max_error_rate=0.01,
    max_latency_p95_ratio=1.25,
    max_ttft_p95_ratio=1.25,
    max_queue_per_node=4,
    max_kv_cache_percent=95,
    min_exact_match=0.9,
    min_similarity=0.8,
)


# ---- plan ------------------------------------------------------------------------------------------------


def test_default_steps_per_strategy_and_the_specs_own():
    assert plan.steps_of("canary", None) == (0, 5, 25, 50, 100)
    assert plan.steps_of("blue_green", []) == (0, 100)
    assert plan.steps_of("canary", [0, 10, 100]) == (0, 10, 100)
    assert plan.next_weight((0, 5, 25), 0) == 5 and plan.next_weight((0, 5, 25), 2) is None


def test_rollback_takes_the_traffic_away_before_the_nodes():
    assert plan.rollback_changes(25) == [Change("weight", 0), Change("rollback")]
    assert plan.rollback_changes(0) == [Change("rollback")]  # no traffic to take away
    assert Change.from_json(Change("weight", 5).as_json()) == Change("weight", 5)


# ---- gates -----------------------------------------------------------------------------------------------


def _side(**kw):
    base = {
        "requests": 40,
        "errors": 0,
        "error_rate": 0.0,
        "latency_p95_ms": 100.0,
        "ttft_p95_ms": 20.0,
        "queue_max": 1.0,
        "kv_cache_percent_max": 40.0,
        "top_errors": [],
        "metrics_error": None,
    }
    return base | kw


def _by_name(gs):
    return {g.name: g for g in gs}


# At its threshold a gate passes: docs/rollout.md's gate table (and gates.py's module doc) says each passes when the
# figure is <= its maximum (>= its minimum for the answers), so equal is a pass.
def test_every_traffic_gate_passes_at_its_threshold():
    # by hand: 1 failed of 100 = 0.01; 125 / 100 ms = 1.25; 25 / 20 ms = 1.25; 4 waiting; 95 % of the KV cache
    at = _side(
        requests=100,
        health_status=200,
        errors=1,
        error_rate=1 / 100,
        latency_p95_ms=125.0,
        ttft_p95_ms=25.0,
        queue_max=4.0,
        kv_cache_percent_max=95.0,
    )
    got = {g.name: g for g in gates.traffic_gates({"current": _side(requests=100), "candidate": at}, T)}
    assert {n: (g.measured, g.threshold) for n, g in got.items() if n != "health"} == {
        "error_rate": (0.01, 0.01),
        "latency_p95_ratio": (1.25, 1.25),
        "ttft_p95_ratio": (1.25, 1.25),
        "queue_per_node": (4.0, 4),
        "kv_cache_percent": (95.0, 95),
    }
    assert gates.failed(list(got.values())) == []


def test_a_figure_just_over_its_threshold_fails():
    over = _side(requests=100, health_status=200, errors=2, error_rate=2 / 100, queue_max=4.5, kv_cache_percent_max=95.5)
    bad = [g.name for g in gates.failed(gates.traffic_gates({"current": _side(requests=100), "candidate": over}, T))]
    assert bad == ["error_rate", "queue_per_node", "kv_cache_percent"]


def test_the_answer_gates_pass_at_their_minimum():
    # 9 of 10 prompts answered the same = 0.9; a mean similarity of 0.8
    comparison = {"prompts": 10, "changed": [{"id": "p10", "similarity": 0.0}], "exact_match_rate": 0.9, "mean_similarity": 0.8}
    assert [(g.name, g.passed) for g in gates.answer_gates(comparison, T)] == [
        ("answers_exact_match", True),
        ("answers_similarity", True),
    ]


def test_traffic_gates_pass_a_candidate_like_the_current_one():
    m = {"current": _side(), "candidate": _side(health_status=200, latency_p95_ms=120.0)}
    got = _by_name(gates.traffic_gates(m, T))
    assert all(g.passed for g in got.values()), got
    assert got["latency_p95_ratio"].measured == 1.2 and got["latency_p95_ratio"].threshold == 1.25


@pytest.mark.parametrize(
    ("change", "failing"),
    [
        ({"health_status": 503}, "health"),
        ({"health_status": None, "health_error": "GET x: ConnectError"}, "health"),
        ({"error_rate": 0.05, "errors": 2}, "error_rate"),
        ({"latency_p95_ms": 126.0}, "latency_p95_ratio"),
        ({"ttft_p95_ms": 26.0}, "ttft_p95_ratio"),
        ({"queue_max": 4.5}, "queue_per_node"),
        ({"kv_cache_percent_max": 96.0}, "kv_cache_percent"),
        ({"kv_cache_percent_max": None, "metrics_error": "GET m: HTTP 404"}, "kv_cache_percent"),
        ({"ttft_p95_ms": None}, "ttft_p95_ratio"),  # no successful request: no figure, so no pass
    ],
)
def test_each_traffic_gate_fails_on_its_own_figure(change, failing):
    m = {"current": _side(), "candidate": _side(health_status=200) | change}
    bad = [g.name for g in gates.failed(gates.traffic_gates(m, T))]
    assert bad == [failing]


def test_a_current_p95_of_zero_is_no_figure_for_the_ratio_and_its_gate_fails():
    """A ratio over a current p95 of 0 ms (loadstats rounds to 0.1 ms: a group answering in under 0.05 ms) has no value:
    gates.py's doc and docs/rollout.md say a gate without a figure fails; it must not divide by zero."""
    assert gates.ratio(25.0, 0.0) is None
    assert gates.ratio(0.0, 0.0) is None
    m = {"current": _side(ttft_p95_ms=0.0), "candidate": _side(health_status=200)}
    got = _by_name(gates.traffic_gates(m, T))
    assert (got["ttft_p95_ratio"].measured, got["ttft_p95_ratio"].passed) == (None, False)
    assert [g.name for g in gates.failed(list(got.values()))] == ["ttft_p95_ratio"]


def test_answer_gates_from_a_comparison():
    ps = answers.PromptSet((("a", "p1"), ("b", "p2"), ("c", "p3"), ("d", "p4")), 16, 0)
    same = answers.compare(ps, {"a": "x y", "b": "1", "c": "z", "d": "w"}, {"a": "x y ", "b": "1", "c": "z", "d": "w"})
    assert same["exact_match_rate"] == 1.0 and same["changed"] == []
    assert all(g.passed for g in gates.answer_gates(same, T))
    drift = answers.compare(
        ps,
        {"a": "one two three four five", "b": "1", "c": "z", "d": "w"},
        {"a": "one two three four six", "b": "2", "c": "z", "d": None},
    )
    assert drift["exact_match_rate"] == 0.25
    assert [c["id"] for c in drift["changed"]] == ["b", "d", "a"]  # lowest similarity first (ties by id)
    assert drift["changed"][2]["similarity"] == 0.8  # 2 x 4 matching tokens / 10 tokens
    assert drift["mean_similarity"] == 0.45  # (0.8 + 0 + 1 + 0) / 4: an unanswered prompt counts 0
    got = _by_name(gates.answer_gates(drift, T))
    assert not got["answers_exact_match"].passed and got["answers_exact_match"].measured == 0.25
    assert not got["answers_similarity"].passed and got["answers_similarity"].measured == 0.45
    assert got["answers_similarity"].detail == "mean over 4 prompts; lowest 0 (b)"


def test_similarity_is_the_token_sequence_ratio():
    assert answers.similarity("a b c d", "a b c d") == 1.0
    assert answers.similarity("a b c d", "a b x d") == 0.75
    assert answers.similarity("a b", "c d") == 0.0
    assert answers.similarity("", "") == 1.0


def test_the_default_prompts_ship_and_a_users_file_adds_to_them(tmp_path):
    default = answers.load()
    assert len(default.prompts) >= 8 and default.max_tokens > 0
    f = tmp_path / "mine.yaml"
    f.write_text("prompts:\n  - What is 2+2?\n  - {id: refund, prompt: Summarise our refund policy.}\n")
    mine = answers.load(f)
    assert mine.prompts[: len(default.prompts)] == default.prompts
    assert mine.prompts[-2:] == (("mine-1", "What is 2+2?"), ("refund", "Summarise our refund policy."))


def test_a_jsonl_prompts_file(tmp_path):
    f = tmp_path / "mine.jsonl"
    f.write_text('"plain"\n\n{"id": "q2", "prompt": "second"}\n')
    assert answers.load(f).prompts[-2:] == (("mine-1", "plain"), ("q2", "second"))
    f.write_text('{"id": \n')
    with pytest.raises(UserError, match=r"mine\.jsonl: line 1, column 8: not valid JSON"):
        answers.load(f)


@pytest.mark.parametrize(
    "line, says",
    [
        ("[" * 5000 + "]" * 5000, "line 2: nested deeper than 64 levels"),  # was a RecursionError traceback
        # the field and column too (review F8: the number and duplicate-key refusals named no place)
        ('{"id": "a", "id": "b", "prompt": "x"}', "line 2, column 13: id: duplicate key 'id'; keep one"),
        ('{"id": "a", "prompt": NaN}', "line 2, column 23: prompt: NaN is not a finite number"),
    ],
    ids=["deep", "duplicate-key", "nan"],
)
def test_a_jsonl_prompts_line_is_read_as_every_json_input(tmp_path, line, says):
    f = tmp_path / "mine.jsonl"
    f.write_text(f'"plain"\n{line}\n')
    with pytest.raises(UserError) as exc:
        answers.load(f)
    assert says in str(exc.value) and str(exc.value).startswith(f"{f}: line 2")


def test_a_bad_prompts_file_names_the_entry(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("- fine\n- 3\n- {id: x}\n")
    with pytest.raises(UserError) as exc:
        answers.load(f)
    assert [str(p) for p in exc.value.problems] == [
        f"{f}: prompts[1]: is not a prompt: give a non-empty string or {{id: NAME, prompt: TEXT}}",
        f"{f}: prompts[2]: is not a prompt: give a non-empty string or {{id: NAME, prompt: TEXT}}",
    ]
    with pytest.raises(UserError, match="used twice"):
        f.write_text("- {id: capital, prompt: again}\n")
        answers.load(f)


def test_a_key_a_prompts_file_does_not_read_is_refused(tmp_path):
    """`max_tokens:` in a user's file, or an `answer:` beside a prompt, was passed over without a word."""
    f = tmp_path / "mine.yaml"
    f.write_text("max_tokens: 512\nprompts:\n  - {id: q1, prompt: What is 2+2?, answer: '4'}\n")
    with pytest.raises(UserError) as exc:
        answers.load(f)
    assert [str(p) for p in exc.value.problems] == [
        f"{f}: max_tokens: unknown key: a prompt file holds `prompts:` only (max_tokens and seed are the shipped set's)",
        f"{f}: prompts[0].answer: unknown key: a prompt is {{id: NAME, prompt: TEXT}}",
    ]
    j = tmp_path / "mine.jsonl"
    j.write_text('{"id": "q1", "prompt": "x", "expected": "y"}\n')
    with pytest.raises(UserError, match=r"prompts\[0\]\.expected: unknown key"):
        answers.load(j)


def test_a_prompts_file_that_is_not_utf8_is_named(tmp_path):
    for name in ("mine.yaml", "mine.jsonl"):
        f = tmp_path / name
        f.write_bytes(b"- caf\xe9\n")
        with pytest.raises(UserError, match=rf"{name}:1:6: not UTF-8 text: byte 0xe9; save the file as UTF-8"):
            answers.load(f)
    with pytest.raises(UserError, match="is a folder, not a file"):
        answers.load(tmp_path)


@pytest.mark.parametrize(
    "content, says",
    [
        (b"\xffkey", "not UTF-8 text: byte 0xff"),  # was a UnicodeDecodeError traceback
        (b"k" * (64 * 1024 + 1), "larger than 64 KiB"),  # /dev/zero was read without end
        (None, "is a folder, not a file"),
    ],
    ids=["not-utf8", "oversized", "folder"],
)
def test_a_bad_api_key_file_is_bad_input_of_rollout_step(tmp_path, capsys, monkeypatch, content, says):
    from gpufleet.cli import main

    key = tmp_path / "key"
    key.mkdir() if content is None else key.write_bytes(content)
    stack = str(Path(__file__).parents[2] / "examples" / "Pulumi.alicloud-cn-hangzhou-prod-rollout.yaml")
    argv = ["rollout", "step", "--stack", stack, "--current-url", "http://127.0.0.1:9", "--candidate-url", "http://127.0.0.1:9"]
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--api-key-file", str(key)])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "Traceback" not in err, err
    assert f"error --api-key-file: {key}: {says}" in " ".join(err.split())


@pytest.mark.parametrize("given_by", ["--prompts", "gates.answers.prompts"])
def test_a_prompts_file_that_is_not_utf8_is_bad_input_of_rollout_step(tmp_path, capsys, monkeypatch, given_by):
    import shutil

    from gpufleet.cli import main

    root = Path(__file__).parents[2]
    for name in ("Pulumi.yaml", "images"):
        (shutil.copytree if (root / name).is_dir() else shutil.copy)(root / name, tmp_path / name)
    monkeypatch.setenv("GPUFLEET_PROJECT", str(tmp_path))
    (tmp_path / "prompts.yaml").write_bytes(b"- caf\xe9\n")
    stack = tmp_path / "Pulumi.alicloud-cn-hangzhou-prod-rollout.yaml"
    text = (root / "examples" / stack.name).read_text()
    if given_by != "--prompts":
        text = text.replace("answers: {prompts: null,", "answers: {prompts: prompts.yaml,")
    stack.write_text(text)
    argv = [
        "rollout",
        "step",
        "--stack",
        str(stack),
        "--current-url",
        "http://127.0.0.1:9",
        "--candidate-url",
        "http://127.0.0.1:9",
    ]
    argv += ["--prompts", str(tmp_path / "prompts.yaml")] if given_by == "--prompts" else []
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "Traceback" not in err, err
    assert f"error {tmp_path / 'prompts.yaml'}:1:6: not UTF-8 text: byte 0xe9" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no state, no lock


def test_greedy_request_body():
    ps = answers.load()
    b = answers.body("m", "hi", ps)
    assert (b["temperature"], b["top_p"], b["stream"], b["seed"], b["max_tokens"]) == (0, 1, False, ps.seed, ps.max_tokens)


# ---- vLLM metrics ----------------------------------------------------------------------------------------


V033 = textwrap.dedent(
    """\
    # HELP vllm:num_requests_waiting Number of requests waiting to be processed.
    # TYPE vllm:num_requests_waiting gauge
    vllm:num_requests_waiting{engine="0",model_name="m"} 3.0
    vllm:num_requests_waiting{engine="1",model_name="m"} 2.0
    vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.5
    vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.7
    """
)


def test_queue_is_summed_over_engines_and_kv_cache_averaged_in_percent():
    got = measure.read_signals(V033, measure.signal_specs())
    assert got["queue"] == 5.0 and got["kv_cache"] == pytest.approx(60.0)


def test_vllm_0_10_v0_kv_cache_name_is_read_too():
    text = 'vllm:num_requests_waiting{model_name="m"} 0\nvllm:gpu_cache_usage_perc{model_name="m"} 0.25\n'
    assert measure.read_signals(text, measure.signal_specs()) == {"queue": 0.0, "kv_cache": 25.0}


class _Metrics:
    """An httpx client whose GET answers each text in turn (the endpoint's /metrics read while the load runs)."""

    def __init__(self, *texts: str):
        self.texts = list(texts)

    async def get(self, url, headers=None):
        class Resp:
            status_code = 200
            text = self.texts.pop(0)

        return Resp()


def _measured_side(*texts: str) -> dict:
    import asyncio

    poller = measure._Poller("http://cand:9100/metrics/vllm", measure.signal_specs(), 0.25, {})
    client = _Metrics(*texts)
    for _ in texts:
        asyncio.run(poller.read_once(client))
    level = {
        "requests": 40,
        "errors": 0,
        "error_rate": 0.0,
        "latency_ms": {"p95": 100.0},
        "ttft_ms": {"p95": 20.0},
        "requests_per_s": 4.0,
        "top_errors": [],
    }
    return measure._side(measure.Endpoint("candidate", "http://cand:8000", "m", poller.url), level, poller)


FINE = "vllm:num_requests_waiting 0\nvllm:kv_cache_usage_perc 0.4\n"


@pytest.mark.parametrize(
    ("texts", "failing", "said"),
    [
        ([FINE, "vllm:num_requests_waiting 0\nvllm:kv_cache_usage_perc +Inf\n", FINE], "kv_cache_percent", "read inf"),
        (["vllm:num_requests_waiting 0\nvllm:kv_cache_usage_perc -Inf\n"], "kv_cache_percent", "read -inf"),
        (["vllm:num_requests_waiting +Inf\nvllm:kv_cache_usage_perc 0.4\n"], "queue_per_node", "read inf"),
    ],
    ids=["kv-inf-among-finite", "kv-minus-inf", "queue-inf"],
)
def test_a_reading_that_is_not_finite_fails_its_gate_and_the_state_stays_readable(tmp_path, texts, failing, said):
    """A metrics endpoint answering `+Inf` put `kv_cache_percent_max: inf` in the figures, the state file was written
    with `Infinity`, and its strict reader then refused it: every rollout command, `status` too, exited 2. `-Inf`
    passed the gate (below any limit). Such a reading is no figure now: its gate fails naming it, whatever the other
    readings were, and the state file reads back."""
    cand = _measured_side(*texts)
    gs = gates.traffic_gates({"current": _side(), "candidate": cand | {"health_status": 200}}, T)
    (bad,) = gates.failed(gs)
    assert bad.name == failing and bad.measured is None and said in bad.detail and "not a finite figure" in bad.detail
    assert "http://cand:9100/metrics/vllm" in bad.detail
    path = tmp_path / ".rollout-s.json"
    entry = MEASURED | {"gates": [g.as_json() for g in gs], "figures": {"traffic": {"candidate": cand}}}
    st = state.State(stack="s", strategy="canary", steps=[0, 5, 100], step=1, history=[entry])
    state.save(path, st)
    assert state.load(path) == st


def test_finite_readings_keep_the_highest():
    cand = _measured_side(FINE, "vllm:num_requests_waiting 3\nvllm:kv_cache_usage_perc 0.7\n", FINE)
    assert (cand["queue_max"], cand["kv_cache_percent_max"], cand["metrics_error"]) == (3.0, 70.0, None)


def test_a_state_that_is_not_finite_is_never_written(tmp_path):
    """state.save wrote NaN and Infinity (json.dumps allows them) that state.load refuses: now the writer refuses
    them, naming the field, and leaves the state file as it was."""
    path = tmp_path / ".rollout-s.json"
    st = state.State(stack="s", strategy="canary", steps=[0, 5, 100], step=1, history=[MEASURED])
    state.save(path, st)
    before = path.read_bytes()
    for bad in (float("inf"), float("-inf"), float("nan")):
        odd = MEASURED | {"figures": {"traffic": {"candidate": {"kv_cache_percent_max": bad}}}}
        with pytest.raises(UserError) as exc:
            state.save(path, state.State(stack="s", strategy="canary", steps=[0, 5, 100], history=[MEASURED, odd]))
        (p,) = exc.value.problems
        assert (p.file, p.path) == (str(path), "history.1.figures.traffic.candidate.kv_cache_percent_max")
        assert "the state file is unchanged" in p.message and path.read_bytes() == before
    assert state.load(path) == st


# ---- state and lock --------------------------------------------------------------------------------------

MEASURED = {  # one entry of a state file's history, as runner.Run.gate writes it
    "at": "2026-12-05T13:00:00+00:00",
    "command": "step",
    "weight": 0,
    "to": "5 %",
    "gates": [gates.Gate("health", 200, 200, "==", True, "ok").as_json()],
    "figures": {"answers": {"changed": [{"id": "q1", "similarity": 0.5, "current": "a", "candidate": None}]}},
    "result": "passed",
}


def test_state_round_trips_and_is_written_atomically(tmp_path):
    sf = tmp_path / "Pulumi.s.yaml"
    path, lock = state.paths(sf, "s")
    assert (path.name, lock.name) == (".rollout-s.json", ".rollout-s.lock")
    st = state.State(stack="s", strategy="canary", steps=[0, 5, 100], step=1, history=[MEASURED])
    state.save(path, st)
    assert state.load(path) == st and state.load(path).weight == 5
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temp file left behind
    path.write_text("{")
    with pytest.raises(UserError, match=r"\.rollout-s\.json:1:2: not valid JSON: .* \(a rollout's state file: restore it"):
        state.load(path)


@pytest.mark.parametrize("value", ["Infinity", "-Infinity"])
def test_a_state_file_an_older_gpufleet_wrote_with_infinity_says_the_edit_that_recovers_it(tmp_path, value):
    """gpufleet before the strict writer wrote a gate metric that read +Inf as Infinity; the strict reader refuses it,
    and the message says which edit recovers the rollout (not only restore or remove)."""
    path, _ = state.paths(tmp_path / "Pulumi.s.yaml", "s")
    state.save(path, state.State(stack="s", strategy="canary", steps=[0, 5, 100], step=1, history=[MEASURED]))
    # a gate's measured figure, as json.dumps wrote an infinite one (a gate's figure may be null: none measured)
    path.write_text(path.read_text().replace('"measured": 200', f'"measured": {value}', 1))
    with pytest.raises(UserError) as exc:
        state.load(path)
    assert "an older gpufleet wrote a metric that read +Inf or -Inf so: replace that Infinity with null" in str(exc.value)
    path.write_text(path.read_text().replace(value, "null"))
    assert state.load(path).weight == 5


@pytest.mark.parametrize(
    "text, says",
    [
        ("[" * 5000 + "]" * 5000, ": nested deeper than 64 levels"),  # was a RecursionError traceback
        ('{"version": 1, "version": 1}', ":1:16: version: duplicate key 'version'; keep one"),  # where (review F8)
    ],
    ids=["deep", "duplicate-key"],
)
def test_a_state_file_is_read_as_every_json_input(tmp_path, text, says):
    path = tmp_path / ".rollout-s.json"
    path.write_text(text)
    with pytest.raises(UserError) as exc:
        state.load(path)
    assert str(exc.value) == f"{path}{says} (a rollout's state file: {state.FIX})"


def test_a_lock_record_too_deep_to_read_names_nobody(tmp_path):
    """A lock file left holding JSON nested past the decoder's limit was a RecursionError traceback."""
    path = tmp_path / ".rollout-s.lock"
    path.write_text("[" * 5000 + "]" * 5000)
    with state.Lock(path, "step") as lock:
        assert lock.took_over is None


def test_a_state_file_with_a_field_of_the_wrong_type_names_the_file_the_field_and_the_fix(tmp_path):
    path = tmp_path / ".rollout-s.json"
    good = state.State(stack="s", strategy="canary", steps=[0, 5, 100], step=1, history=[MEASURED]).as_json()
    cases = [
        ({"step": "x"}, "step: Input should be a valid integer, got text 'x'"),
        ({"step": True}, "step: Input should be a valid integer, got true"),
        ({"step": 3}, "step: 3 is not an index into steps (a whole number -1 to 2)"),
        ({"steps": [0, "5"]}, "steps.1: Input should be a valid integer, got text '5'"),
        ({"steps": [0, 500]}, "steps.1: Input should be less than or equal to 100"),
        ({"steps": [0, 50, 5, 100]}, "steps: [0, 50, 5, 100] is not a list of increasing percentages 0-100"),  # 25 -> 100
        ({"steps": [0, 5, 50]}, "steps: [0, 5, 50] must end at 100"),
        ({"strategy": "yolo"}, "strategy: Input should be 'canary' or 'blue_green'"),
        ({"stack": "other"}, "stack: is 'other': the rollout of another stack than s"),  # a copy of another's state
        ({"status": "done"}, "status: Input should be 'rolling', 'promoted', 'rolled_back', 'aborted' or 'finished'"),
        ({"in_progress": "x"}, "in_progress: Input should be a mapping, got text;"),  # named, not quoted
        ({"awaiting_deploy": {"change": {"kind": "weight"}, "commands": []}}, "awaiting_deploy.change: a weight change needs"),
        ({"retire_after": "2026-12-06T13:00:00"}, "retire_after: '2026-12-06T13:00:00' is not a date and time with its zone"),
        ({"history": [MEASURED | {"gates": [{"name": "health"}]}]}, "history.0.gates.0.threshold: Field required"),
        ({"reason": ["x"]}, "reason: Input should be a valid string, got a list"),
        # review F11: the weight was left alone in any form; gpufleet writes it as steps[step], a number
        ({"weight": "5"}, "weight: Input should be a valid integer, got text '5'"),
        ({"weight": 50}, "weight is 50, but steps[step] is 5: the file was edited"),
        (
            {"in_progress": {"command": "step", "since": "x", "changes": [], "then": {"colour": 1}}},
            "in_progress.then.colour: unknown field; remove it or check its spelling (a transition sets only status, step",
        ),
    ]
    for change, expected in cases:
        path.write_text(json.dumps(good | change))
        with pytest.raises(UserError) as exc:
            state.load(path)
        assert f"{path}: {expected}" in str(exc.value), change
        assert str(exc.value).endswith("restore it, or remove it to forget the rollout; the stack file stays as it is")


@pytest.mark.parametrize("text, kind", [("[]", "a list"), ('"x"', "text"), ("null", "nothing (null)")])
def test_a_state_file_that_is_no_json_object_says_so(tmp_path, text, kind):
    """Review F9: `[]` read as "version: is not 1: a state file of another gpufleet version"."""
    path = tmp_path / ".rollout-s.json"
    path.write_text(text)
    with pytest.raises(UserError) as exc:
        state.load(path)
    assert str(exc.value) == f"{path}: is {kind}, not a rollout's state (a JSON object); {state.FIX}"


@pytest.mark.parametrize("damage", ["not UTF-8", "a folder"])
def test_a_state_file_that_cannot_be_read_is_refused_by_every_command(tmp_path, capsys, damage):
    import shutil

    from gpufleet.cli import main

    stack = tmp_path / "Pulumi.alicloud-cn-hangzhou-prod-rollout.yaml"
    shutil.copy(Path(__file__).parents[2] / "examples" / stack.name, stack)
    before = stack.read_bytes()
    path = tmp_path / ".rollout-alicloud-cn-hangzhou-prod-rollout.json"
    if damage == "a folder":
        path.mkdir()
    else:
        path.write_bytes(b'\xff\xfe{"version": 1}')
    for command in (["status"], ["start"], ["abort"], ["finish", "--force"]):
        with pytest.raises(SystemExit) as exc:
            main(["rollout", *command, "--stack", str(stack)])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and "Traceback" not in err, (command, err)
        why = "is a folder, not a file" if damage == "a folder" else "not UTF-8 text: byte 0xff"
        assert err.startswith(f"error {path}") and why in err and "remove it to forget the rollout" in err, err
        assert stack.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == sorted([stack.name, path.name])


def test_a_folder_in_the_place_of_the_lock_is_refused_saying_to_remove_it(tmp_path):
    path = tmp_path / ".rollout-s.lock"
    path.mkdir()
    with pytest.raises(UserError) as exc:
        with state.Lock(path, "step"):
            pass
    assert str(exc.value) == f"{path}: cannot open the lock: Is a directory: remove it (the lock is a file gpufleet makes" + (
        " and removes; nothing is in it between commands)"
    )


def test_a_second_holder_of_the_lock_is_refused_naming_the_first(tmp_path):
    path = tmp_path / ".rollout-s.lock"
    with state.Lock(path, "step"):
        with pytest.raises(UserError) as exc:
            with state.Lock(path, "abort"):
                pass
        msg = str(exc.value)
        assert "another operator is running `rollout step`" in msg and f"pid {os.getpid()}" in msg
    assert not path.exists()  # removed at a clean end
    with state.Lock(path, "abort") as again:  # released at the end of the first
        assert again.took_over is None


def test_the_lock_of_a_killed_command_is_free_and_said_so(tmp_path):
    path = tmp_path / ".rollout-s.lock"
    code = (
        "import os, sys; from pathlib import Path; from gpufleet.rollout.state import Lock\n"
        f"Lock(Path({str(path)!r}), 'step').__enter__(); os.kill(os.getpid(), 9)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == -9
    assert json.loads(path.read_text())["command"] == "step"  # the killed command's record stays
    with state.Lock(path, "step") as lock:
        assert lock.took_over["pid"] != os.getpid() and lock.took_over["command"] == "step"


# ---- deploy ----------------------------------------------------------------------------------------------


def test_the_pulumi_cli_is_found_on_path_only(tmp_path):
    assert deploy.pulumi_cli({"PATH": str(tmp_path)}) is None
    fake = tmp_path / "pulumi"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    assert deploy.pulumi_cli({"PATH": f"/nonexistent:{tmp_path}"}) == str(fake)


def test_printed_commands_deploy_the_stack_from_its_project(tmp_path):
    project = tmp_path / "proj"
    (project / "stacks").mkdir(parents=True)
    inside = project / "stacks" / "Pulumi.a-b-prod.yaml"
    assert deploy.commands("a-b-prod", project, inside) == [f"pulumi up --cwd {project} --stack a-b-prod --yes"]
    outside = tmp_path / "my files" / "Pulumi.a-b-prod.yaml"
    assert deploy.commands("a-b-prod", project, outside) == [
        f"GPUFLEET_STACK_FILE='{outside}' pulumi up --cwd {project} --stack a-b-prod --yes --config-file '{outside}'"
    ]


def test_the_program_pulumi_runs_reads_a_stack_file_outside_stacks_from_the_environment(tmp_path, monkeypatch):
    """A rollout of a copied stack file (README: `cp examples/... my/`) deploys with `pulumi up --config-file FILE`, which
    gives the engine the file's config; the program (stacks/__main__.py, scaffold.PROGRAM) reads the stack file itself,
    and looked for stacks/Pulumi.<stack>.yaml, which is not there. It reads the file the command's environment names."""
    import shutil
    from functools import partial

    from gpufleet import mockengine, scaffold
    from gpufleet.stacks import loader

    root = Path(__file__).resolve().parents[2]
    mine = tmp_path / "my" / "Pulumi.alicloud-cn-hangzhou-prod-rollout.yaml"
    mine.parent.mkdir()
    shutil.copy(root / "examples" / mine.name, mine)
    stack = "alicloud-cn-hangzhou-prod-rollout"
    monkeypatch.chdir(root)
    monkeypatch.setattr(loader, "_STACK_FILES", {})  # the program's own process: no --stack PATH registered it
    with pytest.raises(UserError, match="no such stack file"):  # what `pulumi up --config-file` alone ran into
        loader.read_stack_config(stack)
    env = deploy.outside(root, mine)
    assert env == {loader.STACK_FILE_ENV: str(mine)}
    monkeypatch.setenv(loader.STACK_FILE_ENV, env[loader.STACK_FILE_ENV])
    assert loader.stack_path(stack) == mine.resolve()
    _, config = loader.read_stack_config(stack)
    program = partial(exec, compile(scaffold.PROGRAM, "stacks/__main__.py", "exec"), {"__name__": "__main__"})
    resources, _ = mockengine.run(program, stack, config)
    assert any("llm-v2-prod" in r["name"] for r in resources)  # the copied file's candidate group, declared
    # another stack's file in the variable is not this stack's: the program looks in stacks/ as before
    monkeypatch.setattr(loader, "_STACK_FILES", {})
    assert loader.stack_path("alicloud-cn-hangzhou-prod") == root / "stacks" / "Pulumi.alicloud-cn-hangzhou-prod.yaml"


# ---- the command's options -------------------------------------------------------------------------------


def test_the_metrics_url_defaults_to_the_node_gateways_metrics_port():
    from gpufleet.cli.rollout import _metrics_url

    assert _metrics_url("http://10.20.1.11:8000", None, 9180, "--m") == "http://10.20.1.11:9180/metrics/vllm"
    assert _metrics_url("https://a.example:8443/v1", None, 9180, "--m") == "https://a.example:9180/metrics/vllm"
    assert _metrics_url("http://x:1", "http://prom:9090/federate", 9180, "--m") == "http://prom:9090/federate"
    assert _metrics_url("http://[fd00::5]:8000", None, 9180, "--m") == "http://[fd00::5]:9180/metrics/vllm"


def test_a_metrics_url_with_an_at_sign_in_its_query_is_no_url_with_credentials():
    """The authority ends at the first / ? or # (httpx requests host prom): it was refused as 'has credentials'."""
    from gpufleet.cli.rollout import _metrics_url

    assert _metrics_url("http://x:1", "http://prom:9090?match=a@b", 9180, "--m") == "http://prom:9090?match=a@b"


@pytest.mark.parametrize(
    ("flag", "url"),
    [("--current-url", "http://[::1"), ("--candidate-url", "http://h:0"), ("--current-metrics-url", "http://[::1/metrics")],
)
def test_a_url_that_cannot_be_requested_is_bad_input_before_anything_is_done(tmp_path, capsys, flag, url):
    import shutil

    from gpufleet.cli import main

    stack = tmp_path / "Pulumi.alicloud-cn-hangzhou-prod-rollout.yaml"
    shutil.copy(Path(__file__).parents[2] / "examples" / stack.name, stack)
    argv = ["rollout", "step", "--stack", str(stack), "--current-url", "http://10.0.0.5:8000", "--candidate-url", "http://h:1"]
    argv += [flag, url]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "Traceback" not in err, err
    assert [line.split(":")[0] for line in err.splitlines()] == [f"error {flag}"], err
    assert f"{url!r} " in err
    assert sorted(p.name for p in tmp_path.iterdir()) == [stack.name]  # no state, no lock


def test_a_reason_with_newlines_and_terminal_escapes_is_printed_escaped(tmp_path, capsys, monkeypatch):
    """--reason is kept as given (state file, JSON) and printed escaped (errors.one_line): it cannot forge a line of
    the report or drive the terminal. Bytes that are not UTF-8 are refused before anything is done."""
    import shutil

    from gpufleet.cli import main

    monkeypatch.setenv("PATH", os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if not Path(p, "pulumi").exists()))
    stack = tmp_path / "Pulumi.alicloud-cn-hangzhou-prod-rollout.yaml"
    shutil.copy(Path(__file__).parents[2] / "examples" / stack.name, stack)

    def run(*args: str) -> tuple[int, str, str]:
        try:
            main(["rollout", *args, "--stack", str(stack)])
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        out, err = capsys.readouterr()
        return code, out, err

    assert run("start")[0] == 0
    reason = "p99 up\x1b[2J\nrollout of x: finished\x9b31m"
    code, out, err = run("abort", "--reason", reason)
    assert code == 0 and "\x1b" not in out + err and "\x9b" not in out + err
    assert "reason: aborted by the operator: p99 up\\x1b[2J\\nrollout of x: finished\\x9b31m\n" in out
    code, out, _ = run("status")
    assert code == 0 and "\x1b" not in out and "\x9b" not in out and "\\nrollout of x: finished" in out
    assert [line for line in out.splitlines() if line.startswith("rollout of x")] == []
    code, out, _ = run("status", "--json")
    assert code == 0 and "\x9b" not in out and json.loads(out)["reason"] == f"aborted by the operator: {reason}"
    st = json.loads((tmp_path / ".rollout-alicloud-cn-hangzhou-prod-rollout.json").read_text())
    assert st["reason"] == f"aborted by the operator: {reason}"  # recorded as given
    before = sorted((p.name, p.read_bytes()) for p in tmp_path.iterdir())
    code, _, err = run("abort", "--reason", "caf\udce9")  # the byte 0xe9 of a Latin-1 terminal, as Python keeps it
    assert code == 2 and "error --reason: holds bytes that are not UTF-8 text" in err and "Traceback" not in err
    assert sorted((p.name, p.read_bytes()) for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize("target", ["state", "prompts", "spec prompts", "key"])
def test_an_output_over_a_file_the_rollout_reads_is_refused(tmp_path, capsys, monkeypatch, target):
    """-o must not replace the rollout's state file (not there yet before `start`: it would be the report after it),
    the prompts (--prompts or the spec's gates.answers.prompts) or the --api-key-file."""
    import shutil

    from gpufleet.cli import main

    root = Path(__file__).parents[2]
    for name in ("Pulumi.yaml", "images"):
        (shutil.copytree if (root / name).is_dir() else shutil.copy)(root / name, tmp_path / name)
    monkeypatch.setenv("GPUFLEET_PROJECT", str(tmp_path))
    monkeypatch.setenv("PATH", os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if not Path(p, "pulumi").exists()))
    (tmp_path / "prompts.yaml").write_text("- What is 2+2?\n")
    (tmp_path / "key").write_text("sk-0123\n")
    stack = tmp_path / "Pulumi.alicloud-cn-hangzhou-prod-rollout.yaml"
    text = (root / "examples" / stack.name).read_text()
    stack.write_text(text.replace("answers: {prompts: null,", "answers: {prompts: prompts.yaml,"))
    out = {
        "state": tmp_path / ".rollout-alicloud-cn-hangzhou-prod-rollout.json",
        "prompts": tmp_path / "prompts.yaml",
        "spec prompts": tmp_path / "prompts.yaml",
        "key": tmp_path / "key",
    }[target]
    argv = ["rollout", "start"]
    if target != "state":
        argv = ["rollout", "step", "--current-url", "http://h:1", "--candidate-url", "http://h:2"]
        argv += {"prompts": ["--prompts", str(out)], "key": ["--api-key-file", str(out)]}.get(target, [])
    before = sorted((p.name, p.read_bytes()) for p in tmp_path.iterdir() if p.is_file())
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--stack", str(stack), "--json", "-o", str(out)])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and f"error -o: {out}: is an input of this command" in err, err
    assert sorted((p.name, p.read_bytes()) for p in tmp_path.iterdir() if p.is_file()) == before


def test_thresholds_from_the_spec_with_the_queue_default_of_the_fleets_scaling():
    from gpufleet.stacks.spec import Gates

    t = gates.thresholds(Gates(), 4)
    assert (t.max_error_rate, t.max_latency_p95_ratio, t.max_queue_per_node, t.min_exact_match) == (0.01, 1.25, 4.0, 0.9)
    assert gates.thresholds(Gates(max_queue_per_node=2), 4).max_queue_per_node == 2.0


# a key pasted as --api-key-env: one that is no variable name, and one that is (it was repeated as "KEY is not set")
@pytest.mark.parametrize("key", ["sk-pasted-by-mistake-0123456789abcdef", "sk_live_pasted_0123456789abcdef"])
def test_bad_gate_options_are_all_named_at_once_and_nothing_is_written(capsys, tmp_path, key):
    import shutil

    from gpufleet.cli import main

    stack = tmp_path / "Pulumi.alicloud-cn-hangzhou-prod-rollout.yaml"
    shutil.copy(Path(__file__).parents[2] / "examples" / stack.name, stack)
    argv = ["rollout", "step", "--stack", str(stack), "--current-url", "ftp://a", "--candidate-url", "http://b:1"]
    argv += ["--api-key-env", key, "--requests", "2", "--concurrency", "4", "--prompts", str(tmp_path / "none.yaml")]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and key not in err and "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("error ")]
    assert [line.split(":")[0] for line in lines] == [
        "error --current-url",
        "error --api-key-env",
        f"error {tmp_path / 'none.yaml'}",
        "error --requests",
    ], lines
    assert sorted(p.name for p in tmp_path.iterdir()) == [stack.name]  # no state, no lock


@pytest.mark.parametrize(
    "urls, said",
    [
        (["--current-url", "http://10.0.0.5:8000", "--candidate-url", "http://10.0.0.5:8000/"], "--candidate-url: "),
        (["--current-url", "http://Node:80", "--candidate-url", "http://node"], "--candidate-url: "),
        (
            ["--current-url", "http://127.0.0.1:1", "--candidate-url", "http://127.0.0.1:2"],  # both nodes' default metrics
            "--candidate-metrics-url: http://127.0.0.1:9180/metrics/vllm is the current group's metrics URL too",
        ),
    ],
)
def test_one_endpoint_for_both_groups_is_refused_before_measuring(capsys, tmp_path, urls, said):
    """The same URL for both groups measured a group against itself: every gate passed and the canary moved on."""
    import shutil

    from gpufleet.cli import main

    stack = tmp_path / "Pulumi.alicloud-cn-hangzhou-prod-rollout.yaml"
    shutil.copy(Path(__file__).parents[2] / "examples" / stack.name, stack)
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(SystemExit) as exc:
        main(["rollout", "step", "--stack", str(stack), *urls])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "Traceback" not in err and "measuring" not in err, err
    assert f"error {said}" in err, err
    assert "would compare the current group with itself" in err or "read the current group as the candidate" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize(
    "flag, url",
    [
        ("--current-metrics-url", "http://u:SEKRET123M@127.0.0.1:99999/metrics"),  # its port was named, the URL whole
        ("--candidate-metrics-url", "ftp://u:SEKRET123M@127.0.0.1/metrics"),
        ("--candidate-metrics-url", "http://u:SEKRET123M@127.0.0.1 x/metrics"),
        ("--candidate-url", "http://u:SEKRET123M@127.0.0.1:99999"),
        # a leading space or one slash hid them: the URL was shown whole (review finding 2)
        ("--current-metrics-url", " http://u:SEKRET123M@h:9/m"),
        ("--candidate-metrics-url", "http:/u:SEKRET123M@h:9/m"),
        ("--current-url", " http://u:SEKRET123M@127.0.0.1:9"),
    ],
)
def test_a_gate_url_with_credentials_is_refused_as_such_and_never_shown(capsys, tmp_path, flag, url):
    import shutil

    from gpufleet.cli import main

    stack = tmp_path / "Pulumi.alicloud-cn-hangzhou-prod-rollout.yaml"
    shutil.copy(Path(__file__).parents[2] / "examples" / stack.name, stack)
    argv = ["rollout", "step", "--stack", str(stack), "--current-url", "http://127.0.0.1:1", "--candidate-url"]
    argv += ["http://127.0.0.1:2", flag, url]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "Traceback" not in err and "SEKRET123" not in err, err
    # the rollout's own wording for every URL option: the load test's ("written to the result ... --api-key-env VAR")
    # was cut to "--api-key-env" for the serving URLs (review finding 9)
    said = "has credentials in it, which would be written to the state file and report"
    assert f"error {flag}: {said}" in err and "the result" not in err, err
    if not flag.endswith("metrics-url"):
        assert f"{said}; give the key with --api-key-env or --api-key-file" in err, err


def test_gate_concurrency_is_capped_as_a_load_test_is(capsys, tmp_path):
    """Both endpoints are loaded at once, one connection per worker: --concurrency 5000 would open 10,000 sockets
    (past the default limit of open files) before any gate read a number."""
    import shutil

    from gpufleet.cli import main
    from gpufleet.sizing.loadtest import MAX_CONCURRENCY

    stack = tmp_path / "Pulumi.alicloud-cn-hangzhou-prod-rollout.yaml"
    shutil.copy(Path(__file__).parents[2] / "examples" / stack.name, stack)
    most = MAX_CONCURRENCY // 2
    for given, refused in ((most, False), (most + 1, True)):
        argv = ["rollout", "step", "--stack", str(stack), "--current-url", "ftp://a", "--candidate-url", "http://b:1"]
        argv += ["--concurrency", str(given), "--requests", str(given)]
        with pytest.raises(SystemExit) as exc:
            main(argv)  # refused either way (ftp://): whether --concurrency is among the problems is the point
        err = capsys.readouterr().err
        assert exc.value.code == 2 and "Traceback" not in err
        assert (f"error --concurrency: {given} is above {most}" in err) is refused, err
