"""Run a recipe's steps on a host over SSH (Fabric), idempotently, resuming after a dropped connection.

For each step in order: run `check`; when satisfied (exit 0, and the step's fact equals its pin) skip it;
else run `apply`, then `check` again. The first failure stops the build with that step's output; a
failed `apply` runs the step's `cleanup`. A lost connection reconnects with backoff and starts again from
the top, where every step already done is only checked, so the build resumes at the first unsatisfied
step. At the end the manifest is written on the host (unless it already says the same) and read back.

One apply at a time per step on the host: every apply holds an flock(1) on <layout.prefix>/.locks/<step>.lock
for as long as it (and anything it started) runs, so a reconnect after a dropped connection waits for the
apply that is still running there instead of starting the same apt/pip work beside it. The step that was
interrupted by a lost connection is re-checked after that lock is free; if it is not satisfied its `cleanup`
runs before it is applied again.

A dead connection is noticed by SSH keepalives (Target.keepalive_s, like OpenSSH's ServerAliveInterval):
a keepalive request that gets no answer within keepalive_s * keepalive_count closes the connection, which
fails the running command with ConnectionLost, and the build reconnects. Defaults: 10 s x 2, so a
black-holed link is noticed within 30 s, not at the step timeout.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import secrets
import shlex
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from msgspec import Struct, field

from gpufleet import files, inputs
from gpufleet.errors import Problem, UserError
from gpufleet.images import facts as facts_mod
from gpufleet.images.recipes import Recipe
from gpufleet.images.steps import RenderedStep, render

if TYPE_CHECKING:
    import paramiko

NOT_SATISFIED = 1
# The longest single wait of a build: the connect timeout, a keepalive interval, one reconnect's backoff (doubling up
# to it). Python's sleeps and socket timeouts overflow near 1e10 s (an OverflowError traceback from `--backoff 1e308`).
MAX_WAIT_S = 3600


class ConnectionLost(Exception):
    """The SSH connection failed or dropped; the build may resume on a new one."""


class HostKeyRefused(Exception):
    """The host's key is not in the known_hosts file (or differs from it)."""


class StepFailed(Exception):
    def __init__(self, step: str, phase: str, result: Result, why: str):
        self.step, self.phase, self.result, self.why = step, phase, result, why
        super().__init__(f"step {step}: {why}")


class Result(Struct, frozen=True):
    exit: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return (self.stdout + ("\n" if self.stdout and self.stderr else "") + self.stderr).strip()


class Host(Protocol):
    def run(self, script: str, timeout_s: int) -> Result: ...
    def close(self) -> None: ...


class Target(Struct, frozen=True):
    host: str
    port: int = 22
    user: str = "root"
    key: Path | None = None
    known_hosts: Path = Path("~/.ssh/known_hosts")
    accept_new_host_key: bool = False
    connect_timeout_s: int = 10
    keepalive_s: float = 10.0  # 0 turns keepalives off
    keepalive_count: int = 2


def fingerprint(key) -> str:
    """OpenSSH-style SHA256 fingerprint of a paramiko key."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(key.asbytes()).digest()).decode().rstrip("=")


class _KnownHostsPolicy:
    """Refuse an unknown host key, or (with accept_new) record it in the known_hosts file. A changed key is
    refused by paramiko itself (BadHostKeyException) whatever this policy says."""

    def __init__(self, path: Path, accept_new: bool):
        self.path, self.accept_new = path, accept_new

    def missing_host_key(self, client, hostname, key):
        if not self.accept_new:
            raise HostKeyRefused(
                f"host key of {hostname} ({key.get_name()} {fingerprint(key)}) is not in {self.path}; "
                f"check that fingerprint on the host (ssh-keygen -lf /etc/ssh/ssh_host_{key.get_name().split('-')[-1]}_key.pub) "
                f"and re-run with --accept-new-host-key, or add it to the file"
            )
        client.get_host_keys().add(hostname, key.get_name(), key)
        append_known_host(self.path, f"{hostname} {key.get_name()} {key.get_base64()}\n")


def append_known_host(path: Path, line: str) -> None:
    """Add `line` to the known_hosts file at `path` (made, with its folder, when missing) on a line of its own, as
    ssh(1) does: a file whose last line has no newline gets one first, so neither entry is damaged. The file is
    replaced atomically (a crash leaves the old one), never written in place."""
    try:  # checked before connecting (cli.image._target_problems); an OSError here is no lost connection either
        old = path.read_bytes() if path.exists() else b""
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError([Problem("--known-hosts", str(path), f"cannot write the new host key: {exc.strerror}")]) from None
    if old and not old.endswith(b"\n"):
        old += b"\n"
    files.write_atomic(path, old + line.encode(), flag="--known-hosts")


def read_known_hosts(path: Path, into: paramiko.HostKeys | None = None) -> paramiko.HostKeys:
    """The host keys of an OpenSSH known_hosts file (a paramiko HostKeys, `into` when given), none when there is no file
    yet. A file that cannot be read as text (a folder, not UTF-8, too large) is a UserError naming it; a line that is
    not a host key is skipped, as OpenSSH skips it (paramiko's own loader stops with a traceback at some: a key that is
    not base64, an RSA key too short)."""
    # deferred: the SSH stack: only an image build over SSH needs it
    import paramiko

    keys = paramiko.HostKeys() if into is None else into
    if not path.exists():
        return keys
    text = inputs.read_text(path, str(path))
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            entry = paramiko.hostkeys.HostKeyEntry.from_line(line, n)
        except (paramiko.hostkeys.InvalidHostKey, paramiko.SSHException, ValueError):
            continue
        for name in entry.hostnames if entry else ():
            keys.add(name, entry.key.get_name(), entry.key)
    return keys


class SshHost:
    """One Fabric connection. `sudo -n` when the user is not root; one command per run."""

    def __init__(self, target: Target):
        # deferred: the SSH stack: only an image build over SSH needs it
        import fabric
        import paramiko

        self.target = target
        known = target.known_hosts.expanduser()
        config = fabric.Config(overrides={"load_ssh_configs": False})
        kwargs: dict[str, Any] = {  # paramiko connect() arguments: bools, timeouts, key files
            "look_for_keys": False,
            "allow_agent": False,
            "banner_timeout": target.connect_timeout_s,
            "auth_timeout": target.connect_timeout_s,
        }
        if target.key:
            kwargs["key_filename"] = [str(Path(target.key).expanduser())]
        self.conn = fabric.Connection(
            target.host,
            user=target.user,
            port=target.port,
            config=config,
            connect_kwargs=kwargs,
            connect_timeout=target.connect_timeout_s,
        )
        self.conn.client.set_missing_host_key_policy(_KnownHostsPolicy(known, target.accept_new_host_key))
        read_known_hosts(known, into=self.conn.client.get_host_keys())
        try:
            self.conn.open()
        except HostKeyRefused:
            raise
        except paramiko.BadHostKeyException as exc:
            raise HostKeyRefused(
                f"host key of {exc.hostname} changed: got {fingerprint(exc.key)}, {known} has {fingerprint(exc.expected_key)}; "
                f"refusing (a rebuilt builder needs its old line removed with ssh-keygen -R)"
            ) from None
        except paramiko.AuthenticationException:
            raise
        except (TimeoutError, OSError, EOFError, paramiko.SSHException) as exc:
            raise ConnectionLost(f"cannot connect to {target.user}@{target.host}:{target.port}: {exc}") from None
        self.lost: str | None = None
        self._closed = threading.Event()
        if target.keepalive_s > 0:
            threading.Thread(target=self._keepalive, name="ssh-keepalive", daemon=True).start()

    def _keepalive(self) -> None:
        """Every keepalive_s, ask the server for a reply; none within keepalive_s * keepalive_count: the link is
        dead (black-holed or the host gone), so close the transport and let the running command fail."""
        transport = self.conn.client.get_transport()
        wait = self.target.keepalive_s * self.target.keepalive_count
        while not self._closed.wait(self.target.keepalive_s):
            if transport is None or not transport.is_active():
                return
            answered = threading.Event()

            def probe(done: threading.Event) -> None:
                try:
                    transport.global_request("keepalive@openssh.com", wait=True)
                except Exception:  # a closing transport: the main thread sees the loss itself
                    pass
                finally:
                    done.set()

            threading.Thread(target=probe, args=(answered,), name="ssh-keepalive-probe", daemon=True).start()
            if not answered.wait(wait) and not self._closed.is_set():
                self.lost = f"no answer to SSH keepalives for {wait:g}s"
                transport.close()
                return

    def run(self, script: str, timeout_s: int) -> Result:
        # deferred: the SSH stack: only an image build over SSH needs it
        import invoke
        import paramiko

        cmd = "bash -c " + shlex.quote(script)
        if self.target.user != "root":
            cmd = "sudo -n " + cmd
        try:
            r = self.conn.run(cmd, hide=True, warn=True, timeout=timeout_s, in_stream=False)
        except invoke.exceptions.CommandTimedOut as exc:
            return Result(124, exc.result.stdout, exc.result.stderr + f"\n(timed out after {timeout_s}s)")
        except (OSError, EOFError, paramiko.SSHException) as exc:
            raise ConnectionLost(f"connection lost: {self.lost or exc}") from None
        transport = self.conn.client.get_transport()
        if r.exited is None or r.exited < 0 or transport is None or not transport.is_active():
            raise ConnectionLost(f"connection lost while running: {self.lost or f'exit status {r.exited}'}")
        return Result(r.exited, r.stdout, r.stderr)

    def close(self) -> None:
        self._closed.set()
        self.conn.close()


class Event(Struct, frozen=True):
    kind: str  # check | satisfied | apply | applied | would-apply | failed | cleanup | retry | manifest
    step: str = ""
    index: int = 0
    total: int = 0
    detail: str = ""


class BuildResult(Struct):
    recipe: str
    status: str  # changed | unchanged | planned
    applied: list[str] = field(default_factory=list)
    satisfied: list[str] = field(default_factory=list)
    planned: list[str] = field(default_factory=list)
    manifest: dict | None = None
    manifest_text: str = ""
    manifest_changed: bool = False
    reconnects: int = 0

    @property
    def manifest_sha256(self) -> str | None:
        return hashlib.sha256(self.manifest_text.encode()).hexdigest() if self.manifest_text else None


class Runner:
    def __init__(
        self,
        recipe: Recipe,
        connect: Callable[[], Host],
        report: Callable[[Event], None] = lambda e: None,
        retries: int = 3,
        backoff_s: float = 1.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
    ):
        self.recipe, self.connect, self.report = recipe, connect, report
        self.retries, self.backoff_s, self.sleep, self.clock = retries, backoff_s, sleep, clock
        self.steps: list[RenderedStep] = render(recipe)
        self.interrupted: str | None = None  # the step whose apply a lost connection cut off
        self._known: dict[str, Result] = {}  # script -> its result from this connection's survey, until an apply

    # --- one remote script for every read of a pass ---------------------------------------------------
    def _reads(self) -> dict[str, int]:
        """Every read-only script a pass with nothing to apply runs (checks, facts, the manifest) -> its timeout."""
        out: dict[str, int] = {step.check: step.timeout_s for step in self.steps}
        for step in self.steps:
            if step.fact:
                out[facts_mod.FACTS[step.fact].command(self.recipe, step.vars)] = 60
        names = facts_mod.MANIFEST_FACTS if self.recipe.manifest_facts is None else self.recipe.manifest_facts
        out.update({facts_mod.FACTS[n].command(self.recipe, {}): 60 for n in names})
        out[f"cat {shlex.quote(self.recipe.layout.manifest)}"] = 60
        return out

    def _survey(self, host: Host) -> None:
        """Run every read of the pass as one remote command; each part runs in its own bash, as `host.run` would."""
        reads = self._reads()
        mark = f"gpufleet-survey-{secrets.token_hex(8)}"
        script = "\n".join(
            f"printf '%s\\n' {shlex.quote(f'{mark} begin {i}')}\n"
            f"bash -c {shlex.quote(part)}; printf '\\n%s %d\\n' {shlex.quote(f'{mark} end {i}')} $?"
            for i, part in enumerate(reads)
        )
        r = host.run(script, sum(reads.values()))
        self._known = {}
        if r.exit == 0:
            self._known = {part: res for part, res in zip(reads, parse_survey(r.stdout, mark, len(reads))) if res is not None}

    def _run(self, host: Host, script: str, timeout_s: int) -> Result:
        known = self._known.get(script)
        return known if known is not None else host.run(script, timeout_s)

    def build(self, dry_run: bool = False) -> BuildResult:
        result = BuildResult(self.recipe.name, "planned" if dry_run else "unchanged")
        attempt = 0
        while True:
            host = None
            try:
                host = self.connect()
                self._pass(host, result, dry_run)
                if not dry_run:
                    self._manifest(host, result)
                    if result.applied or result.manifest_changed:
                        result.status = "changed"
                return result
            except ConnectionLost as exc:
                attempt += 1
                if attempt > self.retries:
                    raise ConnectionLost(f"{exc} (gave up after {self.retries} reconnect attempts)") from None
                delay = min(self.backoff_s * 2.0 ** min(attempt - 1, 64), MAX_WAIT_S)
                result.reconnects += 1
                self.report(Event("retry", detail=f"{exc}; reconnecting in {delay:g}s (attempt {attempt}/{self.retries})"))
                self.sleep(delay)
            finally:
                if host is not None:
                    try:
                        host.close()
                    except Exception:  # closing a dead connection may raise; nothing left to do with it
                        pass

    # --- one pass over the steps -------------------------------------------------------------------
    def _pass(self, host: Host, result: BuildResult, dry_run: bool) -> None:
        total = len(self.steps)
        result.satisfied, result.planned = [], []
        self._survey(host)
        for i, step in enumerate(self.steps, 1):
            self.report(Event("check", step.name, i, total))
            interrupted = self.interrupted == step.name
            if interrupted:  # its apply may still run on the host: wait for it before looking
                waited = host.run(self._locked("true", step), step.timeout_s + 30)
                if waited.exit != 0:
                    raise StepFailed(step.name, "apply", waited, "the apply cut off by the lost connection still runs")
                self._known = {}  # the survey may have run while that apply still changed the host
            ok, why = self._satisfied(host, step)
            if interrupted:
                self.interrupted = None
                if not ok:
                    self._cleanup(host, step, i, total, "after the lost connection: ")
            if ok:
                if step.name not in result.applied:
                    result.satisfied.append(step.name)
                self.report(Event("satisfied", step.name, i, total, why))
                continue
            if dry_run:
                result.planned.append(step.name)
                self.report(Event("would-apply", step.name, i, total, why))
                continue
            self.report(Event("apply", step.name, i, total, why))
            started = time.monotonic()
            self._known = {}  # the host changes: every later read runs afresh
            try:
                applied = host.run(self._locked(step.apply, step), step.timeout_s)
            except ConnectionLost:
                self.interrupted = step.name
                raise
            if applied.exit != 0:
                self._cleanup(host, step, i, total)
                raise StepFailed(step.name, "apply", applied, f"apply exited {applied.exit}")
            ok, why = self._satisfied(host, step)
            if not ok:
                raise StepFailed(
                    step.name, "check", Result(1, "", why), f"apply finished but the step is still not satisfied: {why}"
                )
            if step.name not in result.applied:
                result.applied.append(step.name)
            self.report(Event("applied", step.name, i, total, f"{time.monotonic() - started:.1f}s"))

    def _satisfied(self, host: Host, step: RenderedStep) -> tuple[bool, str]:
        checked = self._run(host, step.check, step.timeout_s)
        if checked.exit not in (0, NOT_SATISFIED):
            checked = host.run(step.check, step.timeout_s)  # the survey keeps no stderr: run it again for the message
        if checked.exit == NOT_SATISFIED:
            return False, "check: not satisfied"
        if checked.exit != 0:
            raise StepFailed(step.name, "check", checked, f"check errored (exit {checked.exit})")
        if step.fact and step.pin:
            observed = self._fact(host, step.fact, step.vars)
            want = self.recipe.pins[step.pin]
            if not facts_mod.matches(observed, want):
                return False, f"{step.fact} is {observed or 'absent'}, pin {step.pin} is {want}"
            return True, f"{step.fact} {observed}"
        return True, "check: satisfied"

    def _fact(self, host: Host, name: str, vars: dict) -> str | None:
        fact = facts_mod.FACTS[name]
        r = self._run(host, fact.command(self.recipe, vars), 60)
        return fact.parse(r.stdout) if r.exit == 0 else None

    def _cleanup(self, host: Host, step: RenderedStep, i: int, total: int, why: str = "") -> None:
        if step.cleanup:
            r = host.run(self._locked(step.cleanup, step), step.timeout_s)
            self.report(Event("cleanup", step.name, i, total, why + ("done" if r.exit == 0 else f"exit {r.exit}: {r.output}")))

    def lock_path(self, step: RenderedStep) -> str:
        return f"{self.recipe.layout.prefix.rstrip('/')}/.locks/{step.name}.lock"

    def _locked(self, script: str, step: RenderedStep) -> str:
        """`script` under the step's host lock (flock on fd 9, inherited by everything the script starts)."""
        lock = self.lock_path(step)
        wait = step.timeout_s + 30
        return (
            f"install -d -m 0755 {shlex.quote(lock.rsplit('/', 1)[0])}\n"
            f"exec 9>>{shlex.quote(lock)}\n"
            f"flock -w {wait} 9 || {{ echo 'step {step.name}: another apply still holds {lock} after {wait}s' >&2; exit 75; }}\n"
            + script
        )

    # --- manifest ------------------------------------------------------------------------------------
    def _manifest(self, host: Host, result: BuildResult) -> None:
        observed: dict[str, str] = {}
        for step in self.steps:
            if step.fact:
                value = self._fact(host, step.fact, step.vars)
                if value is not None:
                    observed[facts_mod.observed_key(step)] = value
        names = facts_mod.MANIFEST_FACTS if self.recipe.manifest_facts is None else self.recipe.manifest_facts
        for name in names:
            if name not in observed:
                value = self._fact(host, name, {})
                if value is not None:
                    observed[name] = value
        body = {
            "recipe": self.recipe.name,
            "pins": dict(sorted(self.recipe.pins.items())),
            "observed": dict(sorted(observed.items())),
            "steps": {s.name: s.digest() for s in self.steps},
        }
        path = self.recipe.layout.manifest
        old = self._run(host, f"cat {shlex.quote(path)}", 60)
        try:
            old_doc = json.loads(old.stdout) if old.exit == 0 else None
        except json.JSONDecodeError:
            old_doc = None
        if old_doc is not None and {k: v for k, v in old_doc.items() if k != "build_time"} == body:
            result.manifest, result.manifest_text, result.manifest_changed = old_doc, old.stdout, False
            self.report(Event("manifest", detail=f"{path} unchanged"))
            return
        doc = {**body, "build_time": self.clock().replace(microsecond=0).isoformat()}
        text = json.dumps(doc, indent=2, sort_keys=True) + "\n"
        write = (
            "set -euo pipefail\n"
            f"install -d -m 0755 {shlex.quote(str(Path(path).parent))}\n"
            f"printf '%s' {shlex.quote(text)} > {shlex.quote(path + '.tmp')}\n"
            f"mv {shlex.quote(path + '.tmp')} {shlex.quote(path)}\n"
        )
        w = host.run(write, 60)
        if w.exit != 0:
            raise StepFailed("manifest", "apply", w, f"writing {path} exited {w.exit}")
        back = host.run(f"cat {shlex.quote(path)}", 60)
        if back.exit != 0 or back.stdout != text:
            raise StepFailed("manifest", "check", back, f"{path} read back differs from what was written")
        result.manifest, result.manifest_text, result.manifest_changed = doc, back.stdout, True
        self.report(Event("manifest", detail=f"{path} written"))


def parse_survey(stdout: str, mark: str, n: int) -> list[Result | None]:
    """The n parts of a survey's output (stdout and exit of each, between its begin and end lines); None for a part
    whose lines are missing (that read then runs on its own)."""
    out: list[Result | None] = []
    pos = 0
    for i in range(n):
        begin, end = f"{mark} begin {i}\n", f"\n{mark} end {i} "
        b = stdout.find(begin, pos)
        e = stdout.find(end, b + len(begin)) if b >= 0 else -1
        eol = stdout.find("\n", e + len(end)) if e >= 0 else -1
        if eol < 0 or not stdout[e + len(end) : eol].isdigit():
            out.append(None)
            continue
        out.append(Result(int(stdout[e + len(end) : eol]), stdout[b + len(begin) : e], ""))
        pos = eol
    return out
