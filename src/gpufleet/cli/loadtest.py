"""`gpufleet loadtest`: measure one node's real capacity, for `gpufleet plan capacity --from-loadtest`."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console

from gpufleet.cli import options, renderers
from gpufleet.errors import Problem, UserError, console, one_line

# Engines (and costly standard modules such as importlib.metadata) are imported inside the functions that use them,
# not at the top (issue 25's rule, measured): `gpufleet` imports every command module to parse its arguments and build
# its help, and importing every engine there (pulumi and the providers, jinja2, the cost, image, rollout and simulation
# pipelines) took about 215 ms against 33 ms for the command modules alone (`python -X importtime`, 2026-12-06), on
# every command, `--help` included.

if TYPE_CHECKING:
    from rich.progress import TaskID


def register(app: typer.Typer) -> None:
    app.command("loadtest")(loadtest_cmd)


class _ProgressDisplay:
    """A bar per concurrency level on stderr, with the errors seen so far."""

    def __init__(self, console: Console):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            TextColumn("concurrency {task.fields[concurrency]:>4}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("errors {task.fields[errors]}"),
            TimeElapsedColumn(),
            console=console,
        )
        self.task: TaskID | None = None  # the current level's bar, from level_started
        self.errors = 0

    def level_started(self, concurrency: int, requests: int) -> None:
        self.task = self.progress.add_task("level", total=requests, concurrency=concurrency, errors=0)
        self.errors = 0

    def sample_done(self, sample) -> None:
        self.errors += not sample.ok
        assert self.task is not None  # samples come after their level_started
        self.progress.update(self.task, advance=1, errors=self.errors)

    def level_done(self, level: dict) -> None:
        # A level can stop early at --max-duration-s: show what it actually sent.
        assert self.task is not None  # level_done comes after its level_started
        self.progress.update(self.task, total=level["requests"], completed=level["requests"])


def _ms(x) -> str:
    return "-" if x is None else f"{x:.0f}"


def _table(result: dict):
    from rich import box
    from rich.table import Table

    t = Table(
        title=f"{result['model']} at {result['url']}",
        box=box.SIMPLE_HEAD,
        caption=f"conc: requests in flight; latency and TTFT (time to first token) in ms; output tokens from {result['token_count_source']}; "
        "* the knee",
    )
    for col in ("conc", "reqs", "errors", "req/s", "tok/s", "p50", "p95", "p99", "TTFT50", "TTFT95"):
        t.add_column(col, justify="right")
    knee = (result["knee"] or {}).get("concurrency")
    for lv in result["levels"]:
        lat, ttft = lv["latency_ms"], lv["ttft_ms"]
        mark = " *" if lv["concurrency"] == knee else ""
        t.add_row(
            f"{lv['concurrency']}{mark}",
            str(lv["requests"]),
            f"{lv['errors']} ({lv['error_rate']:.0%})",
            f"{lv['requests_per_s']:.2f}",
            f"{lv['output_tokens_per_s']:.1f}",
            _ms(lat["p50"]),
            _ms(lat["p95"]),
            _ms(lat["p99"]),
            _ms(ttft["p50"]),
            _ms(ttft["p95"]),
        )
    return t


FORMATS = ("table", "json")


def loadtest_cmd(
    url: str = typer.Option(
        ...,
        "--url",
        metavar="URL",
        help="one node's base URL, e.g. http://10.0.0.5:8000 (a load balancer's measures the whole fleet)",
    ),
    model: str = typer.Option(..., "--model", metavar="NAME", help="the model name the server serves (GET /v1/models)"),
    stack: str | None = options.stack(
        required=False,
        help="the stack the node belongs to (name or Pulumi.<name>.yaml): its instance type, GPU and serving flags are "
        "recorded in the result, and `cost tokens` warns when the stack changes",
    ),
    concurrency: str = typer.Option(
        "1,10,20,50", "--concurrency", metavar="LIST", help="requests in flight, one level after another"
    ),
    requests: int = typer.Option(100, "--requests", metavar="N", help="requests per level"),
    max_tokens: int = typer.Option(256, "--max-tokens", metavar="N", help="max_tokens of each request"),
    prompt: str | None = typer.Option(None, "--prompt", metavar="TEXT", help="the user message (default: a short-story prompt)"),
    api_key_env: str | None = typer.Option(
        None, "--api-key-env", metavar="NAME", help="NAME of the environment variable holding the API key"
    ),
    slo_p95_ms: float | None = options.real(
        None, "--slo-p95-ms", metavar="MS", help="latency target: the knee is the highest concurrency within it"
    ),
    timeout_s: float = options.real(120.0, "--timeout-s", metavar="S", help="per request, connect to last token"),
    max_duration_s: float = options.real(300.0, "--max-duration-s", metavar="S", help="per level: no request starts after this"),
    fmt: str = options.fmt(FORMATS),
    as_json: bool = options.json_alias(),
    out: Path | None = options.output(),
    save_json: Path | None = typer.Option(
        None,
        "--save-json",
        metavar="FILE",
        parser=options.path,
        help="also write the result JSON here, whatever --format prints (for plan capacity / cost tokens --from-loadtest)",
    ),
) -> None:
    """Streaming chat completions at rising concurrency: requests/s, tokens/s, latency and TTFT percentiles, the knee.

    Exit 1 when a level had no successful request (the result is still written); exit 2 on bad input.

    \b
    Examples:
      gpufleet loadtest --url http://10.0.0.5:8000 --model Qwen/Qwen2.5-7B-Instruct --slo-p95-ms 8000
      gpufleet loadtest --url http://10.0.0.5:8000 --model Qwen/Qwen2.5-7B-Instruct -s alicloud-cn-hangzhou-prod --save-json lt.json
    """
    from gpufleet.files import is_stdout, output_problems, same_file, write_atomic
    from gpufleet.sizing import loadstats, loadtest

    problems = output_problems(save_json, flag="--save-json", reads=options.inputs(save_json, [stack])) if save_json else []
    if save_json and out is not None and not is_stdout(out) and same_file(out, save_json):
        problems.append(Problem("-o", str(out), "is also --save-json: the two would overwrite each other; give two files"))
    try:
        chosen = options.chosen_format(fmt, as_json, FORMATS, out, options.inputs(out, [stack]))
    except UserError as exc:
        problems += exc.problems
    try:
        s = loadtest.settings(
            url=url,
            model=model,
            concurrency=concurrency,
            requests=requests,
            max_tokens=max_tokens,
            api_key_env=api_key_env,
            slo_p95_ms=slo_p95_ms,
            timeout_s=timeout_s,
            max_duration_s=max_duration_s,
            prompt=prompt,
            environ=os.environ,
        )
    except UserError as exc:
        problems = exc.problems + problems
    record = None
    if stack is not None:
        from gpufleet.validation import load_fleet

        try:
            record = loadtest.stack_record(load_fleet(stack, sizing=False))
        except UserError as exc:
            problems += exc.problems
    if problems:
        raise UserError(problems)
    display = _ProgressDisplay(console(stderr=True))
    with display.progress:
        import asyncio

        result = asyncio.run(loadtest.run(s, display, record))
    text = json.dumps(result, indent=2) + "\n"
    if save_json:
        write_atomic(save_json, text, flag="--save-json")

    def draw(c) -> None:
        c.print(_table(result))
        c.print(loadstats.knee_note(result))
        for lv in result["levels"]:
            for e in lv["top_errors"]:
                c.print(f"  concurrency {lv['concurrency']}: {e['count']}x {one_line(str(e['message']))}", highlight=False)
        if save_json:
            shown = one_line(str(save_json))
            c.print(f"wrote {shown}: gpufleet plan capacity --peak-qps X --from-loadtest {shown}")

    # on standard output as wide as the terminal; in -o FILE 200 columns (figures are never cut)
    renderers.render(chosen, out, json=renderers.Json(lambda: result), table=renderers.Draw(draw, file_width=200))
    _exit_if_a_level_failed(result, None)


def failed_levels(result: dict) -> list[int]:
    """Concurrency of each level in which no request succeeded (a check failed: exit 1)."""
    return [lv["concurrency"] for lv in result["levels"] if lv["requests"] == 0 or lv["errors"] >= lv["requests"]]


def _exit_if_a_level_failed(result: dict, c) -> None:
    failed = failed_levels(result)
    if failed:
        console(stderr=True).print(
            f"failed: no successful request at concurrency {', '.join(map(str, failed))}; the result is not a capacity (exit 1)"
        )
        raise typer.Exit(1)
