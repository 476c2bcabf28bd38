"""The rollout's state file and the operator lock, both beside the stack file.

- `.rollout-<stack>.json`: the plan (strategy, steps), who started it, where it stands (status, step, the change being applied),
  the deploys awaiting confirmation and every step's gate results. Written atomically (temp file + fsync + rename,
  gpufleet.files.write_atomic), so a crash leaves the old state or the new one, never half of one. A transition is
  recorded before it starts (`in_progress`), so the next command after a crash resumes it.
- `.rollout-<stack>.lock`: held with fcntl.flock for the length of one command and holding its owner (user, host,
  pid, command, since), removed at its end. A second operator is refused, naming the owner. The kernel drops the
  lock of a process that crashed, so the next command goes on (and says that the previous one ended without
  finishing).
"""

from __future__ import annotations

import getpass
import json
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpufleet.errors import Problem, UserError
from gpufleet.files import write_atomic

VERSION = 1
ACTIVE = ("rolling", "promoted")  # a rollout in one of these blocks a new `rollout start`


def paths(stack_file: Path, stack: str) -> tuple[Path, Path]:
    folder = stack_file.parent
    return folder / f".rollout-{stack}.json", folder / f".rollout-{stack}.lock"


def now_iso(now: datetime | None = None) -> str:
    return (now or datetime.now(UTC)).isoformat(timespec="seconds")


@dataclass
class State:
    stack: str
    strategy: str
    steps: list[int]
    status: str = "rolling"  # rolling | promoted | rolled_back | aborted | finished
    step: int = -1  # index into steps of the weight the stack file holds (-1: not started)
    in_progress: dict | None = None  # {"command", "since", "changes": [...]} while a transition runs
    awaiting_deploy: dict | None = None  # {"change", "commands"}: the stack file changed; `pulumi up` not yet confirmed
    retire_after: str | None = None
    reason: str | None = None
    started_at: str = field(default_factory=now_iso)
    started_by: str = ""  # user@host of the `rollout start`
    history: list[dict] = field(default_factory=list)

    @property
    def weight(self) -> int | None:
        return self.steps[self.step] if 0 <= self.step < len(self.steps) else None

    def as_json(self) -> dict:
        return {
            "version": VERSION,
            "stack": self.stack,
            "strategy": self.strategy,
            "steps": self.steps,
            "status": self.status,
            "step": self.step,
            "weight": self.weight,
            "in_progress": self.in_progress,
            "awaiting_deploy": self.awaiting_deploy,
            "retire_after": self.retire_after,
            "reason": self.reason,
            "started_at": self.started_at,
            "started_by": self.started_by,
            "history": self.history,
        }


# what to do about a damaged state file (no command can go on from it)
FIX = "restore it, or remove it to forget the rollout; the stack file stays as it is"
STATUSES = ("rolling", "promoted", "rolled_back", "aborted", "finished")
KINDS = ("weight", "promote", "finish", "rollback")  # plan.Change.kind
THEN = ("status", "step", "retire_after")  # what a transition sets when it ends (runner.Run.begin)


def load(path: Path) -> State | None:
    """The state file, None when there is none; a damaged one (not UTF-8, not JSON, a folder, a field missing or of the
    wrong type) is a UserError naming the file and each field, before anything is done."""
    from gpufleet import inputs

    if not os.path.lexists(path):
        return None
    shown = str(path)
    try:
        text = inputs.read_text(path, shown)
    except UserError as exc:
        raise UserError([replace(p, message=f"{p.message} (a rollout's state file: {FIX})") for p in exc.problems]) from None
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise UserError([Problem(shown, "", f"not JSON ({exc}): {FIX}")]) from None
    if not isinstance(raw, dict) or raw.get("version") != VERSION:
        raise UserError([Problem(shown, "version", f"is not {VERSION}: a state file of another gpufleet version")])
    if problems := shape_problems(raw):
        raise UserError([Problem(shown, field, f"{why}; {FIX}") for field, why in problems])
    return State(
        stack=raw["stack"],
        strategy=raw["strategy"],
        steps=list(raw["steps"]),
        status=raw["status"],
        step=raw["step"],
        in_progress=raw.get("in_progress"),
        awaiting_deploy=raw.get("awaiting_deploy"),
        retire_after=raw.get("retire_after"),
        reason=raw.get("reason"),
        started_at=raw["started_at"],
        started_by=raw.get("started_by") or "",
        history=list(raw.get("history") or []),
    )


# ---- the state file's shape: each field the commands read, of the type they read it as -----------------------------

_MISSING = object()


def _whole(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _weight(v: Any) -> bool:
    return _whole(v) and 0 <= v <= 100


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _text(v: Any) -> bool:
    return isinstance(v, str)


def _zoned_time(v: Any) -> bool:
    try:
        return isinstance(v, str) and datetime.fromisoformat(v).tzinfo is not None
    except ValueError:
        return False


def _one_of(*choices: str) -> tuple[Callable[[Any], bool], str]:
    return (lambda v: isinstance(v, str) and v in choices), f"one of {', '.join(choices)}"


WEIGHT, TEXT, ZONED = (_weight, "a whole number 0 to 100"), (_text, "text"), (_zoned_time, "a date and time with its zone")


class _Shape:
    """Collects (field, why) for each value of a parsed state file that is missing or of the wrong type."""

    def __init__(self) -> None:
        self.problems: list[tuple[str, str]] = []

    def want(self, field: str, value: Any, rule: tuple[Callable[[Any], bool], str], optional: bool = False) -> bool:
        """`value` passes `rule` (a test and what it wants); `optional`: null (or missing) passes too."""
        ok, what = rule
        if ok(value) or (optional and value in (None, _MISSING)):
            return True
        if value is _MISSING:
            self.problems.append((field, f"missing (expected {what})"))
            return False
        from gpufleet.inputs import kind

        got = kind(value)
        if isinstance(value, (str, int, float)) and not isinstance(value, bool) and len(repr(value)) <= 40:
            got += f" {value!r}"
        self.problems.append((field, f"expected {what}{' or null' if optional else ''}, got {got}"))
        return False

    def keys(self, mapping: dict, field: str, rules: dict[str, tuple[Callable[[Any], bool], str]], optional: bool = False):
        for key, rule in rules.items():
            self.want(f"{field}.{key}" if field else key, mapping.get(key, _MISSING), rule, optional)

    def mapping(self, field: str, value: Any, optional: bool = False) -> dict | None:
        ok = self.want(field, value, (lambda v: isinstance(v, dict), "a mapping"), optional)
        return value if ok and isinstance(value, dict) else None

    def items(self, field: str, value: Any) -> list:
        return value if self.want(field, value, (lambda v: isinstance(v, list), "a list")) else []

    def change(self, field: str, value: Any) -> None:
        if (c := self.mapping(field, value)) is not None and self.want(f"{field}.kind", c.get("kind", _MISSING), _one_of(*KINDS)):
            self.want(f"{field}.weight", c.get("weight", _MISSING), WEIGHT, optional=c["kind"] != "weight")


def shape_problems(raw: dict) -> list[tuple[str, str]]:
    """(field, why) for each field of a parsed state file that is missing or not of the type the commands read."""
    s = _Shape()
    s.keys(raw, "", {"stack": TEXT, "strategy": TEXT, "started_at": TEXT, "status": _one_of(*STATUSES)})
    s.keys(raw, "", {"started_by": TEXT, "reason": TEXT, "retire_after": ZONED}, optional=True)
    steps, step = raw.get("steps", _MISSING), (_whole, "a whole number")
    if s.want("steps", steps, (lambda v: isinstance(v, list) and bool(v), "a non-empty list of weights")):
        if all([s.want(f"steps[{i}]", w, WEIGHT) for i, w in enumerate(steps)]):
            n = len(steps)
            step = (lambda v: _whole(v) and -1 <= v < n), f"a whole number -1 to {n - 1} (an index into steps)"
    s.want("step", raw.get("step", _MISSING), step)
    if (p := s.mapping("in_progress", raw.get("in_progress"), optional=True)) is not None:
        s.keys(p, "in_progress", {"command": TEXT, "since": TEXT})
        for i, c in enumerate(s.items("in_progress.changes", p.get("changes", _MISSING))):
            s.change(f"in_progress.changes[{i}]", c)
        if (then := s.mapping("in_progress.then", p.get("then", _MISSING))) is not None:
            for key in sorted(set(then) - set(THEN), key=str):
                s.problems.append((f"in_progress.then.{key}", f"unknown: a transition sets only {', '.join(THEN)}"))
            s.keys(then, "in_progress.then", {"status": _one_of(*STATUSES), "step": (_whole, "a whole number")}, optional=True)
            s.keys(then, "in_progress.then", {"retire_after": ZONED}, optional=True)
    if (a := s.mapping("awaiting_deploy", raw.get("awaiting_deploy"), optional=True)) is not None:
        s.change("awaiting_deploy.change", a.get("change", _MISSING))
        for i, cmd in enumerate(s.items("awaiting_deploy.commands", a.get("commands", _MISSING))):
            s.want(f"awaiting_deploy.commands[{i}]", cmd, TEXT)
    for i, h in enumerate(s.items("history", raw.get("history") or [])):
        _measurement(s, f"history[{i}]", h)
    return s.problems


def _measurement(s: _Shape, field: str, value: Any) -> None:
    """One entry of the history (runner.Run.gate): what `rollout status` shows of it."""
    if (h := s.mapping(field, value)) is None:
        return
    s.keys(h, field, {"at": TEXT, "command": TEXT, "to": TEXT, "result": TEXT})
    s.keys(h, field, {"weight": (_whole, "a whole number")}, optional=True)
    for j, g in enumerate(s.items(f"{field}.gates", h.get("gates", _MISSING))):
        if (gate := s.mapping(f"{field}.gates[{j}]", g)) is not None:
            rules = {"name": TEXT, "detail": TEXT, "op": _one_of("<=", ">=", "=="), "threshold": (_number, "a number")}
            s.keys(gate, f"{field}.gates[{j}]", {**rules, "passed": (lambda v: isinstance(v, bool), "true or false")})
            s.keys(gate, f"{field}.gates[{j}]", {"measured": (_number, "a number")}, optional=True)
    figures = s.mapping(f"{field}.figures", h.get("figures", _MISSING))
    answers = s.mapping(f"{field}.figures.answers", figures.get("answers"), optional=True) if figures is not None else None
    for j, c in enumerate(s.items(f"{field}.figures.answers.changed", answers.get("changed") or []) if answers else []):
        if (ch := s.mapping(f"{field}.figures.answers.changed[{j}]", c)) is not None:
            s.keys(ch, f"{field}.figures.answers.changed[{j}]", {"id": TEXT, "similarity": (_number, "a number")})
            s.keys(ch, f"{field}.figures.answers.changed[{j}]", {"current": TEXT, "candidate": TEXT}, optional=True)


def save(path: Path, state: State) -> None:
    write_atomic(path, json.dumps(state.as_json(), indent=2, ensure_ascii=False) + "\n", flag=str(path))


def operator() -> str:
    return f"{getpass.getuser()}@{socket.gethostname()}"


def owner(command: str) -> dict:
    return {"user": getpass.getuser(), "host": socket.gethostname(), "pid": os.getpid(), "command": command, "since": now_iso()}


class Lock:
    """`with Lock(path, command) as lock:` one operator at a time.

    fcntl.flock(LOCK_EX | LOCK_NB) on the lock file: the kernel releases it when the holder's process ends, however it
    ends, so a crashed command never blocks the next one, and two operators can never both hold it. The file holds
    the holder's owner record (read to name them when refusing) and is removed at a clean end; a file left with a
    record is a holder that crashed (`lock.took_over`). The lock counts only on the file the path names when it is
    taken (an operator that locked a file removed meanwhile tries again), so removing it cannot let two in."""

    def __init__(self, path: Path, command: str):
        self.path, self.command = path, command
        self.took_over: dict | None = None
        self._fd: int | None = None

    def _holder(self) -> dict:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8") or "{}")
            return raw if isinstance(raw, dict) else {}
        except (OSError, ValueError):
            return {}

    def _refuse(self) -> UserError:
        holder = self._holder()
        who = f"{holder.get('user', '?')}@{holder.get('host', '?')} pid {holder.get('pid', '?')}"
        return UserError(
            [
                Problem(
                    str(self.path),
                    "",
                    f"another operator is running `rollout {holder.get('command', '?')}` on this stack ({who}, since "
                    f"{holder.get('since', '?')}): wait for it to end",
                )
            ]
        )

    def __enter__(self) -> Lock:
        import fcntl

        for _ in range(50):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
            except OSError as exc:
                raise UserError([Problem(str(self.path), "", f"cannot open the lock: {exc.strerror}")]) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise self._refuse() from None
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)  # the holder we waited on removed the file: lock the one the path names now
        else:
            raise self._refuse()
        previous = self._holder()
        if previous.get("pid"):
            self.took_over = previous  # a record left behind: its command ended without its clean-up (a crash)
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(owner(self.command)) + "\n").encode(), 0)
        os.fsync(fd)
        self._fd = fd
        return self

    def __exit__(self, *exc) -> None:
        if self._fd is not None:
            try:
                os.unlink(self.path)  # removed while still held: the next operator locks a new file
            except FileNotFoundError:
                pass
            os.close(self._fd)  # closing releases the flock
            self._fd = None
