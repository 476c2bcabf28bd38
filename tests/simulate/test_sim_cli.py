"""gpufleet plan scaling: every shipped stack with the built-in profiles and a trace file, in table, JSON and HTML;
bad input exits 2 with the file, row and column named and nothing written; the chart drawn in headless chromium."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from tools import require
from typer.testing import CliRunner

from gpufleet.cli import plan as plan_cli
from gpufleet.stacks import loader

ROOT = Path(__file__).resolve().parents[2]
LOADTEST = str(ROOT / "examples" / "loadtest-example.json")
STACKS = loader.stack_names(ROOT)
PROFILES = ("day", "step", "spike")
FORMATS = ("json", "table", "html")
START = "2026-12-07T00:00:00Z"


@pytest.fixture(scope="module")
def app():
    a = typer.Typer()
    plan_cli.register(a)
    return a


def run(app, *args):
    return CliRunner().invoke(app, ["plan", "scaling", *args])


def step(app, stack: str, *args):
    """The shipped load test's step profile through `stack` from START."""
    return run(app, "--stack", stack, "--from-loadtest", LOADTEST, "--profile", "step", "--start", START, *args)


def cli(*args):
    """The real command line (exit codes and messages as a user sees them)."""
    return subprocess.run(
        [sys.executable, "-c", "from gpufleet.cli import main; main()", "plan", "scaling", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


@pytest.mark.parametrize("i, stack", list(enumerate(STACKS)))
def test_every_stack_every_profile_and_format(app, tmp_path, i, stack):
    profile, fmt = PROFILES[i % 3], FORMATS[(i // 3 + i) % 3]
    out = tmp_path / f"out.{fmt}"
    r = run(
        app,
        "--stack",
        stack,
        "--from-loadtest",
        LOADTEST,
        "--profile",
        profile,
        "--start",
        START,
        "--format",
        fmt,
        "-o",
        str(out),
    )
    assert r.exit_code == 0, r.output  # the load test's SLO is reported, not checked (no --slo-ttft-ms)
    text = out.read_text()
    if fmt == "json":
        doc = json.loads(text)
        row = doc["timeline"][0]
        assert {"time", "serving", "booting", "draining", "queue_per_node", "p95_wait_s"} <= set(row)
        assert {"cost", "node_hours", "seconds_over_slo", "time_to_peak_nodes_s"} <= set(doc["summary"])
        assert doc["summary"]["cost"]["currency"] in ("CNY", "USD") and doc["summary"]["node_hours"]
        assert doc["summary"]["slo_ttft_ms"] == 1500  # the load test's SLO (its slo_p95_ms)
    elif fmt == "html":
        assert text.startswith("<!doctype html>") and text.count("<svg") == 4 and "http" not in text.split("<body>")[0]
    else:
        assert "cost of the trace" in text and "declared reaction" in text


def test_a_trace_file_both_clouds(app, tmp_path):
    trace = tmp_path / "trace.csv"
    rows = ["time,requests_per_s,output_tokens"]
    rows += [f"{t},{(40 if 1800 <= t < 3600 else 5)},128" for t in range(0, 7200, 60)]
    trace.write_text("\n".join(rows) + "\n")
    # a Sunday morning: no declared schedule fires in these two hours (by default the trace starts at the next whole
    # hour, and at 01:00 UTC on a weekday the business-day schedule raised the group to 4 nodes before the peak: the
    # run at 00:07 UTC on a Monday met the SLO and exited 0)
    sunday = "2026-12-06T03:00:00Z"
    for stack in ("alicloud-cn-hangzhou-prod", "tencentcloud-ap-guangzhou-prod"):
        r = run(app, "--stack", stack, "--qps-per-node", "13.8", "--trace", str(trace), "--slo-ttft-ms", "2000",
                "--start", sunday, "--json")  # fmt: skip
        assert r.exit_code == 1, r.output  # 40 req/s on 2 nodes of 13.8 queues until the scale-out serves
        doc = json.loads(r.output)
        assert len(doc["timeline"]) == 120 and doc["summary"]["scale_outs"] >= 1
        assert abs(doc["summary"]["output_tokens_served"] - doc["summary"]["requests_served"] * 128) < 128
        assert doc["summary"]["cost"]["per_million_output_tokens"]


def test_a_peak_beyond_the_groups_max_says_what_it_needs(app, tmp_path):
    """The peak's node count was capped at the groups' max: 10,000 req/s on a fleet of at most 8 'needed 8 nodes'."""
    trace = tmp_path / "trace.csv"
    trace.write_text("time,requests_per_s\n0,10000\n60,10000\n")
    # a Monday's business day (business-day holds the groups' own max 8), not the next hour, which may be night's 4
    args = (
        "--stack",
        "alicloud-cn-hangzhou-prod",
        "--qps-per-node",
        "13.75",
        "--trace",
        str(trace),
        "--start",
        "2026-12-07T03:00:00Z",
    )
    doc = json.loads(run(app, *args, "--json").output)
    assert doc["summary"]["peak_nodes_needed"] == 728 and doc["summary"]["nodes_max"] == 8
    assert doc["summary"]["nodes_max_at_peak"] == 8 and doc["summary"]["max_at_peak_set_by"] == []
    assert "peak 10000 req/s needs 728 nodes, more than the groups' max of 8; never reached" in run(app, *args).output


@pytest.mark.parametrize(
    "stack, cron",
    [("alicloud-cn-hangzhou-prod", "'0 14 * * *' UTC"), ("tencentcloud-ap-guangzhou-prod", "'0 22 * * *' UTC+8")],
)
def test_a_peak_beyond_a_schedules_max_names_the_schedule(app, tmp_path, stack, cron):
    """60 req/s at night needs 5 nodes; the night schedule holds the group at max 4: the summary said "nodes_max 8,
    never reached" without a word of the schedule. It names it (as the provider reads its cron), and the time to the
    peak's nodes is the time to the max the schedule leaves, as it is for the groups' own max."""
    trace = tmp_path / "night.csv"
    trace.write_text("time,requests_per_s\n0,60\n7200,60\n")
    args = ("--stack", stack, "--qps-per-node", "13.768", "--trace", str(trace), "--start", "2026-12-07T16:00:00Z")
    s = json.loads(run(app, *args, "--json").output)["summary"]
    assert (s["peak_nodes_needed"], s["nodes_max"], s["nodes_max_at_peak"], s["peak_serving"]) == (5, 8, 4, 4)
    (held,) = s["max_at_peak_set_by"]
    assert held["schedule"] == "llm-prod-asg-schedule-night" and held["max"] == 4 and f"{held['cron']!r} {held['zone']}" == cron
    assert s["time_to_peak_nodes_s"] is not None
    text = run(app, *args).output
    assert (
        f"peak 60 req/s needs 5 nodes, more than the groups' max of 4 while schedule llm-prod-asg-schedule-night ({cron}, "
        "max 4) holds them (8 without it); the max was reached" in " ".join(text.split())
    )
    html = run(app, *args, "--format", "html").output
    assert "while schedule llm-prod-asg-schedule-night" in html
    # by day business-day holds the groups' own max: nothing to name
    day = json.loads(run(app, *args[:-1], "2026-12-07T03:00:00Z", "--json").output)["summary"]
    assert day["nodes_max_at_peak"] == 8 and day["max_at_peak_set_by"] == []


@pytest.mark.parametrize(
    "args, says",
    [
        (("--profile", "weekly", "--qps-per-node", "5"), "--profile: unknown 'weekly'"),
        (("--profile", "day"), "--qps-per-node / --from-loadtest: give exactly one"),
        # the profile was ignored (the trace is the traffic)
        (("--qps-per-node", "5", "--trace", str(ROOT / "README.md"), "--profile", "spike"), "--profile: not used with --trace"),
        (("--qps-per-node", "5", "--start", "2026-12-07T09:00"), "--start:"),
        (("--qps-per-node", "5", "--reclaim-at", "soon"), "--reclaim-at: 'soon'"),
        (("--qps-per-node", "5", "--reclaim-at", "nan"), "--reclaim-at: must be a finite number"),
        (("--qps-per-node", "5", "--reclaim-at", ",,"), "--reclaim-at: ',,' names no time"),  # was read as no reclaims
        # at most one reclaim a profile step (1e9 was an OOM kill, 1e7 a MemoryError, nan ran)
        (("--qps-per-node", "5", "--reclaim-per-hour", "1e9"), "--reclaim-per-hour: must be at most 360"),
        (("--qps-per-node", "5", "--reclaim-per-hour", "1e7"), "--reclaim-per-hour: must be at most 360"),
        (("--qps-per-node", "5", "--reclaim-per-hour", "-1"), "--reclaim-per-hour: must be at least 0"),
        (("--qps-per-node", "5", "--reclaim-per-hour", "nan"), "'--reclaim-per-hour': nan is not a finite number"),
        (("--qps-per-node", "5", "--start", "9999-12-31T23:00:00Z"), "--start: 9999-12-31T23:00:00+00:00 plus"),
        (("--qps-per-node", "5", "--start", "0001-01-01T00:00:00Z"), "start between 0001-01-03 and"),
        # a pay-as-you-go fleet has no spot node to reclaim: the reclaims did nothing and the day passed (exit 0)
        (("--qps-per-node", "5", "--reclaim-at", "3600"), "--reclaim-at: alicloud-cn-hangzhou-prod launches no spot node"),
        (("--qps-per-node", "5", "--reclaim-per-hour", "2"), "--reclaim-per-hour: alicloud-cn-hangzhou-prod launches no spot"),
    ],
)
def test_bad_options_exit_2(tmp_path, args, says):
    out = tmp_path / "never.json"
    r = cli("--stack", "alicloud-cn-hangzhou-prod", *args, "--json", "-o", str(out))
    assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not out.exists()


def test_a_bad_trace_exits_2_naming_row_and_column(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("time,requests_per_s\n0,1\n60,-3\n")
    out = tmp_path / "never.json"
    r = cli("--stack", "alicloud-cn-hangzhou-prod", "--qps-per-node", "5", "--trace", str(trace), "--json", "-o", str(out))
    assert r.returncode == 2 and f"{trace}: row 2: requests_per_s:" in r.stderr and not out.exists(), r.stderr


def _all_errors(d):
    for lv in d["levels"]:
        lv["error_rate"], lv["errors"] = 1.0, lv["requests"]


LOADTEST_FAULTS = [  # (change to the example load test, what the refusal names)
    (lambda d: d["levels"][2].update(ttft_ms="x"), "levels.2.ttft_ms: expected a mapping"),
    (lambda d: d["levels"][2].update(ttft_ms=[1]), "levels.2.ttft_ms: expected a mapping"),
    (lambda d: d["levels"][1]["latency_ms"].update(p95="slow"), "levels.1.latency_ms.p95: must be a number"),
    (lambda d: d["levels"][1].update(concurrency=True), "levels.1.concurrency: must be a number"),
    (lambda d: d["knee"].update(requests_per_s=1e300), "knee.requests_per_s: must be at most 1e+09"),
    # plan scaling: an OverflowError traceback (tokens served); cost tokens already capped it
    (lambda d: d["levels"][2].update(output_tokens_per_s=1e308), "levels.2.output_tokens_per_s: must be at most 1e+09"),
    (lambda d: d["knee"].update(requests_per_s=True), "knee.requests_per_s: must be a number"),
    (lambda d: d["knee"].update(requests_per_s=99.0), "knee: does not match the levels: 99 requests/s"),
    (lambda d: d["knee"].update(concurrency=8), "knee.concurrency: 8 names no level"),
    (
        lambda d: d["levels"][3]["latency_ms"].update(p95=None) or d["knee"].update(concurrency=32, requests_per_s=13.484),
        "has no p95 latency",
    ),
    (lambda d: d["knee"].update(concurrency=32, requests_per_s=13.484), "p95 latency 2244 ms, above the SLO of 1500 ms"),
    (lambda d: d.update(slo_p95_ms=None), "the result has no slo_p95_ms"),
    (lambda d: d.update(slo_p95_ms=True), "slo_p95_ms: must be a number"),
    (_all_errors, "levels.2 (concurrency 16) had errors"),
    # a level measured twice was accepted (and one copy silently chosen as the knee's)
    (lambda d: d["levels"].insert(1, dict(d["levels"][0])), "levels.1.concurrency: 1 repeats levels.0"),
    (lambda d: d["levels"].append(dict(d["levels"][2])), "levels.4.concurrency: 16 repeats levels.2"),
]


@pytest.mark.parametrize("command", ["scaling", "capacity"])
@pytest.mark.parametrize("change, says", LOADTEST_FAULTS)
def test_plan_scaling_and_capacity_refuse_the_same_bad_load_test(tmp_path, command, change, says):
    doc = json.loads(Path(LOADTEST).read_text())
    change(doc)
    bad = tmp_path / "lt.json"
    bad.write_text(json.dumps(doc))
    out = tmp_path / "never.json"
    args = ("--stack", "alicloud-cn-hangzhou-prod") if command == "scaling" else ("--peak-qps", "40")
    r = subprocess.run(
        [sys.executable, "-c", "from gpufleet.cli import main; main()", "plan", command, *args, "--from-loadtest", str(bad)]
        + ["--json", "-o", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert r.returncode == 2 and f"error {bad}: " in r.stderr and says in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    "rows, says",
    [
        (
            "0,5\n31536000000,5\n",
            "row 2: time: the trace lasts 7.3e+05 days (each row lasts the step to the next): at most 578.7 days",
        ),  # ran for hours
        ("0,5\n1e15,5\n", "row 2: time: '1e15' is out of range"),  # was an OverflowError
    ],
)
def test_a_trace_too_long_or_out_of_range_exits_2_before_simulating(tmp_path, rows, says):
    trace = tmp_path / "t.csv"
    trace.write_text("time,requests_per_s\n" + rows)
    out = tmp_path / "never.json"
    r = cli("--stack", "alicloud-cn-hangzhou-prod", "--qps-per-node", "5", "--trace", str(trace), "--json", "-o", str(out))
    assert r.returncode == 2 and f"{trace}: {says}" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not out.exists()


@pytest.mark.chromium
def test_chart_in_chromium(app, tmp_path):
    page = tmp_path / "day.html"
    r = step(app, "alicloud-cn-hangzhou-prod", "--format", "html", "-o", str(page))
    assert r.exit_code in (0, 1), r.output
    cmd = [
        require("chromium"),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    dom = subprocess.run([*cmd, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=90).stdout
    assert dom.count("<polyline") >= 5 and "SLO 1500 ms" in dom
    shot = tmp_path / "shot.png"
    subprocess.run([*cmd, f"--screenshot={shot}", "--window-size=1000,1150", page.as_uri()], capture_output=True, timeout=90)
    assert shot.exists() and shot.stat().st_size > 10_000


@pytest.mark.parametrize("slo", [None, "300"])
def test_every_format_says_the_same_about_the_slo(app, tmp_path, slo):
    """The HTML said "seconds over SLO: 0" when no SLO was given, while the table said none was and the TTFT ran to
    thousands of seconds."""
    trace = tmp_path / "over.csv"
    trace.write_text("time,requests_per_s\n" + "".join(f"{t},{200 if t < 1800 else 0}\n" for t in range(0, 3600, 60)))
    args = ["--stack", "alicloud-cn-hangzhou-prod", "--qps-per-node", "13.768", "--trace", str(trace), "--start", START]
    args += ["--slo-ttft-ms", slo] if slo else []
    said = {}
    for fmt in FORMATS:
        out = tmp_path / f"out.{fmt}"
        r = run(app, *args, "--format", fmt, "-o", str(out))
        assert r.exit_code == (1 if slo else 0), r.output
        said[fmt] = out.read_text()
    s = json.loads(said["json"])["summary"]
    line = "no TTFT SLO given (--slo-ttft-ms)" if slo is None else f"over the TTFT SLO (300 ms): {s['seconds_over_slo']:g} s"
    assert s["slo_ttft_ms"] == (None if slo is None else 300) and (slo is None or s["seconds_over_slo"] > 0)
    assert line in said["table"] and f"<li>{line}</li>" in said["html"]
    assert "seconds over SLO: 0" not in said["html"]


def test_options_the_trace_makes_moot_exit_2(tmp_path):
    """A reclaim after the trace's end ran clean, as if the fleet had coped; a --start beside a trace with its own ISO
    times was dropped without a word (as --profile with --trace is refused, so are these)."""
    spot = tmp_path / "Pulumi.alicloud-cn-hangzhou-prod-spot.yaml"
    prod = (ROOT / "stacks" / "Pulumi.alicloud-cn-hangzhou-prod.yaml").read_text()
    assert "billing: {model: payg}" in prod
    spot.write_text(prod.replace("billing: {model: payg}", "billing: {model: spot, on_demand_base: 2}"))
    iso = tmp_path / "iso.csv"
    iso.write_text("time,requests_per_s\n2026-12-07T09:00:00+08:00,5\n2026-12-07T09:00:10+08:00,5\n")
    out = tmp_path / "never.json"
    step = ("--stack", str(spot), "--qps-per-node", "13.768", "--profile", "step", "--start", START)
    cases = [
        ((*step, "--reclaim-at", "4200,18000"), "--reclaim-at: 18000 s: the trace lasts 18000 s (5 h), a reclaim at or after"),
        (
            ("--stack", "alicloud-cn-hangzhou-dev", "--qps-per-node", "10", "--trace", str(iso), "--start", START),
            f"--start: not used with --trace {iso}, whose rows carry their own ISO times (the trace starts at 2026-12-07T01:00",
        ),
    ]
    for args, says in cases:
        r = cli(*args, "--json", "-o", str(out))
        assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert not out.exists()
    assert cli(*step, "--reclaim-at", "4200", "--json", "-o", str(out)).returncode in (0, 1) and out.exists()


def test_a_load_test_of_another_configuration_is_warned_of_as_cost_tokens_warns(app):
    """The T4 stack was simulated at the A10 knee (examples/loadtest-example.json measured alicloud prod) without a word."""
    r = step(app, "tencentcloud-ap-guangzhou-dev", "--json")
    notes = json.loads(r.output)["notes"]
    assert f"WARNING {LOADTEST}: gpu: measured with '1x A10', the stack has '1x T4'" in notes
    assert (
        "WARNING the simulation runs tencentcloud-ap-guangzhou-dev's nodes at throughput measured on another configuration"
        in notes
    )
    own = run(
        app, "--stack", "alicloud-cn-hangzhou-prod", "--from-loadtest", LOADTEST, "--profile", "step", "--start", START, "--json"
    )
    assert not [n for n in json.loads(own.output)["notes"] if n.startswith("WARNING")]  # measured on that stack


def test_a_trace_that_ends_with_a_queue_says_its_backlog_and_seconds_show_below_a_minute(app, tmp_path):
    """A trace ending with 146,700 requests queued said nothing of them, and a 10 s trace's rows read the same minute."""
    trace = tmp_path / "over.csv"
    trace.write_text("time,requests_per_s\n" + "".join(f"{t},200\n" for t in range(0, 600, 10)))
    args = ("--stack", "alicloud-cn-hangzhou-prod", "--qps-per-node", "13.768", "--trace", str(trace), "--start", START)
    s = json.loads(run(app, *args, "--json").output)["summary"]
    assert s["queue_at_end"] > 0 and s["requests_served"] + s["queue_at_end"] == pytest.approx(s["requests_arrived"], rel=1e-6)
    said = f"backlog at the end: {s['queue_at_end']:g} requests still queued (served {s['requests_served']:g} of 120000"
    table = " ".join(run(app, *args).output.split())  # the runner's 80 columns wrap the line
    assert said in table and "12-07 00:00:20" in table  # 30 of the 60 rows: every 20 s
    page = tmp_path / "over.html"
    run(app, *args, "--format", "html", "-o", str(page))
    assert said in page.read_text()


def test_slo_ttft_ms_given_is_the_one_checked_and_must_be_above_0(app, capsys):
    """--slo-ttft-ms's help: "TTFT objective to check; default: the load test's p95 SLO". Given with --from-loadtest,
    the objective is the one given (the load test's slo_p95_ms, read from the file, only when none is); 0 ms is no
    objective ("must be above 0", exit 2, naming the option)."""
    from gpufleet.cli import main

    measured = json.loads(Path(LOADTEST).read_text())["slo_p95_ms"]
    given = 3_600_000.0  # an hour: above the TTFT the step profile's queue reaches on the dev stack (1 node), met: exit 0
    assert given != measured
    for extra, slo in (([], measured), (["--slo-ttft-ms", "3600000"], given)):
        r = step(app, "alicloud-cn-hangzhou-dev", *extra, "--json")
        assert r.exit_code == 0, r.output
        assert json.loads(r.stdout)["summary"]["slo_ttft_ms"] == slo
    args = ["plan", "scaling", "--stack", "alicloud-cn-hangzhou-dev", "--from-loadtest", LOADTEST, "--slo-ttft-ms", "0"]
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(args)
    captured = capsys.readouterr()
    assert exc.value.code == 2 and captured.out == "" and "Traceback" not in captured.err
    assert "error --slo-ttft-ms: must be above 0" in captured.err, captured.err


def test_a_long_simulation_says_how_long_before_it_starts(tmp_path):
    """Review F12: a 44-byte trace of 289 days ran 51 s without a word. Over a week of simulated time the command
    says first how many days it simulates and about how long that takes (docs/simulation.md: about 0.2 s a day)."""
    from gpufleet.simulate import run as sim_run

    days = 8
    trace = tmp_path / "t.csv"
    trace.write_text(f"time,requests_per_s\n0,1\n{days * 86400 // 2},2\n")
    said: list[str] = []
    doc = sim_run.for_stack(STACKS[0], _given_capacity(), trace, say=said.append, priced=False)
    assert said == [f"simulating {days:g} days of {trace} (about 0.2 s a simulated day, so about 2 s; docs/simulation.md)"]
    assert doc["timeline"]
    said.clear()
    trace.write_text("time,requests_per_s\n0,1\n3600,2\n")
    sim_run.for_stack(STACKS[0], _given_capacity(), trace, say=said.append, priced=False)
    assert said == []  # a short one runs at once, as before


def _given_capacity():
    from gpufleet.simulate import capacity

    return capacity.given(5.0, "given")
