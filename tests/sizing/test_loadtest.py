"""`gpufleet loadtest`: the statistics by hand, and the client against a fake server on 127.0.0.1 whose
latency grows with load (tests/sizing/fake_openai.py), so the knee is known in advance."""

import asyncio
import json
import statistics
import subprocess
import sys
import time

import pytest
from fake_openai import Behaviour, FakeServer
from inputs.inputs_helpers import run_cli

from gpufleet.errors import UserError
from gpufleet.sizing import capacity, loadstats, loadtest
from gpufleet.sizing.loadstats import LevelRun, Sample

KEY = "sk-test-5d41402abc4b2a76b9719d911017c592"


def settings(url, **overrides):
    args = dict(
        url=url,
        model="fake-model",
        concurrency="1,4,16",
        requests=32,
        max_tokens=8,
        api_key_env=None,
        slo_p95_ms=None,
        timeout_s=5.0,
        max_duration_s=30.0,
        prompt=None,
        environ={},
    )
    args.update(overrides)
    return loadtest.settings(**args)


def run(s):
    return asyncio.run(loadtest.run(s))


# ---- statistics, by hand -------------------------------------------------------------------------------


def test_percentiles_worked_by_hand():
    # sorted 10 20 30 40, h = (n-1) q/100: p50 h=1.5 -> 20+0.5*10 = 25; p95 h=2.85 -> 30+0.85*10 = 38.5;
    # p99 h=2.97 -> 39.7; p0 and p100 are the ends
    xs = [40, 10, 30, 20]
    assert loadstats.percentile(xs, 50) == pytest.approx(25)
    assert loadstats.percentile(xs, 95) == pytest.approx(38.5)
    assert loadstats.percentile(xs, 99) == pytest.approx(39.7)
    assert (loadstats.percentile(xs, 0), loadstats.percentile(xs, 100)) == (10, 40)
    assert loadstats.percentile([7.0], 95) == 7.0 and loadstats.percentile([], 50) is None
    with pytest.raises(ValueError):
        loadstats.percentile(xs, 101)


def test_percentile_agrees_with_the_standard_library_inclusive_method():
    xs = [3.1, 97.0, 12.5, 44.0, 5.5, 61.2, 18.0, 250.0, 33.3, 9.9, 71.0]
    cuts = statistics.quantiles(xs, n=100, method="inclusive")  # cut k is the k-th percentile
    for q in (5, 50, 95, 99):
        assert loadstats.percentile(xs, q) == pytest.approx(cuts[q - 1])


def test_level_stats_counts_only_successes_as_throughput():
    ok = [Sample(ok=True, latency_ms=ms, ttft_ms=ms / 4, output_tokens=10) for ms in (100, 200, 300)]
    bad = [Sample(ok=False, latency_ms=5, error="HTTP 500: boom", status=500)]
    lv = loadstats.level_stats(LevelRun(8, tuple(ok + bad), 2.0))
    assert lv["requests"] == 4 and lv["errors"] == 1 and lv["error_rate"] == 0.25
    assert lv["requests_per_s"] == 1.5 and lv["output_tokens_per_s"] == 15.0  # 3 ok / 2 s, 30 tokens / 2 s
    assert lv["latency_ms"] == {"p50": 200.0, "p95": 290.0, "p99": 298.0}  # the failed 5 ms is not in them
    assert lv["ttft_ms"] == {"p50": 50.0, "p95": 72.5}
    assert lv["top_errors"] == [{"message": "HTTP 500: boom", "count": 1}]
    empty = loadstats.level_stats(LevelRun(1, (), 0.0))
    assert empty["requests_per_s"] == 0 and empty["latency_ms"]["p95"] is None


def _level(c, p95, errors=0, rps=1.0):
    return {"concurrency": c, "requests": 10, "errors": errors, "requests_per_s": rps, "latency_ms": {"p95": p95}}


def test_knee_is_the_highest_concurrency_within_the_slo_without_errors():
    levels = [_level(1, 50), _level(10, 180, rps=9), _level(20, 150, errors=1), _level(50, 900)]
    assert loadstats.find_knee(levels, 200) == {"concurrency": 10, "requests_per_s": 9}
    assert loadstats.find_knee(levels, None) is None
    assert loadstats.find_knee(levels, 10) is None
    noisy = {"slo_p95_ms": 100, "levels": [_level(1, 120), _level(10, 90)], "knee": {"concurrency": 10, "requests_per_s": 1}}
    assert "noisy" in loadstats.knee_note(noisy)


# ---- the client against the fake server ----------------------------------------------------------------


def test_measures_every_level_and_finds_the_knee():
    # per request ~ 50 ms + 3 tokens x 12.5 ms x c: c=1 ~88 ms, c=4 ~200 ms, c=16 ~650 ms; SLO 400 ms -> knee 4.
    # Each level is 200 ms or more from the SLO: a busy machine's scheduling delay (a CI run beside other tests) once
    # took c=4's p95 over the 120 ms margin the 20 ms / 5 ms server left, and the knee came out 1.
    with FakeServer(Behaviour(first_token_s=0.05, token_s=0.0125)) as srv:
        r = run(settings(srv.url, slo_p95_ms=400))
        seen, peak = srv.behaviour.bodies, srv.behaviour.max_in_flight
    assert [lv["concurrency"] for lv in r["levels"]] == [1, 4, 16] and peak == 16
    assert r["knee"]["concurrency"] == 4 and r["knee"]["requests_per_s"] == r["levels"][1]["requests_per_s"]
    assert r["token_count_source"] == "usage" and r["url"] == srv.url and r["model"] == "fake-model"
    p95 = [lv["latency_ms"]["p95"] for lv in r["levels"]]
    assert p95 == sorted(p95) and p95[0] < 400 < p95[2]
    for lv in r["levels"]:
        assert lv["requests"] == 32 and lv["errors"] == 0
        lat, ttft = lv["latency_ms"], lv["ttft_ms"]
        assert lat["p50"] <= lat["p95"] <= lat["p99"] and ttft["p50"] <= ttft["p95"] and ttft["p50"] < lat["p50"]
        assert lv["output_tokens_per_s"] == pytest.approx(4 * lv["requests_per_s"], rel=0.01)  # 4 tokens each
    assert r["levels"][2]["requests_per_s"] > r["levels"][0]["requests_per_s"]  # more in flight, more throughput
    assert len(seen) == 96 and all(
        b["stream"] is True
        and b["stream_options"] == {"include_usage": True}
        and b["max_tokens"] == 8
        and b["messages"][0]["role"] == "user"
        for b in seen
    )
    assert capacity.per_node_qps_of(r, "run")[0] == r["knee"]["requests_per_s"]


def test_counts_deltas_when_the_server_sends_no_usage():
    with FakeServer(Behaviour(usage=False, tokens=6)) as srv:
        r = run(settings(srv.url, concurrency="2", requests=4, max_tokens=5))
    assert r["token_count_source"] == "deltas" and r["knee"] is None
    lv = r["levels"][0]
    assert lv["output_tokens_per_s"] == pytest.approx(5 * lv["requests_per_s"], rel=0.01)  # min(6, max_tokens 5)


def test_server_errors_are_counted_and_keep_a_level_out_of_the_knee():
    with FakeServer(Behaviour(fail_every=5, first_token_s=0.0, token_s=0.0)) as srv:
        r = run(settings(srv.url, concurrency="1,2", requests=20, slo_p95_ms=10_000))
    errors = sum(lv["errors"] for lv in r["levels"])
    assert errors == 8 and r["knee"] is None  # requests 5, 10, ... of 40 failed, in both levels
    assert r["levels"][0]["top_errors"][0]["message"].startswith("HTTP 500")
    assert r["levels"][0]["requests_per_s"] > 0


@pytest.mark.parametrize("mode", ["json", "cut"])
def test_an_answer_that_is_not_a_whole_stream_is_an_error(mode):
    with FakeServer(Behaviour(mode=mode)) as srv:
        r = run(settings(srv.url, concurrency="1", requests=2))
    lv = r["levels"][0]
    assert lv["errors"] == 2 and "before `data: [DONE]`" in lv["top_errors"][0]["message"]


def test_timeouts_are_errors_and_the_run_is_bounded():
    with FakeServer(Behaviour(hang_s=2.0)) as srv:
        start = time.perf_counter()
        r = run(settings(srv.url, concurrency="2", requests=50, timeout_s=0.3, max_duration_s=0.5))
        took = time.perf_counter() - start
    lv = r["levels"][0]
    assert lv["errors"] == lv["requests"] and 2 <= lv["requests"] <= 6 and lv["error_rate"] == 1.0
    assert "timeout" in lv["top_errors"][0]["message"] and lv["latency_ms"]["p95"] is None
    assert took < 0.5 + 0.3 + 0.5  # the cap plus one request timeout plus slack


def test_api_key_comes_from_the_environment_and_is_never_shown():
    with FakeServer(Behaviour(api_key=KEY)) as srv:
        good = run(settings(srv.url, concurrency="1", requests=2, api_key_env="VLLM_API_KEY", environ={"VLLM_API_KEY": KEY}))
        assert good["levels"][0]["errors"] == 0
        with pytest.raises(UserError) as exc:  # the server echoes the wrong key in its error
            run(settings(srv.url, concurrency="1", requests=2, api_key_env="VLLM_API_KEY", environ={"VLLM_API_KEY": KEY + "x"}))
        with pytest.raises(UserError) as missing:
            run(settings(srv.url, concurrency="1", requests=2))
    assert exc.value.problems[0].file == "--api-key-env" and "***" in str(exc.value) and KEY not in str(exc.value)
    assert "refused" in str(missing.value) and KEY not in json.dumps(good) and KEY not in repr(settings(srv.url))


def test_unknown_model_and_unreachable_server_stop_with_a_clear_message():
    with FakeServer() as srv:
        with pytest.raises(UserError, match="check --model against GET /v1/models"):
            run(settings(srv.url, model="nope", concurrency="1", requests=1))
    with pytest.raises(UserError, match="cannot reach"):  # the server is gone: nothing listens on its port now
        run(settings(srv.url, concurrency="1", requests=1))


def test_bad_options_are_all_reported_at_once():
    with pytest.raises(UserError) as exc:
        settings(
            "ftp://host",
            model=" ",
            concurrency="1,x,0",
            requests=0,
            max_tokens=0,
            timeout_s=0,
            slo_p95_ms=-1,
            api_key_env="sk-live-abc",
            environ={},
        )
    fields = [p.file for p in exc.value.problems]
    assert fields == [
        "--url",
        "--concurrency",
        "--api-key-env",
        "--model",
        "--requests",
        "--max-tokens",
        "--timeout-s",
        "--slo-p95-ms",
    ]
    assert "sk-live-abc" not in str(exc.value)
    with pytest.raises(UserError, match="cannot keep 50 in flight"):
        settings("http://h:8000", concurrency="50", requests=10)
    with pytest.raises(UserError, match="the variable it names is not set"):
        settings("http://h:8000", api_key_env="UNSET_VAR")
    with pytest.raises(UserError, match="credentials in it"):
        settings("http://user:pw@h:8000")


@pytest.mark.parametrize("url", ["http://h:8000", "http://h:8000/", "http://h:8000/v1", "http://h:8000/v1/chat/completions"])
def test_endpoint_from_any_form_of_the_base_url(url):
    assert loadtest.chat_endpoint(url) == "http://h:8000/v1/chat/completions"


NO_HOST = (
    "is not an IP address or a host name (dot-separated labels of letters, digits, '-' and '_', at most 63 characters "
    "each and 253 in all)"
)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://[::1", "is not a valid URL (Invalid IPv6 URL)"),
        ("http://[zz]:8000", "is not a valid URL ('zz' does not appear to be an IPv4 or IPv6 address)"),
        ("http://h:65536", "is not a valid URL (Port out of range 0-65535)"),
        ("http://h:80x", "is not a valid URL (Port could not be cast to integer value as '80x')"),
        ("http://h:0", "has port 0, which no server listens on (a port is 1 to 65535)"),
        ("http://1.2.3.999:8000", f"has host '1.2.3.999', which {NO_HOST}"),
        ("http://a..b:8000", f"has host 'a..b', which {NO_HOST}"),
        ("http://-a:8000", f"has host '-a', which {NO_HOST}"),
        ("http://hé.example", f"has host 'hé.example', which {NO_HOST}"),
        ("http://exa mple:8000", "has a space or control character in it"),
        ("http://h\tx:8000", "has a space or control character in it"),  # urlsplit drops the tab; the client would not
        ("ftp://h", "is not an http:// or https:// URL with a host"),
        # the chat path was appended after the query: http://h:8000?x=1/v1/chat/completions, a request for /
        ("http://h:8000?x=1", "has a query or fragment (?... or #...), after which the chat path cannot be added"),
        ("http://h:8000/v1?", "has a query or fragment (?... or #...), after which the chat path cannot be added"),
        ("http://h:8000#top", "has a query or fragment (?... or #...), after which the chat path cannot be added"),
    ],
)
def test_a_url_the_client_cannot_request_is_refused_naming_the_option(url, why):
    """The URL's host is checked by inputs.host_problem, as image build's --host."""
    with pytest.raises(UserError) as exc:
        loadtest.chat_endpoint(url, "--candidate-url")
    shown = url.replace("?x=1", "?***").replace("/v1?", "/v1?***").replace("#top", "#***")  # a token may be there
    assert str(exc.value) == f"--candidate-url: {shown!r} {why}: give the server's base URL, e.g. http://10.0.0.5:8000"


@pytest.mark.parametrize(
    "url",
    [
        "http://user:SEKRET123@10.0.0.5:99999",  # each failed an earlier shape check, which printed it whole
        "ftp://user:SEKRET123@10.0.0.5",
        "http://user:SEKRET123@10.0.0.5:0",
        "http://user:SEKRET123@10.0.0.5 x",
        "http://user:SEKRET123@[::1",
        "http://user:SEKRET123@exa..mple",
        "http://user:SEKRET123?x@10.0.0.5/",  # a bare ? in the password: the client would read u as the host
        "http://SEKRET123@10.0.0.5:8000",  # a token as the user name
        # what a client skips before the authority (review finding 2): they were shown whole
        " http://user:SEKRET123@10.0.0.5",
        "\thttp://user:SEKRET123@10.0.0.5",
        "http:/user:SEKRET123@10.0.0.5/",
        "http:\\\\user:SEKRET123@10.0.0.5/",
        "http://user:SEKRET123/x@10.0.0.5/",  # a bare / in the password
    ],
)
def test_a_url_with_credentials_is_refused_as_such_whatever_else_is_wrong_and_never_shown(url):
    with pytest.raises(UserError) as exc:
        loadtest.chat_endpoint(url, "--candidate-url")
    assert str(exc.value).startswith("--candidate-url: has credentials in it"), str(exc.value)
    assert "SEKRET123" not in str(exc.value)


@pytest.mark.parametrize(
    "url, shown",
    [
        ("http://h:9090?x=a@SEKRET123", "'http://h:9090?***' has a query"),  # an @ in the query is no user name
        ("http://h:8000#SEKRET123", "'http://h:8000#***' has a query"),  # a fragment is never shown either
    ],
)
def test_an_at_sign_or_token_after_the_host_is_a_query_or_fragment_and_never_shown(url, shown):
    """The authority ends at the first / ? or #, as httpx reads it: `http://h:9090?x=a@b` was refused as having
    credentials and shown as http://***@b; a #fragment was quoted whole."""
    with pytest.raises(UserError) as exc:
        loadtest.chat_endpoint(url, "--url")
    assert str(exc.value).startswith(f"--url: {shown}") and "SEKRET123" not in str(exc.value), str(exc.value)


def test_a_query_is_refused_without_showing_it():
    with pytest.raises(UserError) as exc:
        loadtest.chat_endpoint("http://10.0.0.5:8000/?token=SEKRET123", "--url")
    assert "'http://10.0.0.5:8000/?***' has a query or fragment" in str(exc.value) and "SEKRET123" not in str(exc.value)


def test_an_unset_api_key_env_is_not_repeated_as_it_may_be_the_key():
    """A key pasted in place of the variable's name, when the key is a valid name (sk_live_..., hex starting with a
    letter): the "not set" message repeated it."""
    for given in ("sk_live_SEKRET123abc", "VLLM_API_KEY"):
        with pytest.raises(UserError) as exc:
            loadtest.api_key(given, {})
        assert given not in str(exc.value)
        assert str(exc.value).startswith("--api-key-env: the variable it names is not set or is empty"), str(exc.value)


@pytest.mark.parametrize(
    "url", ["http://[::1]:8000", "https://[fe80::1%25eth0]:8443", "http://my_svc.internal:80", "http://xn--h-bga.example"]
)
def test_ipv6_internal_and_international_hosts_are_urls(url):
    assert loadtest.chat_endpoint(url) == url + "/v1/chat/completions"


# ---- the command ---------------------------------------------------------------------------------------


def _cli(*args, env=None):
    import os

    return subprocess.run(
        [sys.executable, "-c", "from gpufleet.cli import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
    )


def test_command_writes_the_result_plan_capacity_reads(tmp_path):
    out = tmp_path / "lt.json"
    with FakeServer(Behaviour(api_key=KEY)) as srv:
        r = _cli(
            "loadtest",
            "--url",
            srv.url,
            "--model",
            "fake-model",
            "--concurrency",
            "1,4,16",
            "--requests",
            "32",
            "--max-tokens",
            "8",
            "--slo-p95-ms",
            "200",
            "--api-key-env",
            "LT_KEY",
            "--json",
            "--save-json",
            str(out),
            env={"LT_KEY": KEY},
        )
        table = _cli(
            "loadtest",
            "--url",
            srv.url,
            "--model",
            "fake-model",
            "--concurrency",
            "1,2",
            "--requests",
            "4",
            "--slo-p95-ms",
            "200",
            "--api-key-env",
            "LT_KEY",
            env={"LT_KEY": KEY},
        )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == json.loads(out.read_text()) and json.loads(r.stdout)["knee"]["concurrency"] == 4
    assert "concurrency   16" in r.stderr  # the progress display
    assert table.returncode == 0 and "knee: concurrency 2" in table.stdout and "TTFT95" in table.stdout
    assert all(KEY not in text for text in (r.stdout, r.stderr, out.read_text(), table.stdout, table.stderr))
    plan = _cli("plan", "capacity", "--peak-qps", "200", "--from-loadtest", str(out), "--json")
    assert plan.returncode == 0, plan.stderr
    per_node = json.loads(out.read_text())["knee"]["requests_per_s"]
    assert json.loads(plan.stdout)["qps_per_node"] == per_node


def test_command_bad_input_exits_2_and_writes_nothing(tmp_path):
    out = tmp_path / "lt.json"
    r = _cli("loadtest", "--url", "http://127.0.0.1:9", "--model", "m", "--concurrency", "10", "--requests", "3", "-o", str(out))
    assert r.returncode == 2 and "--requests" in r.stderr and "Traceback" not in r.stderr and not out.exists()
    r = _cli("loadtest", "--url", "http://127.0.0.1:9", "--model", "m", "--concurrency", "1", "--requests", "1", "-o", str(out))
    assert r.returncode == 2 and "cannot reach" in r.stderr and "Traceback" not in r.stderr and not out.exists()
    r = _cli("loadtest", "--url", "http://127.0.0.1:9", "--model", "m", "-o", str(tmp_path / "no" / "lt.json"))
    assert r.returncode == 2 and "does not exist" in r.stderr


def test_a_level_where_every_request_failed_is_a_failed_check(capsys, monkeypatch):
    """docs/cli.md, exit 1: "a load test level with no successful request". 100 of 100 failed: no success (by hand);
    99 of 100: one succeeded. Through the command: a server answering HTTP 500 to everything, two levels, exit 1 naming
    both, the result still printed."""
    from gpufleet.cli.loadtest import failed_levels

    level = {"concurrency": 10, "requests": 100}
    assert failed_levels({"levels": [{**level, "errors": 100}, {**level, "concurrency": 20, "errors": 99}]}) == [10]
    monkeypatch.setenv("COLUMNS", "200")
    with FakeServer(Behaviour(fail_every=1, first_token_s=0.0, token_s=0.0)) as srv:
        words = ["loadtest", "--url", srv.url, "--model", "fake-model", "--concurrency", "1,2", "--requests", "4", "--json"]
        r = run_cli(words, capsys)
    assert r.code == 1, r.err
    assert [(lv["requests"], lv["errors"]) for lv in json.loads(r.out)["levels"]] == [(4, 4), (4, 4)]
    assert "failed: no successful request at concurrency 1, 2; the result is not a capacity (exit 1)" in r.err, r.err


def test_o_and_save_json_naming_one_file_is_refused_before_any_request(capsys, tmp_path):
    """-o and --save-json are two outputs: the same file for both would have one overwrite the other. Refused, naming
    -o, before the load test starts (nothing listens on port 9: a started test would say it cannot reach it)."""
    lt = tmp_path / "lt.json"
    words = ["loadtest", "--url", "http://127.0.0.1:9", "--model", "m", "--concurrency", "1", "--requests", "1"]
    r = run_cli([*words, "-o", lt, "--save-json", lt], capsys)
    assert r.code == 2 and r.out == "" and "Traceback" not in r.err, r.err
    assert f"error -o: {lt}: is also --save-json: the two would overwrite each other" in r.err, r.err
    assert "cannot reach" not in r.err and "concurrency" not in r.err and not lt.exists()


@pytest.mark.parametrize(
    ("events", "says"),
    [
        (('{"choices": 5}',), "the stream sent choices that are not a list"),
        (("[" * 100_000 + "]" * 100_000,), "the stream sent data that is not JSON"),  # deeper than the decoder goes
        (('{"choices": [], "usage": {"completion_tokens": -1000, "prompt_tokens": -3}}',), "completion_tokens -1000: not a"),
        (
            ('{"choices": [], "usage": {"completion_tokens": 1000000000000000000000000000000}}',),
            "not a count from 0 to 100000000",
        ),
        (('{"choices": [], "usage": {"completion_tokens": true}}',), "completion_tokens True: not a whole number"),
        (('{"choices": [], "usage": {"completion_tokens": 2, "prompt_tokens": 1e30}}',), "prompt_tokens 1e+30: not a whole"),
        (('{"choices": [{"index": 0, "delta": {"role": "assistant"}}]}',), "the answer had no content"),
        (('{"choices": [{"delta": {"content": [{"type": "text", "text": "hi"}]}}]}',), "the answer had no content"),
    ],
)
def test_a_malformed_or_empty_answer_is_an_error_not_a_traceback_or_throughput(events, says):
    """Each of these raised out of the run (a traceback), or was counted as a successful request (negative, huge or
    no throughput that plan capacity then refused or sized a fleet with)."""
    with FakeServer(Behaviour(events=events)) as srv:
        r = run(settings(srv.url, concurrency="1,2", requests=4))
    for lv in r["levels"]:
        assert lv["errors"] == lv["requests"] == 4 and lv["requests_per_s"] == 0 and lv["output_tokens_per_s"] == 0, lv
        assert says in lv["top_errors"][0]["message"], lv["top_errors"]
    assert r["knee"] is None


def test_a_good_usage_count_is_still_used():
    with FakeServer(Behaviour(events=('{"choices": [], "usage": {"completion_tokens": 3, "prompt_tokens": 7}}',))) as srv:
        r = run(settings(srv.url, concurrency="1", requests=2))
    lv = r["levels"][0]
    assert lv["errors"] == 0 and r["token_count_source"] == "usage" and r["request"]["prompt_tokens"] == 7
    assert lv["output_tokens_per_s"] == pytest.approx(3 * lv["requests_per_s"], rel=0.01)  # both rounded


def test_more_output_tokens_than_max_tokens_is_a_server_that_does_not_enforce_it_not_an_error():
    """A whole answer whose usage counts 12 tokens for --max-tokens 8 (a server ignoring max_tokens) was an error."""
    with FakeServer(Behaviour(events=('{"choices": [], "usage": {"completion_tokens": 12, "prompt_tokens": 7}}',))) as srv:
        r = run(settings(srv.url, concurrency="1", requests=2))
    lv = r["levels"][0]
    assert lv["errors"] == 0 and lv["output_tokens_per_s"] == pytest.approx(12 * lv["requests_per_s"], rel=0.01)


def test_a_reset_connection_has_a_readable_reason():
    """A reset mid-stream read `ReadError:` with nothing after the colon."""
    with FakeServer(Behaviour(mode="reset")) as srv:
        r = run(settings(srv.url, concurrency="1", requests=2))
    lv = r["levels"][0]
    assert lv["errors"] == 2, lv
    message = lv["top_errors"][0]["message"]
    assert message.split(":", 1)[1].strip(), message  # something after the error's name
    assert "reset" in message or "closed" in message, message


# ---- edges a mutation review found untested ------------------------------------------------------------


def test_usage_of_zero_completion_tokens_and_no_delta_is_an_error():
    """loadtest.py's module doc: "a stream with no content and no output token make the request a failed sample (an
    error)"; the OpenAI usage object's completion_tokens 0 and no delta is an empty answer, usage reported or not."""
    events = ('{"choices": [], "usage": {"completion_tokens": 0, "prompt_tokens": 7}}',)
    with FakeServer(Behaviour(events=events)) as srv:
        r = run(settings(srv.url, concurrency="1", requests=3))
    (lv,) = r["levels"]
    assert lv["errors"] == lv["requests"] == 3 and lv["requests_per_s"] == 0, lv
    assert lv["top_errors"][0]["message"] == loadtest.EMPTY_ANSWER


def test_a_prompt_of_zero_tokens_is_a_count_not_a_broken_usage():
    """loadtest.py module doc: a usage count is broken when it is "no whole number from 0 to 1e8": 0 is one."""
    events = (
        '{"choices": [{"index": 0, "delta": {"content": "hi"}}]}',
        '{"choices": [], "usage": {"completion_tokens": 1, "prompt_tokens": 0}}',
    )
    with FakeServer(Behaviour(events=events)) as srv:
        r = run(settings(srv.url, concurrency="1", requests=2))
    (lv,) = r["levels"]
    assert lv["errors"] == 0, lv["top_errors"]
    assert r["request"]["prompt_tokens"] == 0 and r["request"]["output_tokens_per_request"] == 1


# Which level sizes a node: loadstats.within_slo's rule and the result's own sentence (knee_note), "p95 latency <= SLO
# ms with zero errors", so a p95 at the SLO exactly meets it; capacity.per_node_qps_of without a knee takes "its best
# error-free level", the most requests/s (past saturation a higher concurrency serves fewer: 12 at 4, 9 at 16, by
# hand); loadtest.fatal_problem: "A UserError when every request failed in a way more load cannot change".


def test_a_level_whose_p95_is_the_slo_exactly_is_the_knee():
    levels = [_level(1, 900.0, rps=2.0), _level(4, 2000.0, rps=6.5), _level(8, 2000.1, rps=7.0)]
    assert loadstats.within_slo(levels[1], 2000.0)
    assert loadstats.find_knee(levels, 2000.0) == {"concurrency": 4, "requests_per_s": 6.5}


def _result_level(c, p95, rps, errors=0):
    """_level with every field a saved load-test result holds (capacity reads it through result_problems)."""
    return _level(c, p95, errors, rps) | {
        "requests": 20,
        "error_rate": errors / 20,
        "output_tokens_per_s": rps * 100,
        "latency_ms": {"p50": p95 / 2, "p95": p95, "p99": p95},
        "ttft_ms": {"p50": 50.0, "p95": 80.0},
    }


def test_without_a_knee_the_most_requests_per_second_of_the_error_free_levels_is_used():
    result = {
        "slo_p95_ms": None,
        "knee": None,
        "levels": [
            _result_level(1, 500.0, rps=5.0),
            _result_level(4, 900.0, rps=12.0),
            _result_level(16, 4000.0, rps=9.0),
            _result_level(32, 9000.0, rps=20.0, errors=3),
        ],
    }
    qps, how = capacity.per_node_qps_of(result, "lt.json")
    assert qps == 12.0 and "concurrency 4" in how


def test_one_refused_request_among_answered_ones_does_not_stop_the_run():
    s = settings("http://127.0.0.1:8000", model="m", concurrency="1", requests=2)
    ok = Sample(ok=True, latency_ms=100.0, output_tokens=8)
    refused = Sample(ok=False, latency_ms=5.0, error="HTTP 401: no", status=401, fatal=True)
    assert loadtest.fatal_problem(s, (ok, refused)) is None
    assert loadtest.fatal_problem(s, (refused, refused)) is not None
