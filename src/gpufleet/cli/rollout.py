"""`gpufleet rollout start|status|step|promote|abort|finish`: a safe model rollout (docs/rollout.md). The logic lives
in gpufleet.rollout; this module reads the options and prints the report."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from gpufleet.cli import options, renderers
from gpufleet.errors import Problem, UserError, console, one_line, print_problems
from gpufleet.secret import Secret, redact_url

# Engines (and costly standard modules such as importlib.metadata) are imported inside the functions that use them,
# not at the top (issue 25's rule, measured): `gpufleet` imports every command module to parse its arguments and build
# its help, and importing every engine there (pulumi and the providers, jinja2, the cost, image, rollout and simulation
# pipelines) took about 215 ms against 33 ms for the command modules alone (`python -X importtime`, 2026-12-06), on
# every command, `--help` included.

FORMATS = ("table", "json")
EXAMPLE = "examples/Pulumi.alicloud-cn-hangzhou-prod-rollout.yaml"  # a stack with a rollout section (ships in examples/)


def register(app: typer.Typer) -> None:
    sub = typer.Typer(
        rich_markup_mode=None,
        no_args_is_help=True,
        help="Roll a new model, image or vLLM version out to a fleet: canary or blue/green steps gated on the live "
        "endpoints (errors, latency, TTFT, vLLM queue and KV cache, answers), automatic rollback (docs/rollout.md).\n\n"
        "Exit codes: 0 done; 1 a gate failed and the candidate was rolled back, or a change is recorded and not finished (a "
        "`pulumi up` or a write failed: the message names the command that finishes it); 2 bad input or refused.\n\n"
        "\b\nExamples:\n"
        f"  gpufleet rollout start --stack {EXAMPLE}\n"
        f"  gpufleet rollout step --stack {EXAMPLE} --current-url http://10.20.1.11:8000 "
        "--candidate-url http://10.20.2.7:8000 --api-key-env VLLM_API_KEY\n"
        f"  gpufleet rollout status --stack {EXAMPLE} --format json",
    )
    sub.command("start")(start_cmd)
    sub.command("status")(status_cmd)
    sub.command("step")(step_cmd)
    sub.command("promote")(promote_cmd)
    sub.command("abort")(abort_cmd)
    sub.command("finish")(finish_cmd)
    app.add_typer(sub, name="rollout")


# ---- shared options ------------------------------------------------------------------------------------------------


def _url(flag: str, help: str, required: bool = True):
    return typer.Option(... if required else None, flag, metavar="URL", help=help)


CURRENT_URL = "the current group's own endpoint: a node of it (http://NODE:serving.port) or its own listener"
CANDIDATE_URL = "the candidate group's own endpoint: a node of it or its own listener (not the shared load balancer)"
METRICS_URL = "vLLM Prometheus metrics (default: the node gateway's http://HOST:serving.gateway.metrics_port/metrics/vllm)"


def _say():
    """How a command says what it does, on standard error: one line each, a newline or a terminal escape in it (from
    --reason, a gate's detail, pulumi's output) written as an escape (errors.one_line)."""
    err = console(stderr=True)
    return lambda text: err.print(one_line(text), soft_wrap=True)


def _escaped(x):
    """The report with each text escaped as errors.one_line does (an operator's --reason, a gate's detail, a server's
    answer, a path): the table prints what they hold, never a newline or a terminal escape of theirs."""
    if isinstance(x, str):
        return one_line(x)
    if isinstance(x, dict):
        return {k: _escaped(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_escaped(v) for v in x]
    return x


def _context(stack: str, say=None):
    """The rollout context of a stack: its file, project, rollout section; the fleet for the gates.

    The stack is validated as `gpufleet preview` and the Pulumi program validate it, the sizing checks of both groups
    included (the model fits the GPU, the vLLM flags are the pinned vLLM's): a candidate that could not serve is refused
    (exit 2) before anything is written, by every command that changes the stack file. `abort` too: its rollback is
    deployed by the Pulumi program, which runs the same checks (stacks/__main__.py): an abort let through would write a
    change whose `pulumi up` then fails on the problem said here. (`status` reads the state file only.)"""
    from gpufleet.rollout.runner import Context
    from gpufleet.stacks import loader
    from gpufleet.stacks.project import project_root
    from gpufleet.validation import load_fleet

    fleet = load_fleet(stack)
    ctx = Context(
        stack=stack,
        stack_file=loader.stack_path(stack),
        project=project_root(),
        rollout=getattr(fleet.spec, "rollout", None),
        environ=dict(os.environ),
        say=say or _say(),
    )
    return ctx, fleet


# the gate's load: a few requests per node to compare two groups, not a load test (gpufleet loadtest measures one)
MAX_REQUESTS = 100_000
MAX_TOKENS = 32_768
MAX_DURATION_S = 3600.0

# A --*-url or --*-metrics-url with a user:password@: where it would end up (the URLs are recorded), and, for the
# serving URLs, the key's way in instead.
URL_CREDENTIALS = "which would be written to the state file and report"
KEY_INSTEAD = "give the key with --api-key-env or --api-key-file"

API_KEY_FILE_MAX = 64 * 1024  # an API key is one line; gpufleet's own cap on the file read for it


def _api_key(env_name: str | None, key_file: Path | None) -> str | None:
    from gpufleet.sizing import loadtest

    if env_name and key_file:
        raise UserError([Problem("--api-key-file", "", "give --api-key-env or --api-key-file, not both")])
    if key_file is None:
        return loadtest.api_key(env_name, os.environ)
    from gpufleet import inputs

    try:  # a folder, a device (/dev/zero was read without end), a file that is not UTF-8 (was a traceback)
        value = inputs.read_text(key_file, max_bytes=API_KEY_FILE_MAX).strip()
    except UserError as exc:
        raise UserError([Problem("--api-key-file", str(key_file), p.message) for p in exc.problems]) from None
    if not value or any(ord(ch) < 33 or ord(ch) == 127 for ch in value):
        raise UserError(
            [Problem("--api-key-file", str(key_file), "must hold one key: no spaces, no control characters, not empty")]
        )
    return value


def _endpoint(url: str) -> tuple:
    """What makes two URLs (checked before) the same server and path: scheme, host, port (the scheme's default when
    none is written) and the path without a trailing /."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme.lower())
    return (parts.scheme.lower(), (parts.hostname or "").lower(), port, parts.path.rstrip("/"), parts.query)


def _metrics_url(url: str, given: str | None, port: int, flag: str) -> str:
    """The metrics URL `given`, checked, else the node gateway's on the host of the group's `url` (checked before)."""
    from urllib.parse import urlsplit

    from gpufleet.sizing.loadtest import http_url

    if given:
        fix = "give the group's vLLM metrics, e.g. http://10.0.0.5:9180/metrics/vllm"
        http_url(given, flag, fix, URL_CREDENTIALS)
        return given  # its query string is requested as given, stored and shown as ?*** (measure.py)
    parts = urlsplit(url)
    host = f"[{parts.hostname}]" if ":" in (parts.hostname or "") else parts.hostname  # an IPv6 address
    return f"{parts.scheme}://{host}:{port}/metrics/vllm"


def _measure(
    ctx,
    fleet,
    *,
    current_url,
    candidate_url,
    current_metrics_url,
    candidate_metrics_url,
    api_key_env,
    api_key_file,
    prompts,
    concurrency,
    requests,
    max_tokens,
    timeout_s,
    max_duration_s,
):
    """The gates' measuring function of a step, every option checked first (all problems at once)."""
    from gpufleet.rollout import answers, gates, measure
    from gpufleet.rollout.runner import require_rollout
    from gpufleet.sizing import loadtest

    problems: list[Problem] = []

    def check(fn, *args):
        try:
            return fn(*args)
        except UserError as exc:
            problems.extend(exc.problems)
            return None

    rollout = check(require_rollout, ctx)

    usable: dict[str, bool] = {}  # group -> its URL passed the check
    for group, url in (("current", current_url), ("candidate", candidate_url)):
        try:  # the load test's own check
            usable[group] = bool(loadtest.chat_endpoint(url, f"--{group}-url", f"{URL_CREDENTIALS}; {KEY_INSTEAD}"))
        except UserError as exc:
            usable[group] = False
            problems.extend(exc.problems)
    key = check(_api_key, api_key_env, api_key_file)
    port = fleet.spec.serving.gateway.metrics_port

    def metrics_url(group: str, url: str, given: str | None) -> str | None:
        if not given and not usable[group]:
            return None  # the default is made from the group's URL, which is named above
        return check(_metrics_url, url, given, port, f"--{group}-metrics-url")

    cur_m = metrics_url("current", current_url, current_metrics_url)
    cand_m = metrics_url("candidate", candidate_url, candidate_metrics_url)
    # one endpoint for both groups: every gate compared a group with itself and passed (the canary moved on unmeasured)
    if usable["current"] and usable["candidate"] and _endpoint(current_url) == _endpoint(candidate_url):
        problems.append(
            Problem(
                "--candidate-url",
                "",
                f"{redact_url(candidate_url)} is the --current-url's endpoint: the gates would compare the current group "
                "with itself; give a node (or a listener) of the candidate group",
            )
        )
    elif cur_m and cand_m and _endpoint(cur_m) == _endpoint(cand_m):
        problems.append(
            Problem(
                "--candidate-metrics-url",
                "",
                f"{redact_url(cand_m)} is the current group's metrics URL too: the queue and KV-cache gates would read the "
                "current group as the candidate; give the candidate group's vLLM metrics",
            )
        )
    user_prompts = prompts or (_spec_prompts(ctx, rollout) if rollout is not None else None)
    ps = check(answers.load, user_prompts)
    for flag, value in (("--concurrency", concurrency), ("--requests", requests), ("--max-tokens", max_tokens)):
        if value < 1:
            problems.append(Problem(flag, "", f"must be 1 or more (got {value})"))
    most = loadtest.MAX_CONCURRENCY // 2  # both endpoints are loaded at once, one connection per worker
    if concurrency > most:
        problems.append(
            Problem(
                "--concurrency",
                "",
                f"{concurrency} is above {most}: the gate loads both endpoints at once with that many connections each "
                f"(a load test's cap is {loadtest.MAX_CONCURRENCY}); measure a node's capacity with `gpufleet loadtest` "
                "and give the gate a few requests in flight per node",
            )
        )
    if requests < concurrency:
        problems.append(
            Problem(
                "--requests",
                "",
                f"{requests} requests cannot keep {concurrency} in flight: give --requests {concurrency} or more",
            )
        )
    for flag, value, most in (("--requests", requests, MAX_REQUESTS), ("--max-tokens", max_tokens, MAX_TOKENS)):
        if value > most:
            problems.append(
                Problem(
                    flag,
                    "",
                    f"{value} is above {most}: the gate compares the two groups under a short load, a few requests per "
                    "node; measure a node's capacity with `gpufleet loadtest`",
                )
            )
    if not timeout_s > 0:
        problems.append(Problem("--timeout-s", "", f"must be a positive number of seconds (got {timeout_s:g})"))
    if not 0 < max_duration_s <= MAX_DURATION_S:
        problems.append(
            Problem(
                "--max-duration-s",
                "",
                f"must be a positive number of seconds, at most {MAX_DURATION_S:g} (got {max_duration_s:g})",
            )
        )
    if problems:
        raise UserError(problems)
    candidate = getattr(rollout, "candidate", None)
    cand_model = getattr(getattr(candidate, "model", None), "name", None) or fleet.spec.model.name
    cur = measure.Endpoint("current", current_url, fleet.spec.model.name, cur_m)
    cand = measure.Endpoint("candidate", candidate_url, cand_model, cand_m)
    load = measure.LoadSettings(
        concurrency=concurrency,
        requests=requests,
        max_tokens=max_tokens,
        timeout_s=timeout_s,
        max_duration_s=max(timeout_s, max_duration_s),
        health_path=fleet.spec.load_balancer.health_check.path,
        api_key=Secret(key) if key else None,
    )
    assert rollout is not None  # else a problem above
    t = gates.thresholds(rollout.gates, fleet.spec.autoscaling.queue.scale_out_above)

    def run():
        ctx.say(
            f"measuring: {requests} requests at concurrency {concurrency} on {current_url} and {candidate_url} (none "
            f"started after {load.max_duration_s:g} s), then {len(ps.prompts)} prompts"
        )
        gates_, figures = measure.gates(cur, cand, load, ps, t)
        if cut := _cut_by_time(figures, requests):
            ctx.say(
                f"the load stopped at --max-duration-s {load.max_duration_s:g} s: {cut} of {requests} asked; the gates "
                "judge the requests sent (a longer --max-duration-s, or fewer --requests, to send them all)"
            )
        return gates_, figures

    return run


def _cut_by_time(figures: dict, asked: int) -> str | None:
    """`N sent to the current group, M to the candidate` when the load's time limit stopped it short of `asked`."""
    traffic = figures.get("traffic") or {}
    sent = {g: (traffic.get(g) or {}).get("requests") for g in ("current", "candidate")}
    if all(isinstance(n, int) and n >= asked for n in sent.values()):
        return None
    return f"{sent['current']} sent to the current group, {sent['candidate']} to the candidate"


def _spec_prompts(ctx, rollout) -> Path | None:
    """rollout.gates.answers.prompts: a path relative to the project folder."""
    given = getattr(getattr(getattr(rollout, "gates", None), "answers", None), "prompts", None)
    if not given:
        return None
    path = Path(given)
    return path if path.is_absolute() else ctx.project / path


# ---- output --------------------------------------------------------------------------------------------------------


def _fmt(x) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x)


def _draw(report: dict):
    report = _escaped(report)

    def draw(c) -> None:
        from rich import box
        from rich.table import Table

        steps = " → ".join(f"{s}" for s in report.get("steps") or [])
        waiting = report.get("awaiting_deploy")
        where = f"candidate at {_fmt(report.get('weight'))} %" if report.get("weight") is not None else "candidate not deployed"
        if waiting:
            where += f"; the stack file has `{_describe(waiting['change'])}`, not yet deployed"
        c.print(
            f"rollout of {report['stack']} ({report.get('strategy')}; steps {steps} %): {report.get('status')}, {where}",
            soft_wrap=True,
        )
        if report.get("gates"):
            t = Table(title=f"gates before {report.get('to')}: {report.get('result')}", box=box.SIMPLE_HEAD, title_justify="left")
            for col, j in (
                ("gate", "left"),
                ("measured", "right"),
                ("threshold", "right"),
                ("result", "left"),
                ("detail", "left"),
            ):
                t.add_column(col, justify=j)  # type: ignore[arg-type]
            for g in report["gates"]:
                t.add_row(
                    g["name"],
                    _fmt(g["measured"]),
                    f"{g['op']} {g['threshold']:g}",
                    "pass" if g["passed"] else "FAIL",
                    g["detail"],
                )
            c.print(t)
        changed = ((report.get("figures") or {}).get("answers") or {}).get("changed") or []
        if changed:
            t = Table(title="answers that changed (lowest similarity first)", box=box.SIMPLE_HEAD, title_justify="left")
            for col in ("prompt", "similarity", "current", "candidate"):
                t.add_column(col)
            for ch in changed:
                t.add_row(ch["id"], f"{ch['similarity']:.2f}", ch["current"] or "(no answer)", ch["candidate"] or "(no answer)")
            c.print(t)
        if report.get("history"):
            t = Table(title="measurements", box=box.SIMPLE_HEAD, title_justify="left")
            for col in ("at", "command", "from", "to", "result", "failed gates"):
                t.add_column(col)
            for h in report["history"]:
                bad = ", ".join(g["name"] for g in h["gates"] if not g["passed"]) or "-"
                t.add_row(h["at"], h["command"], f"{_fmt(h['weight'])} %", h["to"], h["result"], bad)
            c.print(t)
        for line in report.get("declared") or []:
            c.print(f"declared: {line}", soft_wrap=True)
        if report.get("reason"):
            c.print(f"reason: {report['reason']}", soft_wrap=True)
        if report.get("retire_after") and report.get("status") == "promoted":
            c.print(
                f"the old group is kept until {report['retire_after']}; `gpufleet rollout finish --stack {report['stack_arg']}` after that"
            )
        if waiting:
            c.print("the Pulumi CLI is not on PATH: run", soft_wrap=True)
            for cmd in waiting["commands"]:
                c.print(f"  {cmd}", soft_wrap=True)
            nxt = _continue_with(report)
            more = " --current-url URL --candidate-url URL ..." if nxt == "step" else ""
            when = (
                " after the stack file's rollout.retire_after (the old group's keep window; --force: before it)"
                if waiting["change"].get("kind") == "promote"
                else ""
            )
            c.print(f"then `gpufleet rollout {nxt} --stack {report['stack_arg']}{more}`{when} to go on", soft_wrap=True)

    return draw


def _describe(change: dict) -> str:
    from gpufleet.rollout.plan import Change

    return Change.from_json(change).describe()


def _continue_with(report: dict) -> str:
    """The command that goes on once the printed deploy has run: a rollback is continued by abort, a promote (whose
    gates were measured: a step would ask for URLs it never uses) and a finish by finish, anything else by step."""
    change = (report.get("awaiting_deploy") or {}).get("change") or {}
    if report.get("result") == "failed" or report.get("command") == "abort" or change.get("kind") == "rollback":
        return "abort"
    return "finish" if change.get("kind") in ("promote", "finish") else "step"


def _run(command, ctx, *args) -> tuple[dict, str | None]:
    """A runner command: its report with what the stack file now declares (each group's nodes, per-node weight and
    the share they give, as `gpufleet preview` says it), and the error that ended it, if any: a `pulumi up` that failed
    (its last line) or a transition recorded and not finished (runner.Unfinished). Either is exit 1, after the report
    as far as the command got (the gates it measured) is printed or written to -o (_print)."""
    from gpufleet.rollout.deploy import DeployFailed
    from gpufleet.rollout.runner import Unfinished

    error = None
    try:
        report = command(ctx, *args)
    except DeployFailed as exc:
        error = f"{exc}; the stack file holds the change and the next `gpufleet rollout` command deploys it again"
        report = exc.report
    except Unfinished as exc:  # recorded, not finished: not 'bad input, nothing done'
        error, report = str(exc), exc.report
    if report is None:  # not raised inside a runner command: no report to print
        console(stderr=True).print(f"error {one_line(error or '')}", soft_wrap=True)
        raise typer.Exit(1)
    report["declared"] = _declared(ctx.stack)
    return report, error


def _declared(stack: str) -> list[str]:
    from gpufleet.stacks import rollout as steps
    from gpufleet.validation import load_fleet

    try:  # what the file declares, said after the command: the sizing checks (run before it) are not needed to say it
        return steps.notes(load_fleet(stack, sizing=False).spec)
    except UserError as exc:  # the file as written does not validate (it should: each step is checked when made)
        return [f"the stack file does not validate now: {exc.problems[0]}"]


def _inputs(stack: str, out: Path | None, *files: Path | None) -> tuple[Path | str | None, ...]:
    """What a rollout command reads, which its -o must not replace: the stack file (options.inputs), the rollout's
    state file and lock beside it, and `files` (--prompts, --api-key-file, the spec's prompts file)."""
    if out is None:
        return ()
    from gpufleet.rollout.state import paths
    from gpufleet.stacks.loader import stack_path

    return options.inputs(out, [stack], *paths(stack_path(stack), stack), *files)


def _print(ran: tuple[dict, str | None], fmt: str, as_json: bool, out: Path | None) -> None:
    """Print (or write to -o) a command's report (_run); exit 1 after a failed gate or an error that ended the command.
    That error's line comes after the report, and is said even when -o cannot be written (exit 1 all the same)."""
    report, error = ran
    chosen = options.chosen_format(fmt, as_json, FORMATS, out)
    try:
        renderers.render(
            chosen, out, json=renderers.Json(lambda: report, ensure_ascii=False), table=renderers.Draw(_draw(report))
        )
    except UserError as exc:
        if error is None:
            raise
        console(stderr=True).print(f"error {one_line(error)}", soft_wrap=True)
        print_problems(exc.problems, console(stderr=True))
        raise typer.Exit(1) from None
    if error is not None:
        console(stderr=True).print(f"error {one_line(error)}", soft_wrap=True)
        raise typer.Exit(1)
    if report.get("result") == "failed":
        raise typer.Exit(1)


# ---- commands ------------------------------------------------------------------------------------------------------


def start_cmd(
    stack: str = options.stack(),
    fmt: str = options.fmt(FORMATS),
    as_json: bool = options.json_alias(),
    out: Path | None = options.output(),
) -> None:
    """Start the rollout of the stack's `rollout:` section: the candidate group is deployed with weight 0 (step 0).

    Refused while another rollout of the stack is in progress.

    \b
    Examples:
      gpufleet rollout start --stack examples/Pulumi.alicloud-cn-hangzhou-prod-rollout.yaml
    """
    from gpufleet.rollout import runner

    options.chosen_format(fmt, as_json, FORMATS, out, _inputs(stack, out))
    ctx, _ = _context(stack)
    _print(_run(runner.start, ctx), fmt, as_json, out)


def status_cmd(
    stack: str = options.stack(),
    fmt: str = options.fmt(FORMATS),
    as_json: bool = options.json_alias(),
    out: Path | None = options.output(),
) -> None:
    """Where the rollout stands: status, weight, the last gates measured, a deploy awaited.

    \b
    Examples:
      gpufleet rollout status --stack examples/Pulumi.alicloud-cn-hangzhou-prod-rollout.yaml --format json
    """
    from gpufleet.rollout import runner
    from gpufleet.stacks import loader
    from gpufleet.stacks.project import project_root

    chosen = options.chosen_format(fmt, as_json, FORMATS, out, _inputs(stack, out))
    loader.read_stack_config(stack)  # a missing stack is named like everywhere else
    ctx = runner.Context(stack, loader.stack_path(stack), project_root(), None, dict(os.environ), say=_say())
    report = runner.status(ctx)
    renderers.render(chosen, out, json=renderers.Json(lambda: report, ensure_ascii=False), table=renderers.Draw(_draw(report)))


# the options of the two commands that measure the gates (step, promote): one definition each
O_CURRENT_URL = _url("--current-url", CURRENT_URL)
O_CANDIDATE_URL = _url("--candidate-url", CANDIDATE_URL)
O_CURRENT_METRICS = _url("--current-metrics-url", "the current group's " + METRICS_URL, required=False)
O_CANDIDATE_METRICS = _url("--candidate-metrics-url", "the candidate group's " + METRICS_URL, required=False)
O_KEY_ENV = typer.Option(None, "--api-key-env", metavar="NAME", help="NAME of the environment variable holding the API key")
O_KEY_FILE = typer.Option(
    None, "--api-key-file", metavar="FILE", parser=options.path, help="a file holding the API key (never printed)"
)
O_PROMPTS = typer.Option(
    None,
    "--prompts",
    metavar="FILE",
    parser=options.path,
    help="your answer-regression prompts (YAML or .jsonl), added to the shipped set (default: rollout.gates.answers.prompts)",
)
O_CONCURRENCY = typer.Option(4, "--concurrency", metavar="N", help="requests in flight on each endpoint during the gate's load")
O_REQUESTS = typer.Option(
    40, "--requests", metavar="N", help=f"requests sent to each endpoint during the gate's load (at most {MAX_REQUESTS})"
)
O_MAX_TOKENS = typer.Option(64, "--max-tokens", metavar="N", help=f"max_tokens of each load request (at most {MAX_TOKENS})")
O_TIMEOUT = options.real(60.0, "--timeout-s", metavar="S", help="per request, connect to last token")
O_MAX_DURATION = options.real(
    60.0,
    "--max-duration-s",
    metavar="S",
    help=f"the gate's load starts no request after S seconds (at least --timeout-s; at most {MAX_DURATION_S:g}); "
    "a load cut short says so",
)


def _gated(command, stack: str, fmt: str, as_json: bool, out: Path | None, **gate_options) -> None:
    """step / promote: check the options, measure the gates, run the command, print the report."""
    ctx, fleet = _context(stack)
    files = gate_options["prompts"], gate_options["api_key_file"], _spec_prompts(ctx, ctx.rollout)
    options.chosen_format(fmt, as_json, FORMATS, out, _inputs(stack, out, *files))
    _print(_run(command, ctx, _measure(ctx, fleet, **gate_options)), fmt, as_json, out)


def step_cmd(
    stack: str = options.stack(),
    current_url: str = O_CURRENT_URL,
    candidate_url: str = O_CANDIDATE_URL,
    current_metrics_url: str | None = O_CURRENT_METRICS,
    candidate_metrics_url: str | None = O_CANDIDATE_METRICS,
    api_key_env: str | None = O_KEY_ENV,
    api_key_file: Path | None = O_KEY_FILE,
    prompts: Path | None = O_PROMPTS,
    concurrency: int = O_CONCURRENCY,
    requests: int = O_REQUESTS,
    max_tokens: int = O_MAX_TOKENS,
    timeout_s: float = O_TIMEOUT,
    max_duration_s: float = O_MAX_DURATION,
    fmt: str = options.fmt(FORMATS),
    as_json: bool = options.json_alias(),
    out: Path | None = options.output(),
) -> None:
    """Measure the gates and move the candidate to the next weight; a failed gate rolls back (exit 1).

    A deploy awaited from the previous command (no Pulumi CLI) is taken as done first.

    \b
    Examples:
      gpufleet rollout step --stack examples/Pulumi.alicloud-cn-hangzhou-prod-rollout.yaml --current-url http://10.20.1.11:8000 --candidate-url http://10.20.2.7:8000 --api-key-env VLLM_API_KEY
    """
    from gpufleet.rollout import runner

    gate_options = {k: v for k, v in locals().items() if k not in ("stack", "fmt", "as_json", "out", "runner")}
    _gated(runner.step, stack, fmt, as_json, out, **gate_options)


def promote_cmd(
    stack: str = options.stack(),
    current_url: str = O_CURRENT_URL,
    candidate_url: str = O_CANDIDATE_URL,
    current_metrics_url: str | None = O_CURRENT_METRICS,
    candidate_metrics_url: str | None = O_CANDIDATE_METRICS,
    api_key_env: str | None = O_KEY_ENV,
    api_key_file: Path | None = O_KEY_FILE,
    prompts: Path | None = O_PROMPTS,
    concurrency: int = O_CONCURRENCY,
    requests: int = O_REQUESTS,
    max_tokens: int = O_MAX_TOKENS,
    timeout_s: float = O_TIMEOUT,
    max_duration_s: float = O_MAX_DURATION,
    fmt: str = options.fmt(FORMATS),
    as_json: bool = options.json_alias(),
    out: Path | None = options.output(),
) -> None:
    """At the last step: measure the gates once more, then make the candidate the serving group (phase promoted).

    The old group stays at its minimum until retire_after = now + rollout.keep_previous_hours.

    \b
    Examples:
      gpufleet rollout promote --stack examples/Pulumi.alicloud-cn-hangzhou-prod-rollout.yaml --current-url http://10.20.1.11:8000 --candidate-url http://10.20.2.7:8000 --api-key-file ~/.gpufleet/prod-key
    """
    from gpufleet.rollout import runner

    gate_options = {k: v for k, v in locals().items() if k not in ("stack", "fmt", "as_json", "out", "runner")}
    _gated(runner.promote, stack, fmt, as_json, out, **gate_options)


def abort_cmd(
    stack: str = options.stack(),
    reason: str | None = typer.Option(None, "--reason", metavar="TEXT", help="why, recorded in the state file"),
    fmt: str = options.fmt(FORMATS),
    as_json: bool = options.json_alias(),
    out: Path | None = options.output(),
) -> None:
    """Roll back: the candidate's weight to 0, then the candidate group to 0 nodes.

    \b
    Examples:
      gpufleet rollout abort --stack examples/Pulumi.alicloud-cn-hangzhou-prod-rollout.yaml --reason "p99 up in the dashboard"
    """
    from gpufleet.rollout import runner

    options.chosen_format(fmt, as_json, FORMATS, out, _inputs(stack, out))
    ctx, _ = _context(stack)
    _print(_run(runner.abort, ctx, reason), fmt, as_json, out)


def finish_cmd(
    stack: str = options.stack(),
    force: bool = typer.Option(False, "--force", help="finish before retire_after (the old group goes at once)"),
    fmt: str = options.fmt(FORMATS),
    as_json: bool = options.json_alias(),
    out: Path | None = options.output(),
) -> None:
    """After the keep window: the fleet takes the candidate's settings and label; the old group is removed.

    \b
    Examples:
      gpufleet rollout finish --stack examples/Pulumi.alicloud-cn-hangzhou-prod-rollout.yaml
    """
    from gpufleet.rollout import runner

    options.chosen_format(fmt, as_json, FORMATS, out, _inputs(stack, out))
    ctx, _ = _context(stack)
    _print(_run(runner.finish, ctx, force), fmt, as_json, out)
