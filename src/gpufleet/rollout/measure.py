"""The figures the gates read, measured against both groups' own endpoints at the same time.

- health: GET <candidate><health path> (the load balancer's health check path), its HTTP status;
- load: the load-test client (gpufleet.sizing.loadtest, the same settings and code) runs one closed-loop level of
  `concurrency` workers and `requests` streaming requests against each endpoint, both at once: error rate, p95
  latency and p95 time to first token per endpoint;
- vLLM's own metrics: each endpoint's Prometheus text (the node gateway's /metrics/vllm, or the URL given) is read
  every `poll_s` while the load runs; the highest `vllm:num_requests_waiting` (summed over engines) and KV-cache use
  (`vllm:kv_cache_usage_perc`, else `vllm:gpu_cache_usage_perc`, x 100) are kept. The names and how they add up are
  the node agent's (images/data/scaling_metrics.yaml, images/node_agent.signal_value). A reading that is not a finite
  number (`+Inf`, `-Inf`; NaN is dropped as the agent drops it) is no figure: its gate fails naming it, at once and
  whatever the other readings were (an infinite KV-cache use is no canary's pass, and `-Inf` is below any limit).
"""

from __future__ import annotations

import asyncio
import asyncio as aio
import math
from collections import Counter

import httpx
from msgspec import Struct

from gpufleet.errors import Problem, UserError
from gpufleet.images import node_agent, scaling_signals
from gpufleet.rollout import answers
from gpufleet.rollout.gates import Gate, Thresholds, answer_gates, traffic_gates
from gpufleet.secret import Secret, redact_url
from gpufleet.sizing import loadstats, loadtest


class Endpoint(Struct, frozen=True):
    name: str  # current | candidate
    url: str  # serving base URL (http://node:8000 or the group's own listener)
    model: str
    metrics_url: str  # requested as given; shown and stored redacted (a proxy's ?access_token=)


class LoadSettings(Struct, frozen=True):
    concurrency: int = 4
    requests: int = 40
    max_tokens: int = 64
    timeout_s: float = 60.0
    max_duration_s: float = 120.0
    poll_s: float = 0.25
    health_path: str = "/health"
    api_key: Secret | None = None  # masked in repr


def signal_specs() -> dict[str, dict]:
    """queue and kv_cache from the node agent's signal file: the vLLM names to try, unit and scale."""
    metrics = scaling_signals.raw()["metrics"]
    return {k: metrics[k] for k in ("queue", "kv_cache")}


def read_signals(text: str, specs: dict[str, dict]) -> dict[str, float | None]:
    samples = node_agent.parse_prometheus(text)
    return {k: node_agent.signal_value(samples, spec) for k, spec in specs.items()}


class _Poller:
    """Reads one endpoint's /metrics until stopped; keeps the highest value of each signal and the last error."""

    def __init__(self, url: str, specs: dict[str, dict], poll_s: float, headers: dict):
        self.url, self.specs, self.poll_s, self.headers = url, specs, poll_s, headers
        self.shown = redact_url(url)  # in every message: the query string may hold a token
        self.highest: dict[str, float] = {}
        self.not_finite: dict[str, str] = {}  # signal -> the first reading of it that was not a finite number
        self.error: str | None = None
        self.reads = 0

    async def read_once(self, client: httpx.AsyncClient) -> None:
        try:
            resp = await client.get(self.url, headers=self.headers)
            if resp.status_code != 200:
                self.error = f"GET {self.shown}: HTTP {resp.status_code}"
                return
            values = read_signals(resp.text, self.specs)
        except (httpx.HTTPError, OSError) as exc:
            self.error = f"GET {self.shown}: {type(exc).__name__}"
            return
        except (ValueError, IndexError):
            self.error = f"GET {self.shown}: not Prometheus text"
            return
        missing = [k for k, v in values.items() if v is None]
        if missing:
            self.error = f"GET {self.shown}: no {', '.join(' / '.join(self.specs[k]['vllm']) for k in missing)}"
        self.reads += 1
        for k, v in values.items():
            if v is not None and not math.isfinite(v):
                names = " / ".join(self.specs[k]["vllm"])
                self.not_finite.setdefault(k, f"GET {self.shown}: {names} read {v:g}, not a finite figure")
            elif v is not None:
                self.highest[k] = max(v, self.highest.get(k, v))

    def figure(self, signal: str) -> float | None:
        """The highest reading of a signal; None (no figure: its gate fails) when none, or one was not finite."""
        return None if signal in self.not_finite else self.highest.get(signal)

    def problem(self) -> str | None:
        """What went wrong reading the metrics: a reading that was not finite first (it fails the gate), else the last
        error."""
        return next(iter(self.not_finite.values()), None) or self.error

    async def run(self, stop: asyncio.Event) -> None:
        async with httpx.AsyncClient(timeout=5.0, trust_env=False) as client:
            while True:
                await self.read_once(client)
                try:
                    await asyncio.wait_for(stop.wait(), self.poll_s)
                    await self.read_once(client)  # once more at the end of the load
                    return
                except TimeoutError:
                    pass


async def health(url: str, path: str, timeout_s: float) -> tuple[int | None, str | None]:
    target = url.rstrip("/") + path
    try:
        async with httpx.AsyncClient(timeout=min(timeout_s, 10.0), trust_env=False) as client:
            return (await client.get(target)).status_code, None
    except (httpx.HTTPError, OSError) as exc:
        return None, f"GET {target}: {type(exc).__name__}"


def refuse_unusable(ep: Endpoint, samples: tuple[loadstats.Sample, ...]) -> None:
    """A UserError (exit 2, nothing rolled back) when every request to an endpoint failed in a way that says the
    options are wrong, not the version: the key refused, no such model or path, nothing listening. A candidate that
    answers with errors, or a health check that answers 503, is measured (and fails its gates)."""
    if not samples or any(x.ok or not x.fatal for x in samples):
        return
    statuses = {x.status for x in samples}
    flag = f"--{ep.name}-url"
    if statuses & {401, 403}:
        flag, why = (
            "--api-key-env / --api-key-file",
            f"the {ep.name} group refused the key (HTTP {min(statuses & {401, 403})}): give the fleet's key",
        )
    elif 404 in statuses:
        why = f"{ep.url} has no model {ep.model!r} (HTTP 404): is it the {ep.name} group's base URL, serving the spec's model?"
    elif statuses == {0}:
        why = (
            f"cannot reach {ep.url}: is it the {ep.name} group's own endpoint? (a candidate group that is down: "
            "`gpufleet rollout abort`)"
        )
    else:
        why = f"every request to {ep.url} was rejected as sent (HTTP {', '.join(map(str, sorted(statuses)))})"
    raise UserError([Problem(flag, "", f"{why}; nothing was changed")])


def refuse_unmeasured_baseline(ep: Endpoint, samples: tuple[loadstats.Sample, ...]) -> None:
    """A UserError (exit 2, nothing rolled back) when not one request to the current group succeeded: every gate
    compares the candidate with it, so a candidate failing the same way (a --timeout-s too short for the answers, a
    network between here and both groups) would be rolled back for what is not the version."""
    if not samples or any(x.ok for x in samples):
        return
    why = Counter(x.error or f"HTTP {x.status}" for x in samples).most_common(1)[0][0]
    raise UserError(
        [
            Problem(
                f"--{ep.name}-url",
                "",
                f"not one of {len(samples)} requests to the {ep.name} group at {ep.url} succeeded (most: {why}); the "
                "gates compare the candidate with it, so none can be judged: check that group, --timeout-s and "
                "--max-tokens; nothing was changed",
            )
        ]
    )


def _settings(ep: Endpoint, s: LoadSettings) -> loadtest.Settings:
    return loadtest.Settings(
        url=ep.url.rstrip("/"),
        endpoint=loadtest.chat_endpoint(ep.url),
        model=ep.model,
        concurrency=(s.concurrency,),
        requests=s.requests,
        max_tokens=s.max_tokens,
        slo_p95_ms=None,
        timeout_s=s.timeout_s,
        max_duration_s=s.max_duration_s,
        api_key=s.api_key,
    )


def _side(ep: Endpoint, level: dict, poller: _Poller) -> dict:
    q, kv = poller.figure("queue"), poller.figure("kv_cache")
    return {
        "url": ep.url,
        "model": ep.model,
        "metrics_url": redact_url(ep.metrics_url),  # the state file and report keep no token of its query
        "requests": level["requests"],
        "errors": level["errors"],
        "error_rate": level["error_rate"],
        "latency_p95_ms": level["latency_ms"]["p95"],
        "ttft_p95_ms": level["ttft_ms"]["p95"],
        "requests_per_s": level["requests_per_s"],
        "top_errors": level["top_errors"],
        "queue_max": None if q is None else round(q, 2),
        "kv_cache_percent_max": None if kv is None else round(kv, 2),
        "metrics_error": poller.problem() if q is None or kv is None else None,
    }


async def measure(current: Endpoint, candidate: Endpoint, s: LoadSettings) -> dict:
    """Health of the candidate, then the same load on both endpoints at once with their metrics read meanwhile."""
    status, error = await health(candidate.url, s.health_path, s.timeout_s)
    specs = signal_specs()
    # no key to the metrics: the node gateway's metrics port answers the VPC without one, and a key is sent only
    # where it is needed
    pollers = [_Poller(ep.metrics_url, specs, s.poll_s, {}) for ep in (current, candidate)]
    stop = asyncio.Event()
    polling = [asyncio.create_task(p.run(stop)) for p in pollers]
    try:
        runs = await asyncio.gather(
            *(loadtest.run_level(_settings(ep, s), s.concurrency, loadtest.Quiet()) for ep in (current, candidate))
        )
    finally:
        stop.set()
        await asyncio.gather(*polling)
    for ep, r in zip((current, candidate), runs, strict=True):
        refuse_unusable(ep, r.samples)
    refuse_unmeasured_baseline(current, runs[0].samples)
    for ep, poller in zip((current, candidate), pollers, strict=True):
        if poller.reads == 0:  # not one answer in Prometheus text: the URL is wrong, not the version
            raise UserError(
                [
                    Problem(
                        f"--{ep.name}-metrics-url",
                        "",
                        f"{poller.error or redact_url(ep.metrics_url)}: give the {ep.name} group's vLLM metrics URL; "
                        "nothing was changed",
                    )
                ]
            )
    levels = [loadstats.level_stats(r) for r in runs]
    cand = _side(candidate, levels[1], pollers[1])
    cand.update(health_url=candidate.url.rstrip("/") + s.health_path, health_status=status, health_error=error)
    return {
        "load": {"concurrency": s.concurrency, "requests": s.requests, "max_tokens": s.max_tokens},
        "current": _side(current, levels[0], pollers[0]),
        "candidate": cand,
    }


async def _answers(current: Endpoint, candidate: Endpoint, ps: answers.PromptSet, s: LoadSettings) -> dict:
    headers = {"Authorization": f"Bearer {s.api_key}"} if s.api_key else {}
    got = await asyncio.gather(
        *(answers.collect(loadtest.chat_endpoint(ep.url), ep.model, ps, headers, s.timeout_s) for ep in (current, candidate))
    )
    return answers.compare(ps, got[0], got[1], s.api_key)


def gates(
    current: Endpoint, candidate: Endpoint, s: LoadSettings, ps: answers.PromptSet, t: Thresholds
) -> tuple[list[Gate], dict]:
    """Every gate of one step: the traffic gates under load, then the answer gates (after the load, so the answers'
    requests do not change the latency measured). Returns the gates and the figures behind them."""

    traffic = aio.run(measure(current, candidate, s))
    compared = aio.run(_answers(current, candidate, ps, s))
    return traffic_gates(traffic, t) + answer_gates(compared, t), {"traffic": traffic, "answers": compared}
