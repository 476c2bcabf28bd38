#!/usr/bin/python3 -I
"""gpufleet node agent: the scaling signals, draining and the spot notice on a node (docs/scaling-node.md).

Standard library only; the image installs this file and its config (images/node.py: agent.json, rendered from
images/data/scaling_metrics.yaml, images/node_agent.yaml and the clouds' profiles) and three entry points:

- `metrics`: every period, read vLLM's /metrics on 127.0.0.1 and publish the queue, running and KV-cache signals with
  the node's cloud's publisher (e.g. Alibaba: CloudMonitor custom metrics signed with the instance RAM role's STS keys,
  dimension {<dimension>: $GPUFLEET_SCALING_GROUP}, group $GPUFLEET_METRICS_GROUP). A cloud without a custom-metric
  API (its profile says why) or a node without a group: says so once and exits 0.
- `drain`: make the gateway's health check fail (the load balancer stops sending), wait until the load balancer has
  noticed and vLLM's running + waiting requests are 0, or a bound; exit 0. Idempotent; `--cancel` undoes it.
- `spot-watch`: poll the instance metadata for the spot reclaim notice; on a notice, drain.
- `ready`: wait until the gateway answers its health path (the load balancer's check, which nginx passes to vLLM),
  then end the scaling group's SCALE_OUT lifecycle wait for this instance with the cloud's lifecycle API (e.g. Alibaba
  ESS CompleteLifecycleAction), so the node joins as soon as it serves instead of at the hook's timeout; when the
  node's preparation or gateway render unit has failed, it ends the wait with ABANDON instead, so the cloud releases
  the instance at once. `drain --complete` ends a scale-in wait the same way once drained. A cloud without a
  lifecycle API in its profile (Tencent: AS adds the node itself), or a node with no pending wait: says so, exit 0.

What is one cloud's (its signer, its API's calls and answers) is not here: each cloud's package has a node module
(components/<cloud>/node_agent.py, standard library only) that the image installs beside this file as
clouds/<cloud>.py; agent.json names it per cloud and the agent loads the one of $GPUFLEET_CLOUD (cloud_module()).

Nothing here can stop vLLM: each runs in its own low-priority unit with no dependency on vllm.service, every call
has a timeout, errors are logged (never a key, token or signature) and retried on the next period.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

CONFIG = "/usr/local/lib/gpufleet/agent.json"


class AgentError(Exception):
    """A failure of one call; the message never holds a key, token or signature. `refused`: the connection was
    refused (nothing listens on the port), as opposed to a timeout, a reset or an error status."""

    def __init__(self, message: str, refused: bool = False):
        super().__init__(message)
        self.refused = refused


def log(message: str) -> None:
    print(f"gpufleet-agent: {message}", flush=True)


def die(message: str) -> SystemExit:
    """Bad configuration on the node: the message names the file and the fix; exit 2."""
    print(f"gpufleet-agent: {message}", file=sys.stderr, flush=True)
    return SystemExit(2)


# --- Prometheus text format ------------------------------------------------------------------------------------------


def _labels(text: str, i: int) -> tuple[dict[str, str], int]:
    """Parse `{a="x",b="y"}` from text[i] == '{'; returns the labels and the index after '}'."""
    labels: dict[str, str] = {}
    i += 1
    while True:
        while i < len(text) and text[i] in " ,":
            i += 1
        if i >= len(text):
            raise ValueError("unterminated label set")
        if text[i] == "}":
            return labels, i + 1
        eq = text.index("=", i)
        name = text[i:eq].strip()
        if text[eq + 1] != '"':
            raise ValueError(f"label {name}: value not quoted")
        j, value = eq + 2, []
        while text[j] != '"':
            if text[j] == "\\":
                j += 1
                value.append({"n": "\n", "\\": "\\", '"': '"'}.get(text[j], "\\" + text[j]))
            else:
                value.append(text[j])
            j += 1
        labels[name] = "".join(value)
        i = j + 1


def parse_prometheus(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Samples by metric name: [(labels, value)] (Prometheus text exposition format 0.0.4; comments skipped)."""
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        brace, space = line.find("{"), line.find(" ")
        if brace != -1 and (space == -1 or brace < space):
            name = line[:brace]
            labels, end = _labels(line, brace)
            rest = line[end:].split()
        else:
            name, labels, rest = line[:space], {}, line[space:].split()
        if not rest:
            raise ValueError(f"no value: {line[:80]!r}")
        out.setdefault(name, []).append((labels, float(rest[0])))
    return out


def signal_value(samples: dict, spec: dict) -> float | None:
    """One signal: the first of spec["vllm"] names present; counts are summed over label sets (engines), a fraction
    (unit percent) is averaged over them; times spec["scale"]. None when no name is present."""
    for name in spec["vllm"]:
        rows = [v for _, v in samples.get(name, []) if not math.isnan(v)]
        if rows:
            total = sum(rows) if spec["unit"] == "count" else sum(rows) / len(rows)
            return total * spec.get("scale", 1)
    return None


def http(url: str, *, timeout: float, method: str = "GET", data: bytes | None = None, headers: dict | None = None):
    """(status, body text); HTTP error statuses are returned, network errors raise AgentError."""
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)  # urllib wraps the socket's error in URLError.reason
        refused = isinstance(reason, ConnectionRefusedError)
        raise AgentError(f"{method} {url.split('?')[0]}: {exc}", refused=refused) from None


def read_vllm(cfg: dict, env: dict, timeout: float | None = None) -> dict[str, float]:
    """The configured signals from vLLM's /metrics (127.0.0.1:GATEWAY_VLLM_PORT)."""
    url = f"http://127.0.0.1:{env['GATEWAY_VLLM_PORT']}/metrics"
    status, body = http(url, timeout=cfg["http_timeout_s"] if timeout is None else timeout)
    if status != 200:
        raise AgentError(f"GET {url}: HTTP {status}")
    try:
        samples = parse_prometheus(body)
    except (ValueError, IndexError) as exc:
        raise AgentError(f"GET {url}: not Prometheus text: {exc}") from None
    values = {}
    for key, spec in cfg["metrics"].items():
        value = signal_value(samples, spec)
        if value is None:
            raise AgentError(f"GET {url}: none of {', '.join(spec['vllm'])} in the answer (vLLM still starting?)")
        values[key] = value
    return values


# --- instance metadata ----------------------------------------------------------------------------------------------


class Metadata:
    """The cloud's instance metadata service (the cloud's profile: instance_metadata), with the session token of a
    hardened mode when the cloud has one (asked again before it ends; without one the plain request is tried)."""

    def __init__(self, md: dict, timeout: float, token_ttl_s: int):
        self.md, self.timeout, self.ttl = md, timeout, token_ttl_s
        self._token, self._token_until = None, 0.0

    def _headers(self) -> dict:
        if not self.md.get("token_url"):
            return {}
        if self._token is None or time.monotonic() > self._token_until:
            try:
                status, body = http(
                    self.md["token_url"],
                    method="PUT",
                    timeout=self.timeout,
                    headers={self.md["token_ttl_header"]: str(self.ttl)},
                )
            except AgentError:
                status, body = 0, ""
            # a failed token request is not remembered: the next call asks again (a hardened service refuses GETs
            # without one, and a spot notice must not be missed for a token's lifetime)
            self._token = body.strip() if status == 200 and body.strip() else None
            self._token_until = time.monotonic() + self.ttl / 2 if self._token else 0.0
        return {self.md["token_header"]: self._token} if self._token else {}

    def get(self, path: str) -> tuple[int, str]:
        return http(self.md["url"] + path, timeout=self.timeout, headers=self._headers())


# --- configuration --------------------------------------------------------------------------------------------------


def parse_env(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip()
    return out


def load(config_path: str) -> tuple[dict, dict]:
    """The agent's config and the node's environment (the fleet's and the gateway's env files, then os.environ)."""
    try:
        with open(config_path, encoding="utf-8") as fh:
            cfg = json.load(fh)
    except (OSError, ValueError) as exc:
        raise die(f"{config_path}: {exc} (the image installs it: images/node.py)") from None
    env: dict[str, str] = {}
    for path in cfg["env_files"]:
        try:
            with open(path, encoding="utf-8") as fh:
                env.update(parse_env(fh.read()))
        except OSError as exc:
            raise die(f"{path}: {exc} (the fleet's user-data writes it)") from None
    env.update({k: v for k, v in os.environ.items() if k.startswith(("GPUFLEET_", "GATEWAY_"))})
    missing = [k for k in cfg["env_keys"] if k not in env]
    if missing:
        raise die(f"{', '.join(cfg['env_files'])}: {', '.join(missing)} missing (render the user-data again)")
    return cfg, env


def cloud(cfg: dict, env: dict) -> dict:
    name = env["GPUFLEET_CLOUD"]
    if name not in cfg["clouds"]:
        raise die(f"GPUFLEET_CLOUD={name!r}: not one of {', '.join(sorted(cfg['clouds']))}")
    return cfg["clouds"][name]


def cloud_module(cfg: dict, env: dict, what: str):
    """The node module of $GPUFLEET_CLOUD (the file agent.json names, installed beside the agent by the image), which
    holds the cloud's `what` (publisher or lifecycle); exit 2 when the image lacks it."""
    name, path = env["GPUFLEET_CLOUD"], cloud(cfg, env).get("module")
    if not path:
        raise die(
            f"{name}: agent.json names no node module, but the cloud's profile gives it a {what} API (build the image again)"
        )
    try:
        spec = importlib.util.spec_from_file_location(f"gpufleet_agent_{name}", path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    except (OSError, ImportError, AssertionError, SyntaxError) as exc:
        raise die(f"{path}: {exc} (the image installs it: images/node.py)") from None
    if not callable(getattr(mod, what, None)):
        raise die(f"{path}: has no {what}() (components/{name}/node_agent.py)")
    return getattr(mod, what)


def agent_api():
    """What a cloud's node module may use of the agent: this module (http, AgentError, Metadata, log)."""
    return sys.modules[__name__]


# --- metrics --------------------------------------------------------------------------------------------------------


def publish_once(cfg: dict, env: dict, publisher, deadline: float) -> bool:
    """Read vLLM and publish one point per signal, retrying with backoff until `deadline` (monotonic)."""
    try:
        values = read_vllm(cfg, env)
    except AgentError as exc:
        log(f"nothing published this period: {exc}")
        return False
    now, wait = time.time(), cfg["backoff_s"]
    for attempt in range(1, cfg["publish_attempts"] + 1):
        try:
            request_id = publisher.publish(values, now)
        except AgentError as exc:
            publisher.reset()
            last = attempt == cfg["publish_attempts"] or time.monotonic() + wait + cfg["http_timeout_s"] > deadline
            log(f"publish attempt {attempt} failed: {exc}" + ("; giving up this period" if last else f"; again in {wait}s"))
            if last:
                return False
            time.sleep(wait)
            wait *= 2
            continue
        shown = ", ".join(f"{cfg['metrics'][k]['name']}={v:g}" for k, v in values.items())
        log(f"published {shown} ({publisher.where}, request {request_id})")
        return True
    return False


def run_metrics(cfg: dict, env: dict, once: bool = False) -> int:
    c = cloud(cfg, env)
    if not c["metrics_api"]:
        log(f"not publishing on {env['GPUFLEET_CLOUD']}: {c['metrics_note']}")
        return 0
    if not env.get("GPUFLEET_METRICS_GROUP") or not env.get("GPUFLEET_SCALING_GROUP"):
        log("not publishing: GPUFLEET_METRICS_GROUP or GPUFLEET_SCALING_GROUP is empty (the fleet scales on another signal)")
        return 0
    publisher = cloud_module(cfg, env, "publisher")(agent_api(), cfg, env, c)
    log(f"publishing every {cfg['period_s']}s to {publisher.target}")
    while True:
        start = time.monotonic()
        ok = publish_once(cfg, env, publisher, start + cfg["period_s"])
        if once:
            return 0 if ok else 1
        time.sleep(max(0.0, cfg["period_s"] - (time.monotonic() - start)))


# --- drain ----------------------------------------------------------------------------------------------------------


def in_flight(cfg: dict, env: dict, timeout: float) -> float | str | None:
    """vLLM's running + waiting requests; None when the connection is refused (vLLM is not running: nothing can be
    in flight); the error's text when the read timed out, was reset or got an error status. A busy vLLM answers
    /metrics from the same event loop as the requests, so a slow read means "unknown", never "none"."""
    try:
        values = read_vllm({**cfg, "metrics": {k: cfg["metrics"][k] for k in cfg["drain_signals"]}}, env, timeout)
    except AgentError as exc:
        return None if exc.refused else str(exc)
    return sum(values.values())


def drain(cfg: dict, env: dict, timeout_s: float | None = None) -> int:
    flag = cfg["drain_flag"]
    wait_lb = int(env["GATEWAY_DRAIN_WAIT_S"])
    bound = timeout_s if timeout_s is not None else wait_lb + int(env["GATEWAY_READ_TIMEOUT_S"])
    start = time.monotonic()
    if not os.path.exists(flag):
        try:
            with open(flag, "w", encoding="utf-8") as fh:
                fh.write(f"draining since {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n")
        except OSError as exc:
            log(f"drain: cannot write {flag}: {exc}")
            return 1
        log(f"drain: the health check now fails ({flag}); the load balancer stops sending within {wait_lb}s")
    else:
        log(f"drain: already draining ({flag})")
    since = time.time() - os.path.getmtime(flag)
    time.sleep(max(0.0, min(wait_lb - since, bound)))
    last_error, last_n = "", None
    while True:
        left = bound - (time.monotonic() - start)
        # a read may take up to what is left of the bound (a loaded vLLM answers /metrics slowly), never less than one
        # call's timeout
        n = in_flight(cfg, env, max(cfg["http_timeout_s"], left))
        left = bound - (time.monotonic() - start)
        if n is None:
            log("drain: vLLM refuses connections (not running): nothing in flight")
            return 0
        if isinstance(n, str):
            if n != last_error:
                log(f"drain: cannot read the requests in flight ({n}); asking again until the bound")
                last_error = n
            if left <= 0:
                known = (
                    "no count of the requests in flight"
                    if last_n is None
                    else f"{last_n:g} requests running or waiting at the last read"
                )
                log(f"drain: bound of {bound:.0f}s reached with {known}; going anyway")
                return 0
            time.sleep(min(cfg["drain_poll_s"], max(left, 0.0)))
            continue
        last_n = n
        if n <= 0:
            log(f"drain: done after {time.monotonic() - start:.0f}s: no request running or waiting")
            return 0
        if left <= 0:
            log(f"drain: bound of {bound:.0f}s reached with {n:g} requests running or waiting; going anyway")
            return 0
        time.sleep(min(cfg["drain_poll_s"], max(left, 0.0)))


def cancel(cfg: dict) -> int:
    try:
        os.unlink(cfg["drain_flag"])
        log("drain cancelled: the health check passes again")
    except FileNotFoundError:
        log("not draining")
    return 0


# --- lifecycle waits ----------------------------------------------------------------------------------------------


def complete_wait(cfg: dict, env: dict, why: str, result: str = "CONTINUE") -> int:
    """End this instance's lifecycle wait (retrying while the cloud has not listed it yet) with the cloud's lifecycle
    calls and `result` (CONTINUE, or ABANDON: the cloud releases the instance); exit status."""
    c = cloud(cfg, env)
    if not c.get("lifecycle_api"):
        log(
            f"no lifecycle wait to end on {env['GPUFLEET_CLOUD']}: {c.get('lifecycle_note') or 'the cloud has no lifecycle API here'}"
        )
        return 0
    group = env.get("GPUFLEET_SCALING_GROUP")
    if not group:
        log("no lifecycle wait to end: GPUFLEET_SCALING_GROUP is empty")
        return 0
    metadata = Metadata(c["metadata"], cfg["http_timeout_s"], cfg["metadata_token_ttl_s"])
    make_calls = cloud_module(cfg, env, "lifecycle")
    instance, calls = "", None
    for attempt in range(1, cfg["lifecycle_attempts"] + 1):
        try:
            if calls is None:  # the instance id, asked again like the lifecycle calls while the metadata service fails
                status, answer = metadata.get(c["metadata"]["instance_id"])
                if status != 200 or not answer.strip():
                    raise AgentError(f"the metadata service answered HTTP {status} for the instance id")
                instance = answer.strip()
                calls = make_calls(agent_api(), cfg, env, c, metadata)
            found = calls.pending(instance, group)
            if found is None:
                if attempt == cfg["lifecycle_attempts"]:
                    log(f"lifecycle: {instance} is in no pending wait of group {group} (attached, or the wait already ended)")
                    return 0
            else:
                hook, request_id = found[0], calls.complete(found, result)
                log(f"lifecycle: {why}; ended the wait of hook {hook} for {instance} with {result} (request {request_id})")
                return 0
        except AgentError as exc:
            last = attempt == cfg["lifecycle_attempts"]
            log(f"lifecycle attempt {attempt} failed: {exc}" + ("; the wait ends at its timeout" if last else ""))
            if last:
                return 1
        time.sleep(cfg["lifecycle_retry_s"])
    return 1


def serving_healthy(cfg: dict, env: dict) -> bool:
    """The load balancer's health check as it sees it: the gateway (nginx) on the serving port, its health path, which
    nginx passes to vLLM. vLLM answering on its own port is not enough: with the gateway down (e.g. its render unit
    failed closed on a bad key) the node cannot serve."""
    url = f"http://127.0.0.1:{env['GATEWAY_SERVING_PORT']}{env['GATEWAY_HEALTH_PATH']}"
    try:
        status, _ = http(url, timeout=cfg["http_timeout_s"])
    except AgentError:
        return False
    return status == 200


_UNASKABLE: set[str] = set()  # units systemctl could not be asked about, logged once each


def failed_units(cfg: dict) -> list[str]:
    """The units of cfg["failed_units"] systemd reports failed (`systemctl show --property=ActiveState --value`:
    "failed"). A systemctl that cannot be run, does not answer in time or cannot reach systemd (a non-zero exit or no
    state: `is-failed` exits 1 alike for "not failed" and "cannot connect to the bus") tells nothing: no unit is
    reported, and it is logged once."""
    failed = []
    for unit in cfg["failed_units"]:
        argv = [cfg["systemctl"], "show", "--property=ActiveState", "--value", unit]
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=cfg["http_timeout_s"])
            state = r.stdout.strip() if r.returncode == 0 else ""
            why = f"exit {r.returncode}: {r.stderr.strip()[:200] or 'no state'}"
        except (OSError, subprocess.TimeoutExpired) as exc:
            state, why = "", str(exc)
        if not state:
            if unit not in _UNASKABLE:
                log(f"ready: cannot ask systemd about {unit} ({why}); judging by the health check alone")
                _UNASKABLE.add(unit)
            continue
        if state == "failed":
            failed.append(unit)
    return failed


def ready(cfg: dict, env: dict, timeout_s: float | None = None) -> int:
    """Wait until the node serves through its gateway, then end the SCALE_OUT wait. Past `timeout_s` (default:
    ready_max_s, the longest wait), give up: the hook's own timeout then lets the node join or not, as the hook says."""
    bound = cfg["ready_max_s"] if timeout_s is None else timeout_s
    start = time.monotonic()
    while not serving_healthy(cfg, env):
        broken = failed_units(cfg)
        if broken:
            log(f"ready: {', '.join(broken)} failed: this node cannot serve; abandoning its scale-out")
            return complete_wait(cfg, env, f"{', '.join(broken)} failed", result="ABANDON")
        if time.monotonic() - start > bound:
            log(
                f"ready: the gateway's {env['GATEWAY_HEALTH_PATH']} on port {env['GATEWAY_SERVING_PORT']} did not answer 200"
                f" within {bound:.0f}s; the lifecycle wait ends at its own timeout"
            )
            return 1
        time.sleep(cfg["ready_poll_s"])
    return complete_wait(cfg, env, f"serving through the gateway after {time.monotonic() - start:.0f}s")


# --- spot notice ----------------------------------------------------------------------------------------------------


def spot_watch(cfg: dict, env: dict, max_polls: int | None = None) -> int:
    c = cloud(cfg, env)
    metadata = Metadata(c["metadata"], cfg["http_timeout_s"], cfg["metadata_token_ttl_s"])
    url = c["metadata"]["url"] + c["metadata"]["spot_notice"]
    log(f"watching {url} every {cfg['spot_poll_s']}s")
    last_error, polls = "", 0
    while max_polls is None or polls < max_polls:
        polls += 1
        try:
            status, body = metadata.get(c["metadata"]["spot_notice"])
            error = "" if status in (200, 404) else f"HTTP {status}"
        except AgentError as exc:
            status, body, error = 0, "", str(exc)
        if error != last_error:
            log(f"spot notice: {error}" if error else "spot notice: metadata answers again")
            last_error = error
        if status == 200 and body.strip():
            log(f"spot notice: the instance is reclaimed at {body.strip()[:40]}; draining")
            return drain(cfg, env)
        time.sleep(cfg["spot_poll_s"])
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gpufleet-agent", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default=CONFIG)
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser("metrics", help="publish the scaling signals every period")
    m.add_argument("--once", action="store_true", help="one period, exit 0 when published")
    d = sub.add_parser("drain", help="stop taking requests and wait until none is in flight")
    d.add_argument("--timeout", type=float, default=None, help="seconds at most (default: the fleet's bound)")
    d.add_argument("--cancel", action="store_true", help="take requests again")
    d.add_argument("--complete", action="store_true", help="then end this instance's scale-in lifecycle wait")
    r = sub.add_parser("ready", help="end the scale-out lifecycle wait once vLLM is healthy")
    r.add_argument("--timeout", type=float, default=None, help="seconds at most to wait for vLLM")
    s = sub.add_parser("spot-watch", help="drain when the cloud announces the spot instance's reclaim")
    s.add_argument("--polls", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    cfg, env = load(args.config)
    if args.command == "metrics":
        return run_metrics(cfg, env, once=args.once)
    if args.command == "drain":
        if args.cancel:
            return cancel(cfg)
        status = drain(cfg, env, args.timeout)
        return complete_wait(cfg, env, "drained") if args.complete and status == 0 else status
    if args.command == "ready":
        return ready(cfg, env, args.timeout)
    return spot_watch(cfg, env, args.polls)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
