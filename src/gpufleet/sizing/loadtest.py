"""Load test of an OpenAI-compatible `/v1/chat/completions` endpoint, one concurrency level after another.

Each level is a closed loop: `concurrency` workers each send a streaming request (`"stream": true`, with
`stream_options.include_usage` so the server reports its token count), read the server-sent events to
`data: [DONE]`, and send the next, until the level's request count is used up or its wall-time cap has
passed. Requests in flight at the cap still finish, each within the per-request timeout, so a level lasts
at most max_duration_s + timeout_s and the whole run at most levels x that.

Per request: TTFT = time to the first non-empty content delta (reasoning deltas count: a reasoning model
streams its thinking first), latency = time to the end of the stream, output tokens = the usage chunk's
`completion_tokens`, or the number of content deltas when the server sends no usage. A malformed chunk, a usage
count that is no whole number from 0 to 1e8, and a stream with no content and no output token make the
request a failed sample (an error), never a traceback or throughput. The numbers are
summed up by `gpufleet.sizing.loadstats`; the result adds `request` (prompt characters and tokens, max_tokens,
output tokens per request) and, with `--stack`, `stack` (instance type, GPU, model, serving flags), which
`gpufleet cost tokens` reads.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import time
from collections.abc import Callable, Mapping
from typing import Protocol
from urllib.parse import SplitResult, urlsplit

import httpx
from msgspec import Struct

from gpufleet.errors import Problem, UserError
from gpufleet.inputs import host_problem
from gpufleet.secret import Secret, has_credentials, masked_line, redact_url
from gpufleet.sizing.loadstats import LevelRun, Sample, error_summary, level_stats, result_json

DEFAULT_PROMPT = "Write a short story, about three paragraphs long, about a lighthouse keeper who finds a message in a bottle."
MAX_CONCURRENCY = 1000  # one connection per worker; far beyond this the client's file descriptors run out first
CHAT_PATH = "/v1/chat/completions"
# Answers that mean the request itself is wrong, not that the server is busy. When every request of the
# first level gets one (or cannot connect), the run stops with a UserError instead of a result of errors.
FATAL_STATUSES = frozenset({400, 401, 403, 404, 405, 422})
ERROR_SHOWN = 200  # characters of a failed request's error kept (the key masked first: a server may echo it)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class Settings(Struct, frozen=True):
    url: str  # as given, without a trailing slash; written to the result
    endpoint: str  # the chat-completions URL requested
    model: str
    concurrency: tuple[int, ...]
    requests: int  # per level
    max_tokens: int
    slo_p95_ms: float | None
    timeout_s: float  # per request, connect to last byte
    max_duration_s: float  # per level: no request starts after this
    prompt: str = DEFAULT_PROMPT
    api_key: Secret | None = None  # masked in repr

    def headers(self) -> dict[str, str]:
        h = {"Accept": "text/event-stream"}
        if self.api_key:
            h["Authorization"] = f"Bearer {self.api_key}"
        return h

    def body(self) -> dict:
        return {
            "model": self.model,
            "messages": [{"role": "user", "content": self.prompt}],
            "max_tokens": self.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
        }


class Observer(Protocol):
    """What the progress display is told while the test runs."""

    def level_started(self, concurrency: int, requests: int) -> None: ...
    def sample_done(self, sample: Sample) -> None: ...
    def level_done(self, level: dict) -> None: ...


class Quiet:
    """An observer that shows nothing."""

    def level_started(self, concurrency: int, requests: int) -> None:
        pass

    def sample_done(self, sample: Sample) -> None:
        pass

    def level_done(self, level: dict) -> None:
        pass


# ---- input ---------------------------------------------------------------------------------------------


def parse_concurrency(text: str) -> tuple[int, ...]:
    """'1,10,20,50' -> (1, 10, 20, 50): ascending, without repeats. UserError naming every bad entry."""
    parts = [p.strip() for p in str(text).split(",")]
    bad = [p for p in parts if not (p.isdigit() and 0 < int(p) <= MAX_CONCURRENCY)]
    if bad:
        raise UserError(
            [
                Problem(
                    "--concurrency",
                    "",
                    f"{', '.join(repr(p) for p in bad)} {'is' if len(bad) == 1 else 'are'} not a whole number from 1 to "
                    f"{MAX_CONCURRENCY}: give a comma-separated list such as 1,10,20,50",
                )
            ]
        )
    return tuple(sorted({int(p) for p in parts}))


def http_url(url: str, flag: str, fix: str, credentials: str) -> SplitResult:
    """`url` split, when the client can request it: http:// or https://, a host name or IP address, a port 1-65535
    (or none), no space or control character; else a UserError naming `flag` and ending with `fix`. A user:password@
    is refused first, whatever else is wrong, saying `credentials` (where they would end up) and never showing the
    URL; the other messages show it redacted (secret.redact_url: a query string as ?***)."""

    if has_credentials(url):
        raise UserError([Problem(flag, "", f"has credentials in it, {credentials}")])

    def bad(why: str) -> UserError:
        return UserError([Problem(flag, "", f"{redact_url(url)!r} {why}: {fix}")])

    if any(ch.isspace() or not ch.isprintable() for ch in url):
        raise bad("has a space or control character in it")  # urlsplit would drop a tab or newline, the client refuses it
    try:
        parts = urlsplit(url)
        port = parts.port  # a port that is not a number or is above 65535: ValueError
    except ValueError as exc:
        raise bad(f"is not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise bad("is not an http:// or https:// URL with a host")
    if why := host_problem(parts.hostname):  # urlsplit's hostname: without brackets, lowercase
        raise bad(f"has host {parts.hostname!r}, which {why}")
    if port == 0:
        raise bad("has port 0, which no server listens on (a port is 1 to 65535)")
    return parts


LOADTEST_CREDENTIALS = "which would be written to the result: put the key in an environment variable and pass --api-key-env VAR"


def chat_endpoint(url: str, flag: str = "--url", credentials: str = LOADTEST_CREDENTIALS) -> str:
    """The chat-completions URL for a server's base URL (`http://h:8000`, `.../v1` and the full path all work).
    `credentials`: where a user:password@ in it would end up, and what to do instead (the refusal's end)."""
    fix = "give the server's base URL, e.g. http://10.0.0.5:8000"
    http_url(url, flag, fix, credentials)
    if "?" in url or "#" in url:  # the path was appended after it: http://h:8000?x=1/v1/chat/completions requested /
        raise UserError(
            [
                Problem(
                    flag,
                    "",
                    f"{redact_url(url)!r} has a query or fragment (?... or #...), after which the chat path cannot be "
                    f"added: {fix}",
                )
            ]
        )
    base = url.rstrip("/")
    if base.endswith(CHAT_PATH):
        return base
    return base + ("/chat/completions" if base.endswith("/v1") else CHAT_PATH)


def api_key(env_name: str | None, environ: Mapping[str, str]) -> str | None:
    """The key held by the environment variable `env_name` (None without one). Never repeats a key."""
    if env_name is None:
        return None
    if not _ENV_NAME.match(env_name):
        # Most likely the key itself pasted in by mistake: do not echo it.
        raise UserError(
            [
                Problem(
                    "--api-key-env",
                    "",
                    "must be the NAME of an environment variable holding the key "
                    "(e.g. --api-key-env VLLM_API_KEY), not the key itself",
                )
            ]
        )
    value = (environ.get(env_name) or "").strip()
    if not value:
        raise UserError(
            [
                Problem(
                    "--api-key-env",
                    "",
                    # not named: a key pasted in its place is often a valid name too (sk_live_..., hex starting with a
                    # letter), and this line goes to a terminal or CI log
                    "the variable it names is not set or is empty: export it first (check its spelling), or leave out "
                    "--api-key-env for a server without a key",
                )
            ]
        )
    if any(ord(ch) < 33 or ord(ch) == 127 for ch in value):
        raise UserError(
            [
                Problem(
                    "--api-key-env",
                    "",
                    f"the value of {env_name} has spaces or control characters, which a bearer token cannot have",
                )
            ]
        )
    return value


def _collect(problems: list[Problem], check: Callable, *args):
    """check(*args), moving a UserError's problems into `problems` (then None)."""
    try:
        return check(*args)
    except UserError as exc:
        problems.extend(exc.problems)
        return None


def _seconds_problem(flag: str, value: float, unit: str = "seconds") -> list[Problem]:
    if value > 0 and math.isfinite(value):
        return []
    return [Problem(flag, "", f"must be a positive number of {unit} (got {value:g})")]


def settings(
    *,
    url: str,
    model: str,
    concurrency: str,
    requests: int,
    max_tokens: int,
    api_key_env: str | None,
    slo_p95_ms: float | None,
    timeout_s: float,
    max_duration_s: float,
    prompt: str | None,
    environ: Mapping[str, str],
) -> Settings:
    """Every option checked at once (UserError lists all problems); the run starts only on clean input."""
    problems: list[Problem] = []
    endpoint = _collect(problems, chat_endpoint, url)
    levels = _collect(problems, parse_concurrency, concurrency) or ()
    key = _collect(problems, api_key, api_key_env, environ)
    if not model.strip():
        problems.append(Problem("--model", "", "is empty: give the model name the server serves (GET /v1/models lists them)"))
    if requests < 1:
        problems.append(Problem("--requests", "", f"must be 1 or more (got {requests})"))
    elif levels and requests < max(levels):
        problems.append(
            Problem(
                "--requests",
                "",
                f"{requests} requests per level cannot keep {max(levels)} in flight: give "
                f"--requests {max(levels)} or more (a few times the highest --concurrency)",
            )
        )
    if max_tokens < 1:
        problems.append(Problem("--max-tokens", "", f"must be 1 or more (got {max_tokens})"))
    problems += _seconds_problem("--timeout-s", timeout_s) + _seconds_problem("--max-duration-s", max_duration_s)
    if slo_p95_ms is not None:
        problems += _seconds_problem("--slo-p95-ms", slo_p95_ms, "milliseconds")
    if prompt is not None and not prompt.strip():
        problems.append(Problem("--prompt", "", "is empty: leave it out for the built-in prompt"))
    if problems:
        raise UserError(problems)
    return Settings(
        url=url.rstrip("/"),
        endpoint=endpoint,
        model=model.strip(),
        concurrency=levels,
        requests=requests,
        max_tokens=max_tokens,
        slo_p95_ms=slo_p95_ms,
        timeout_s=timeout_s,
        max_duration_s=max_duration_s,
        prompt=prompt or DEFAULT_PROMPT,
        api_key=Secret(key) if key else None,
    )


# ---- the client ----------------------------------------------------------------------------------------


def _delta_text(choice: object) -> str:
    delta = choice.get("delta") if isinstance(choice, dict) else None
    if not isinstance(delta, dict):
        return ""
    # vLLM streams a reasoning model's thinking as reasoning_content (newer versions: reasoning) before content.
    for key in ("content", "reasoning_content", "reasoning"):
        if isinstance(delta.get(key), str) and delta[key]:
            return delta[key]
    return ""


# far beyond any model's context window: a usage count above it is a broken report. Output tokens are held to it too,
# not to max_tokens: a server that does not enforce max_tokens (or counts past it) sends whole answers, as throughput.
MAX_USAGE_TOKENS = 10**8
EMPTY_ANSWER = "the answer had no content: a whole stream with no content delta and no output token in its usage"


def _count_problem(value: object) -> str:
    """Why a usage count cannot be a token count (a whole number from 0 to MAX_USAGE_TOKENS); "" when it can."""
    if isinstance(value, bool) or not isinstance(value, int):
        return "not a whole number of tokens"
    if not 0 <= value <= MAX_USAGE_TOKENS:
        return f"not a count from 0 to {MAX_USAGE_TOKENS}"
    return ""


async def one_request(client: httpx.AsyncClient, s: Settings) -> Sample:
    """Send one streaming chat completion and time it. Never raises, but for cancellation."""
    start = time.perf_counter()
    ttft: float | None = None
    deltas = 0
    usage_tokens: int | None = None
    prompt_tokens: int | None = None

    def since() -> float:
        return (time.perf_counter() - start) * 1000.0

    def fail(error: str, status: int = 0, fatal: bool = False) -> Sample:
        return Sample(
            ok=False,
            latency_ms=since(),
            ttft_ms=ttft,
            error=masked_line(error, s.api_key, ERROR_SHOWN),
            status=status,
            fatal=fatal,
        )

    try:
        async with asyncio.timeout(s.timeout_s):
            async with client.stream("POST", s.endpoint, json=s.body(), headers=s.headers()) as resp:
                if resp.status_code != 200:
                    text = (await resp.aread()).decode("utf-8", errors="replace")
                    return fail(f"HTTP {resp.status_code}: {text}", resp.status_code, resp.status_code in FATAL_STATUSES)
                done = False
                async for line in resp.aiter_lines():
                    if not line.startswith("data:"):
                        continue  # blank separators, ': comments', event: and id: fields
                    data = line[5:].strip()
                    if data == "[DONE]":
                        done = True
                        break
                    try:
                        chunk = json.loads(data)
                    except (ValueError, RecursionError):  # RecursionError: nested deeper than the decoder goes
                        return fail(f"the stream sent data that is not JSON: {data}")
                    if not isinstance(chunk, dict):
                        return fail(f"the stream sent data that is not a JSON object: {data}")
                    if chunk.get("error"):
                        return fail(f"error in the stream: {json.dumps(chunk['error'])}")
                    usage = chunk.get("usage")
                    if isinstance(usage, dict):
                        for name in ("completion_tokens", "prompt_tokens"):
                            if usage.get(name) is not None and (why := _count_problem(usage[name])):
                                return fail(f"the stream's usage says {name} {masked_line(repr(usage[name]), None, 40)}: {why}")
                        if usage.get("completion_tokens") is not None:
                            usage_tokens = usage["completion_tokens"]
                        if usage.get("prompt_tokens") is not None:
                            prompt_tokens = usage["prompt_tokens"]
                    choices = chunk.get("choices")
                    if choices is not None and not isinstance(choices, list):
                        return fail(f"the stream sent choices that are not a list: {data}")
                    for choice in choices or []:
                        if _delta_text(choice):
                            ttft = since() if ttft is None else ttft
                            deltas += 1
                if not done:
                    return fail(
                        "the answer ended before `data: [DONE]`: the server cut the stream, or does not "
                        "stream (is it OpenAI-compatible?)"
                    )
    except TimeoutError:
        return fail(f"timeout: no complete answer within --timeout-s {s.timeout_s:g}")
    except httpx.ConnectError as exc:
        return fail(f"cannot connect: {exc or type(exc).__name__}", fatal=True)
    except (httpx.HTTPError, OSError) as exc:  # a reset connection is a ReadError with no text
        return fail(f"{type(exc).__name__}: {str(exc) or 'the connection broke mid-answer (reset or closed by the server)'}")
    if deltas == 0 and not usage_tokens:
        return fail(EMPTY_ANSWER)
    return Sample(
        ok=True,
        latency_ms=since(),
        ttft_ms=ttft,
        output_tokens=deltas if usage_tokens is None else usage_tokens,
        usage_reported=usage_tokens is not None,
        prompt_tokens=prompt_tokens,
    )


async def run_level(s: Settings, concurrency: int, observer: Observer) -> LevelRun:
    """`concurrency` workers in a closed loop until the request count or the level's time cap is reached."""
    samples: list[Sample] = []
    issued = 0
    start = time.perf_counter()
    deadline = start + s.max_duration_s
    last = start

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal issued, last
        while issued < s.requests and time.perf_counter() < deadline:
            issued += 1
            sample = await one_request(client, s)
            last = time.perf_counter()
            samples.append(sample)
            observer.sample_done(sample)

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    timeout = httpx.Timeout(s.timeout_s, connect=min(s.timeout_s, 10.0))
    async with httpx.AsyncClient(limits=limits, timeout=timeout, trust_env=False) as client:
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
    return LevelRun(concurrency, tuple(samples), last - start)


def fatal_problem(s: Settings, samples: tuple[Sample, ...]) -> UserError | None:
    """A UserError when every request failed in a way more load cannot change (refused key, no such model, no server)."""
    if not samples or any(x.ok or not x.fatal for x in samples):
        return None
    ((message, _),) = error_summary(samples, 1)
    statuses = {x.status for x in samples}
    if statuses & {401, 403}:
        flag, fix = (
            "--api-key-env",
            "the server refused the request: pass --api-key-env VAR naming the variable that holds its key",
        )
    elif 404 in statuses:
        flag, fix = (
            "--url / --model",
            (
                f"no such model or path at {s.endpoint}: check --model against GET /v1/models "
                "and that --url is the server's base URL"
            ),
        )
    elif statuses == {0}:
        flag, fix = "--url", f"cannot reach {s.endpoint}: is the server running and the URL right?"
    else:
        flag, fix = "--model / --max-tokens / --prompt", "the server rejected the request as sent"
    return UserError([Problem(flag, "", f"every request failed ({message}); {fix}")])


async def run(s: Settings, observer: Observer | None = None, stack: dict | None = None) -> dict:
    """Every level in ascending concurrency; the result JSON (`loadstats.result_json`) with what was sent (`request`)
    and, given `stack` (`stack_record`), the stack whose node was measured."""
    observer = observer or Quiet()
    runs: list[LevelRun] = []
    for concurrency in s.concurrency:
        observer.level_started(concurrency, s.requests)
        level = await run_level(s, concurrency, observer)
        if not runs and (problem := fatal_problem(s, level.samples)):
            raise problem
        runs.append(level)
        observer.level_done(level_stats(level))
    result = result_json(s.url, s.model, s.slo_p95_ms, runs)
    result["request"] = request_record(s, runs)
    if stack is not None:
        result["stack"] = stack
    return result


# ---- what the result file records besides the numbers (read by `gpufleet cost tokens`) ------------------


def request_record(s: Settings, runs: list[LevelRun]) -> dict:
    """The request every level sent: prompt (characters, and tokens as the server counted them), max_tokens, and
    the output tokens a successful request got on average."""
    ok = [x for r in runs for x in r.samples if x.ok]
    prompts = [x.prompt_tokens for x in ok if x.prompt_tokens is not None]
    return {
        "prompt_chars": len(s.prompt),
        "prompt_tokens": round(sum(prompts) / len(prompts), 1) if prompts else None,
        "max_tokens": s.max_tokens,
        "output_tokens_per_request": round(sum(x.output_tokens for x in ok) / len(ok), 1) if ok else None,
    }


# serving settings that change what one node can do; recorded so a result is not applied to another configuration
SERVING_FIELDS = (
    "dtype",
    "quantization",
    "kv_cache_dtype",
    "max_model_len",
    "gpu_memory_utilization",
    "max_num_seqs",
    "max_num_batched_tokens",
    "tensor_parallel_size",
    "extra_args",
)


def stack_record(fleet) -> dict:
    """What a stack runs on one node (a loader.Fleet): instance type, GPU, model, image recipe and serving flags."""
    spec = fleet.spec
    return {
        "name": fleet.stack,
        "cloud": spec.cloud,
        "region": spec.region,
        "instance_type": fleet.instance_type.type,
        "gpu": f"{spec.gpu.count}x {spec.gpu.kind}",
        "model": spec.model.name,
        "image_recipe": spec.image.recipe,
        "serving": {f: getattr(spec.serving, f) for f in SERVING_FIELDS},
    }


def measured_elsewhere(result: dict, shown: str, fleet, uses: str) -> list[str]:
    """Why a load test result (`shown`: its file) may not be this fleet's node: each recorded setting the stack now has
    otherwise, then what the command does with it (`uses`, e.g. "the plan sizes S's replicas at", + "throughput
    measured on another configuration"); or that it records no stack. What `cost tokens`, `plan capacity --stack` and
    `plan scaling` warn of before using it."""
    recorded = result.get("stack")
    if not isinstance(recorded, dict):
        from gpufleet.stacks.loader import stack_arg  # deferred: the fleet was loaded by it; a load test alone does not

        return [
            f"{shown} does not say which stack it measured (run `gpufleet loadtest --stack "
            f"{stack_arg(fleet.stack)} ...`): "
            "its instance type and serving flags cannot be compared with the stack's"
        ]
    out = [f"{shown}: {d}" for d in stack_differences(recorded, stack_record(fleet))]
    return [*out, f"{uses} throughput measured on another configuration"] if out else []


def stack_differences(recorded: dict, current: dict) -> list[str]:
    """`field: measured with X, the stack has Y` for each recorded setting the stack now has otherwise."""
    out = []
    for key in ("instance_type", "gpu", "model", "image_recipe"):
        if key in recorded and recorded.get(key) != current.get(key):
            out.append(f"{key}: measured with {recorded.get(key)!r}, the stack has {current.get(key)!r}")
    was, now = recorded.get("serving") or {}, current.get("serving") or {}
    if not isinstance(was, dict):  # a hand-edited result: `serving: 1.5` was a TypeError traceback, "dtype" an AttributeError
        return [*out, f"serving: measured with {was!r}, not a mapping of serving flags: they cannot be compared with the stack's"]
    for key in SERVING_FIELDS:
        if key in was and was.get(key) != now.get(key):
            out.append(f"serving.{key}: measured with {was.get(key)!r}, the stack has {now.get(key)!r}")
    return out
