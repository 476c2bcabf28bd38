"""Run a recipe's steps on a host over SSH (Fabric), idempotently, resuming after a dropped connection.

For each step in order: run `check`; it is satisfied when the check exits 0, the step's fact equals its pin, and
the host records that this very step (the sha256 of its check, apply and cleanup scripts, RenderedStep.digest) was
applied there: <layout.prefix>/.state/<step>.sha256, written only after an apply exited 0 and the check passed right
after it. So a recipe change the check does not read (a new Python lock, a changed apply) is applied again, and the
manifest's `steps` are the digests the host recorded. A host built before digests were recorded has none: each step
is applied again (apply is safe to re-run), and the plan says so. Otherwise run `apply`, then `check` again; the
first failure stops the build with that step's output, and a failed apply (or one whose check still fails) runs the
step's `cleanup`. A lost connection reconnects with backoff and starts again from the top, where every step already
done is only checked, so the build resumes at the first unsatisfied step. At the end the host's facts must meet
the recipe's pins (facts.observed_problems), then the manifest is written on the host (unless it already says the
same), synced and read back.

One apply at a time per step on the host: every apply holds an flock(1) on /run/lock/gpufleet-<prefix hash>/<step>.lock
(tmpfs: never in the image) for as long as it (and anything it started) runs. An apply first leaves a marker, <layout.prefix>/.state/<step>.applying;
it becomes <step>.applied when the apply exits 0, and goes when its check passed (the digest is recorded) or its
cleanup ran. A build that finds the marker, in this process after a lost connection or in a new one after the
client was killed, waits for the step's lock (the apply may still run there), then runs the step's cleanup before
applying it again; an apply that finished meanwhile (<step>.applied) is only checked.

Every script runs on the host under timeout(1): TERM to its process group after its limit (a step's timeout_s, 60 s
for a fact or the manifest), KILL KILL_AFTER_S later, so nothing outlives it; the survey (every read of a pass in one
remote command) gives each read its own limit and keeps its stderr. The client waits SLACK_S longer than the host's
own limit, and a command it stopped waiting for is a timeout, never a lost connection.

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


class SudoRefused(Exception):
    """The login user is not root and cannot run `sudo -n` (no passwordless sudo, or no sudo at all)."""


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
        if target.user != "root":
            self._probe_sudo()
        if target.keepalive_s > 0:
            threading.Thread(target=self._keepalive, name="ssh-keepalive", daemon=True).start()

    def _probe_sudo(self) -> None:
        """Once, at connect: every script runs under `sudo -n`, so a user whose sudo wants a password (exit 1, as a
        check says "not satisfied") or who has no sudo would read as a host with nothing built. Raises SudoRefused."""
        t = self.target
        try:
            r = self.run("true", max(t.connect_timeout_s, 10))
        except ConnectionLost:
            self.close()
            raise
        if r.exit != 0:
            self.close()
            said = one_line_of(r.stderr) or f"exit {r.exit}"
            where = f"{t.user}@{t.host}:{t.port}"
            if r.exit == 127 or "command not found" in said:
                raise SudoRefused(f"{where}: sudo is not installed ({said}): install it, or log in as root with --user root")
            raise SudoRefused(
                f"{where} cannot run sudo without a password (`sudo -n`: {said}): every build script runs under "
                f"`sudo -n`; give {t.user} a NOPASSWD rule (e.g. `{t.user} ALL=(ALL) NOPASSWD: ALL` in "
                f"/etc/sudoers.d/gpufleet), or log in as root with --user root"
            )

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
        """Run `script` in bash (under `sudo -n` when the user is not root). `timeout_s` is how long this client waits:
        the Runner passes more than the host's own limit (timeout(1) in the script), so reaching it means the host
        did not answer in time. Fabric then closes the channel; invoke may report that as exit -1 without
        CommandTimedOut (its timer thread is still alive while it closes the channel), so the client keeps its own
        deadline: an exit -1 after it is this timeout, not a lost connection."""
        # deferred: the SSH stack: only an image build over SSH needs it
        import invoke
        import paramiko

        cmd = "bash -c " + shlex.quote(script)
        if self.target.user != "root":
            cmd = "sudo -n " + cmd
        deadline = time.monotonic() + timeout_s
        try:
            r = self.conn.run(cmd, hide=True, warn=True, timeout=timeout_s, in_stream=False)
        except invoke.exceptions.CommandTimedOut as exc:
            return Result(124, exc.result.stdout, exc.result.stderr + self._no_answer(timeout_s))
        except (OSError, EOFError, paramiko.SSHException) as exc:
            raise ConnectionLost(f"connection lost: {self.lost or exc}") from None
        transport = self.conn.client.get_transport()
        alive = transport is not None and transport.is_active()
        if r.exited is None or r.exited < 0 or not alive:
            if alive and self.lost is None and time.monotonic() >= deadline:
                return Result(124, r.stdout, r.stderr + self._no_answer(timeout_s))
            raise ConnectionLost(f"connection lost while running: {self.lost or f'exit status {r.exited}'}")
        return Result(r.exited, r.stdout, r.stderr)

    @staticmethod
    def _no_answer(timeout_s: int) -> str:
        return f"\n(no answer from the host within {timeout_s}s, past the limit it enforces itself: it may still run there)"

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


# After a script's limit timeout(1) sends TERM to its process group, and KILL this long after.
KILL_AFTER_S = 10
# How much longer than the host's own limit the client waits for an answer before it gives up on the command.
SLACK_S = 30
# The limit of a fact, the state read and the manifest's reads and write.
READ_S = 60


def one_line_of(text: str) -> str:
    """The first non-empty line of `text`, stripped and cut at 200 characters ("" when there is none)."""
    return next((ln.strip()[:200] for ln in text.splitlines() if ln.strip()), "")


def bounded(script: str, seconds: int, err: str = "") -> str:
    """Shell lines running `script` in its own bash under timeout(1) (TERM to its whole process group after
    `seconds`, KILL KILL_AFTER_S later) and leaving its exit status in $rc: 124 when it timed out, with a line on its
    stderr saying so. `err`: a file its stderr goes to (a shell word, already quoted)."""
    e = f" 2>{err}" if err else ""
    note = shlex.quote(f"(timed out after {seconds}s: stopped on the host)")
    return (
        f"started=$SECONDS\n"
        f"timeout --kill-after={KILL_AFTER_S} {seconds} bash -c {shlex.quote(script)}{e}; rc=$?\n"
        # 137: KILLed after ignoring TERM; a KILL before the limit (the OOM killer) is the script's own exit
        f'if [ "$rc" -eq 124 ] || {{ [ "$rc" -eq 137 ] && [ $((SECONDS - started)) -ge {seconds} ]; }}; then\n'
        f"  printf '%s\\n' {note} >{'>' + err if err else '&2'}; rc=124\n"
        f"fi\n"
    )


def host_limit(seconds: int) -> int:
    """How long a script bounded to `seconds` may run on the host at most (its limit, then the KILL)."""
    return seconds + KILL_AFTER_S


class StepState(Struct, frozen=True):
    """What the host records of one step (<prefix>/.state/<step>.*): the digest applied and checked (.sha256), an apply
    that started and did not exit 0 (.applying), one that exited 0 but was not checked yet (.applied). Each holds
    the digest of the step as it was applied ("" when the file is there but does not hold one)."""

    recorded: str | None = None
    applying: str | None = None
    applied: str | None = None


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
        self._known: dict[str, Result] = {}  # script -> its result from this connection's survey, until an apply

    # --- where the host keeps its locks and records ------------------------------------------------------
    def lock_path(self, step: RenderedStep) -> str:
        """The step's lock, in /run/lock (a tmpfs: the lock files do not go into the image, as <prefix>/.locks/ did),
        one folder per layout prefix (a hash of it), so builds of the same prefix share their locks."""
        key = hashlib.sha256(self.recipe.layout.prefix.rstrip("/").encode()).hexdigest()[:16]
        return f"/run/lock/gpufleet-{key}/{step.name}.lock"

    def state_dir(self) -> str:
        return f"{self.recipe.layout.prefix.rstrip('/')}/.state"

    def state_path(self, step: RenderedStep, kind: str) -> str:
        """<prefix>/.state/<step>.<kind>: kind sha256 (applied and checked), applying or applied (see StepState)."""
        return f"{self.state_dir()}/{step.name}.{kind}"

    def _state_read(self) -> str:
        """One line per step: its .sha256, .applying and .applied (each a digest, ? when unreadable, - when absent)."""
        lines = [
            'v() { [ -e "$1" ] || { printf -; return; }; x="$(head -c 64 "$1" 2>/dev/null | tr -dc 0-9a-f)"; printf \'%s\' "${x:-?}"; }'
        ]
        for step in self.steps:
            files = " ".join(f'"$(v {shlex.quote(self.state_path(step, k))})"' for k in ("sha256", "applying", "applied"))
            lines.append(f"printf '%s %s %s\\n' {files}")
        return "\n".join(lines) + "\n"

    def _states(self, host: Host) -> dict[str, StepState]:
        r = self._run(host, self._state_read(), READ_S)
        if r.exit != 0:
            raise StepFailed("state", "check", r, f"reading {self.state_dir()} exited {r.exit}")
        rows = r.stdout.splitlines()
        out = {}
        for n, step in enumerate(self.steps):
            words = rows[n].split() if n < len(rows) else []
            if len(words) != 3:
                raise StepFailed("state", "check", r, f"reading {self.state_dir()} gave no line for step {step.name}")
            got = [None if w == "-" else "" if w == "?" else w for w in words]
            out[step.name] = StepState(*got)
        return out

    # --- one remote script for every read of a pass ---------------------------------------------------
    def _reads(self) -> dict[str, int]:
        """Every read-only script a pass with nothing to apply runs (checks, facts, the state, the manifest) -> its
        timeout."""
        out: dict[str, int] = {step.check: step.timeout_s for step in self.steps}
        for step in self.steps:
            if step.fact:
                out[facts_mod.FACTS[step.fact].command(self.recipe, step.vars)] = READ_S
        names = facts_mod.MANIFEST_FACTS if self.recipe.manifest_facts is None else self.recipe.manifest_facts
        out.update({facts_mod.FACTS[n].command(self.recipe, {}): READ_S for n in names})
        out[self._state_read()] = READ_S
        out[f"cat {shlex.quote(self.recipe.layout.manifest)}"] = READ_S
        return out

    def _survey(self, host: Host) -> None:
        """Run every read of the pass as one remote command: each part in its own bash under its own limit, its
        stdout, stderr and exit kept, as `_run` would get them one at a time."""
        reads = self._reads()
        mark = f"gpufleet-survey-{secrets.token_hex(8)}"
        lines = ['d="$(mktemp -d)" || exit 1', "trap 'rm -rf \"$d\"' EXIT"]
        for i, (part, seconds) in enumerate(reads.items()):
            lines.append(f"printf '%s\\n' {shlex.quote(f'{mark} begin {i}')}")
            lines.append(bounded(part, seconds, err='"$d/e"').rstrip("\n"))
            lines.append(
                f"printf '\\n%s\\n' {shlex.quote(f'{mark} stderr {i}')}; cat \"$d/e\"; "
                f"printf '\\n%s %d\\n' {shlex.quote(f'{mark} end {i}')} \"$rc\""
            )
        r = host.run("\n".join(lines) + "\n", sum(host_limit(t) for t in reads.values()) + SLACK_S)
        self._known = {}
        if r.exit == 0:
            self._known = {part: res for part, res in zip(reads, parse_survey(r.stdout, mark, len(reads))) if res is not None}

    def _run(self, host: Host, script: str, timeout_s: int) -> Result:
        known = self._known.get(script)
        if known is not None:
            return known
        return host.run(bounded(script, timeout_s) + 'exit "$rc"\n', host_limit(timeout_s) + SLACK_S)

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
        states = self._states(host)
        for i, step in enumerate(self.steps, 1):
            self.report(Event("check", step.name, i, total))
            state = states[step.name]
            if state.applying is not None:  # an apply of it started and did not finish (cut off, killed or failed)
                if dry_run:
                    why = "an earlier apply of it did not finish: a build runs its cleanup, then applies it"
                    result.planned.append(step.name)
                    self.report(Event("would-apply", step.name, i, total, why))
                    continue
                waited = host.run(*self._locked(step, "rc=0\n", 0))  # it may still run there: wait for it to end
                if waited.exit != 0:
                    raise StepFailed(step.name, "apply", waited, "an earlier apply of it still runs on the host")
                self._known = {}  # the survey may have run while that apply still changed the host
                states = self._states(host)
                state = states[step.name]
                if state.applying is not None:
                    self._cleanup(host, step, i, total, "after an earlier apply that did not finish: ")
                    state = StepState(state.recorded)
            ok, why = self._satisfied(host, step, state, dry_run)
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
            applied = host.run(*self._apply(step))
            if applied.exit != 0:
                self._cleanup(host, step, i, total)
                how = f"apply timed out after {step.timeout_s}s (its timeout_s)" if applied.exit == 124 else ""
                raise StepFailed(step.name, "apply", applied, how or f"apply exited {applied.exit}")
            ok, why, checked = self._verify(host, step)
            if not ok:
                self._cleanup(host, step, i, total)
                raise StepFailed(step.name, "check", checked, f"apply finished but the step is still not satisfied: {why}")
            self._record(host, step)
            if step.name not in result.applied:
                result.applied.append(step.name)
            self.report(Event("applied", step.name, i, total, f"{time.monotonic() - started:.1f}s"))

    def _verify(self, host: Host, step: RenderedStep) -> tuple[bool, str, Result]:
        """The step's check and its fact against its pin (not the recorded digest): (satisfied, why, the check's
        result, whose output says why when it is not)."""
        checked = self._run(host, step.check, step.timeout_s)
        if checked.exit == NOT_SATISFIED:
            return False, "check: not satisfied", Result(checked.exit, checked.stdout, checked.stderr)
        if checked.exit != 0:
            how = " (timed out: its timeout_s)" if checked.exit == 124 else ""
            raise StepFailed(step.name, "check", checked, f"check errored (exit {checked.exit}){how}")
        if step.fact and step.pin:
            observed = self._fact(host, step.fact, step.vars)
            want = self.recipe.pins[step.pin]
            if not facts_mod.matches(observed, want):
                return False, f"{step.fact} is {observed or 'absent'}, pin {step.pin} is {want}", Result(1, "", "")
            return True, f"{step.fact} {observed}", checked
        return True, "check: satisfied", checked

    def _satisfied(self, host: Host, step: RenderedStep, state: StepState, dry_run: bool) -> tuple[bool, str]:
        """The check passes, the fact meets its pin, and the host records this step's digest as applied."""
        ok, why, _ = self._verify(host, step)
        if not ok:
            return False, why
        digest = step.digest()
        if state.recorded == digest:
            return True, why
        if state.applied == digest and state.recorded is None:  # its apply finished, its record did not happen
            late = f"{why}; an earlier apply of it finished but was not recorded (its build lost the connection or failed)"
            if dry_run:
                return True, f"{late}: a build records it"
            self._record(host, step)
            return True, f"{late}: recorded now"
        if state.recorded is None:
            return False, (
                f"{why}, but the host records no applied digest for it (built before gpufleet recorded them, "
                f"or by hand): applying it again"
            )
        was = f"{state.recorded[:12]}…" if state.recorded else "unreadable"
        return False, f"{why}, but the step changed since it was applied (applied {was}, now {digest[:12]}…)"

    def _fact(self, host: Host, name: str, vars: dict) -> str | None:
        fact = facts_mod.FACTS[name]
        r = self._run(host, fact.command(self.recipe, vars), READ_S)
        return fact.parse(r.stdout) if r.exit == 0 else None

    # --- scripts that change the host, each under the step's lock ------------------------------------
    def _lock_wait(self, step: RenderedStep) -> int:
        """How long to wait for the step's lock: what one holder (an apply or a cleanup, bounded) may take."""
        return host_limit(step.timeout_s) + 30

    def _locked(self, step: RenderedStep, body: str, seconds: int) -> tuple[str, int]:
        """(script, client timeout): `body` (shell lines that leave an exit status in $rc, running at most
        host_limit(seconds)) under the step's host lock (flock on fd 9, inherited by everything it starts)."""
        lock = self.lock_path(step)
        wait = self._lock_wait(step)
        script = (
            f"install -d -m 0755 {shlex.quote(lock.rsplit('/', 1)[0])}\n"
            f"exec 9>>{shlex.quote(lock)}\n"
            f"flock -w {wait} 9 || {{ echo 'step {step.name}: another apply still holds {lock} after {wait}s' >&2; exit 75; }}\n"
            + body
            + 'exit "$rc"\n'
        )
        return script, wait + (host_limit(seconds) if seconds else 0) + SLACK_S

    def _apply(self, step: RenderedStep) -> tuple[str, int]:
        """The apply under the lock: the marker first (the record of an earlier apply goes), then the apply; when it
        exits 0 the marker becomes <step>.applied, to be checked before the digest is recorded."""
        state = shlex.quote(self.state_dir())
        applying, applied = (shlex.quote(self.state_path(step, k)) for k in ("applying", "applied"))
        recorded = shlex.quote(self.state_path(step, "sha256"))
        body = (
            f"install -d -m 0755 {state} && rm -f {recorded} {applied} && printf '%s\\n' {step.digest()} > {applying} || "
            f"{{ echo 'step {step.name}: cannot write its marker in {self.state_dir()}' >&2; exit 1; }}\n"
            + bounded(step.apply, step.timeout_s)
            + f'if [ "$rc" -eq 0 ]; then mv -f {applying} {applied} && sync {applied} {state} || rc=1; fi\n'
        )
        return self._locked(step, body, step.timeout_s)

    def _record(self, host: Host, step: RenderedStep) -> None:
        """Record on the host that this step's digest was applied and checked (after its post-apply check passed)."""
        state = shlex.quote(self.state_dir())
        applied = shlex.quote(self.state_path(step, "applied"))
        path = self.state_path(step, "sha256")
        digest = step.digest()
        body = (
            f'if [ "$(cat {applied} 2>/dev/null)" != {digest} ]; then\n'
            f"  echo 'step {step.name}: its finished apply is no longer recorded in {self.state_dir()} (another build changed it?)' >&2; rc=1\n"
            f"else\n"
            f"  printf '%s\\n' {digest} > {shlex.quote(path + '.tmp')} && sync {shlex.quote(path + '.tmp')} && "
            f"mv -f {shlex.quote(path + '.tmp')} {shlex.quote(path)} && rm -f {applied} && sync {state}; rc=$?\n"
            f'  [ "$rc" -eq 0 ] || rm -f {shlex.quote(path + ".tmp")}\n'
            f"fi\n"
        )
        self._known.pop(self._state_read(), None)  # the survey's read of the state is stale now
        r = host.run(*self._locked(step, body, 0))
        if r.exit != 0:
            raise StepFailed(step.name, "apply", r, f"recording its digest in {path} exited {r.exit}")

    def _cleanup(self, host: Host, step: RenderedStep, i: int, total: int, why: str = "") -> None:
        """The step's cleanup (if it has one) under its lock; when it succeeds, the step's markers go too."""
        markers = " ".join(shlex.quote(self.state_path(step, k)) for k in ("applying", "applied"))
        body = (bounded(step.cleanup, step.timeout_s) if step.cleanup else "rc=0\n") + (
            f'if [ "$rc" -eq 0 ]; then rm -f {markers}; fi\n'
        )
        r = host.run(*self._locked(step, body, step.timeout_s if step.cleanup else 0))
        if step.cleanup:
            self.report(Event("cleanup", step.name, i, total, why + ("done" if r.exit == 0 else f"exit {r.exit}: {r.output}")))

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
        wrong = facts_mod.observed_problems(self.recipe, observed)
        if wrong:  # a step changed what an earlier one checked (or another build did): not an image of this recipe
            detail = "\n".join(f"{field}: {message}" for field, message in wrong)
            raise StepFailed(
                "manifest",
                "check",
                Result(1, "", detail),
                "at the end of the build the host's facts do not meet the recipe's pins (did a later step, or another "
                "build on this host, change them?); no manifest written",
            )
        states = self._states(host)
        changed = [s.name for s in self.steps if states[s.name].recorded != s.digest()]
        if changed:
            raise StepFailed(
                "manifest",
                "check",
                Result(1, "", ""),
                f"the host no longer records the applied digest of {', '.join(changed)} (another build on this host?); "
                "no manifest written",
            )
        body = {
            "recipe": self.recipe.name,
            "pins": dict(sorted(self.recipe.pins.items())),
            "observed": dict(sorted(observed.items())),
            "steps": {s.name: states[s.name].recorded for s in self.steps},  # as the host recorded them
        }
        path = self.recipe.layout.manifest
        old = self._run(host, f"cat {shlex.quote(path)}", READ_S)
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
        tmp = shlex.quote(path + ".tmp")
        write = (
            "set -euo pipefail\n"
            f"trap 'rm -f {tmp}' EXIT\n"  # a failed write (a full disk) leaves no .tmp behind
            f"install -d -m 0755 {shlex.quote(str(Path(path).parent))}\n"
            f"printf '%s' {shlex.quote(text)} > {tmp}\n"
            f"sync {tmp}\n"
            f"mv {tmp} {shlex.quote(path)}\n"
            f"sync {shlex.quote(str(Path(path).parent))}\n"  # in an image taken right after the build
        )
        self._known = {}
        w = self._run(host, write, READ_S)
        if w.exit != 0:
            raise StepFailed("manifest", "apply", w, f"writing {path} exited {w.exit}")
        back = self._run(host, f"cat {shlex.quote(path)}", READ_S)
        if back.exit != 0 or back.stdout != text:
            raise StepFailed("manifest", "check", back, f"{path} read back differs from what was written")
        result.manifest, result.manifest_text, result.manifest_changed = doc, back.stdout, True
        self.report(Event("manifest", detail=f"{path} written"))


def parse_survey(stdout: str, mark: str, n: int) -> list[Result | None]:
    """The n parts of a survey's output (stdout, stderr and exit of each, between its begin, stderr and end lines);
    None for a part whose lines are missing (that read then runs on its own)."""
    out: list[Result | None] = []
    pos = 0
    for i in range(n):
        begin, middle, end = f"{mark} begin {i}\n", f"\n{mark} stderr {i}\n", f"\n{mark} end {i} "
        b = stdout.find(begin, pos)
        m = stdout.find(middle, b + len(begin)) if b >= 0 else -1
        e = stdout.find(end, m + len(middle)) if m >= 0 else -1
        eol = stdout.find("\n", e + len(end)) if e >= 0 else -1
        if eol < 0 or not stdout[e + len(end) : eol].isdigit():
            out.append(None)
            continue
        out.append(Result(int(stdout[e + len(end) : eol]), stdout[b + len(begin) : m], stdout[m + len(middle) : e]))
        pos = eol
    return out
