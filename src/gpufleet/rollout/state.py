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

import fcntl
import getpass
import json
import math
import os
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Literal

from msgspec import Struct, field
from msgspec.structs import replace
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from gpufleet import inputs
from gpufleet.errors import Problem, UserError
from gpufleet.files import write_atomic
from gpufleet.stacks.spec import Strategy, steps_problem

VERSION = 1
ACTIVE = ("rolling", "promoted")  # a rollout in one of these blocks a new `rollout start`


def paths(stack_file: Path, stack: str) -> tuple[Path, Path]:
    folder = stack_file.parent
    return folder / f".rollout-{stack}.json", folder / f".rollout-{stack}.lock"


def now_iso(now: datetime | None = None) -> str:
    return (now or datetime.now(UTC)).isoformat(timespec="seconds")


class State(Struct):
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


# gpufleet before 2026-12-07 wrote a gate's metric that read +Inf or -Inf as Infinity / -Infinity (json.dumps), which
# the strict reader refuses: such a file is the one case where the fix is an edit, not a restore.
OLD_INFINITY = "Infinity is not a finite number"


def _fix(message: str) -> str:
    if OLD_INFINITY in message:
        return f"an older gpufleet wrote a metric that read +Inf or -Inf so: replace that Infinity with null, or {FIX}"
    return FIX


def load(path: Path) -> State | None:
    """The state file, None when there is none; a damaged one (not UTF-8, not JSON, a folder, a field missing or of the
    wrong type) is a UserError naming the file and each field, before anything is done."""

    if not os.path.lexists(path):
        return None
    shown = str(path)
    try:  # the shared reader: not UTF-8 or JSON, nested deeper than its cap (was a RecursionError traceback), ...
        raw = inputs.parse_json(inputs.read_text(path, shown), shown)
    except UserError as exc:
        raise UserError(
            [replace(p, message=f"{p.message} (a rollout's state file: {_fix(p.message)})") for p in exc.problems]
        ) from None
    if not isinstance(raw, dict):  # `[]` was said to be "version: is not 1: ... of another gpufleet version" (review F9)
        raise UserError([Problem(shown, "", f"is {inputs.kind(raw)}, not a rollout's state (a JSON object); {FIX}")])
    if raw.get("version") != VERSION:
        raise UserError([Problem(shown, "version", f"is not {VERSION}: a state file of another gpufleet version")])
    if problems := shape_problems(raw):
        raise UserError([Problem(shown, field, f"{why}; {FIX}") for field, why in problems])
    if raw["stack"] != (mine := path.name.removeprefix(".rollout-").removesuffix(".json")):
        raise UserError([Problem(shown, "stack", f"is {raw['stack']!r}: the rollout of another stack than {mine}; {FIX}")])
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


class _Shape(BaseModel):
    """A part of the state file: strict types (JSON's 5 is not "5"), keys the commands do not read are left alone."""

    model_config = ConfigDict(strict=True, frozen=True)


def _zoned(v: str) -> str:
    try:
        zoned = datetime.fromisoformat(v).tzinfo is not None
    except ValueError:
        zoned = False
    if not zoned:
        raise ValueError(f"{v!r} is not a date and time with its zone (e.g. 2026-12-06T14:00:00+00:00)")
    return v


Weight = Annotated[int, Field(ge=0, le=100)]
Zoned = Annotated[str, AfterValidator(_zoned)]
Status = Literal["rolling", "promoted", "rolled_back", "aborted", "finished"]


class _Change(_Shape):  # plan.Change as recorded
    kind: Literal["weight", "promote", "finish", "rollback"]
    weight: Weight | None = None

    @model_validator(mode="after")
    def _weighted(self):
        if self.kind == "weight" and self.weight is None:
            raise ValueError("a weight change needs its weight (a whole number 0 to 100)")
        return self


THEN = " (a transition sets only status, step and retire_after)"  # _Then's unknown keys: the only model forbidding any


class _Then(_Shape):  # what a transition sets when it ends (runner.Run.begin)
    model_config = ConfigDict(extra="forbid")

    status: Status | None = None
    step: int | None = None
    retire_after: Zoned | None = None


class _InProgress(_Shape):
    command: str
    since: str
    changes: list[_Change]
    then: _Then


class _Awaiting(_Shape):
    change: _Change
    commands: list[str]


class _Gate(_Shape):  # gates.Gate.as_json
    name: str
    detail: str
    op: Literal["<=", ">=", "=="]
    threshold: float
    passed: bool
    measured: float | None = None


class _Changed(_Shape):
    id: str
    similarity: float
    current: str | None = None
    candidate: str | None = None


class _Answers(_Shape):
    changed: list[_Changed] | None = None


class _Figures(_Shape):
    answers: _Answers | None = None


class _Measurement(_Shape):  # one entry of the history (runner.Run.gate): what `rollout status` shows of it
    at: str
    command: str
    to: str
    result: str
    weight: int | None = None
    gates: list[_Gate]
    figures: _Figures


class _StateFile(_Shape):
    stack: str
    strategy: Strategy
    started_at: str
    started_by: str | None = None
    status: Status
    steps: list[Weight] = Field(min_length=1)
    step: int
    weight: Weight | None = None  # written as steps[step] (State.as_json); "5" was left alone (review F11)
    in_progress: _InProgress | None = None
    awaiting_deploy: _Awaiting | None = None
    retire_after: Zoned | None = None
    reason: str | None = None
    history: list[_Measurement] | None = None

    @field_validator("steps")
    @classmethod
    def _a_plan(cls, v: list[int]) -> list[int]:
        if why := steps_problem(v):
            raise ValueError(why)
        return v

    @field_validator("step")
    @classmethod
    def _an_index(cls, v: int, info: ValidationInfo) -> int:
        if "steps" not in info.data:  # steps is validated first; a broken one is its own problem
            return v
        n = len(info.data["steps"])
        if not -1 <= v < n:
            raise ValueError(f"{v} is not an index into steps (a whole number -1 to {n - 1})")
        return v

    @model_validator(mode="after")
    def _its_weight(self):
        if "weight" in self.model_fields_set and self.weight != (want := self.steps[self.step] if self.step >= 0 else None):
            raise ValueError(
                f"weight is {self.weight}, but steps[step] is {want}: the file was edited (gpufleet writes them together)"
            )
        return self


def shape_problems(raw: dict) -> list[tuple[str, str]]:
    """(field, why) for each field of a parsed state file that is missing or not of the type the commands read."""

    try:
        _StateFile.model_validate(raw)
    except ValidationError as exc:
        return [(".".join(map(str, e["loc"])), inputs.model_error(e, THEN, yaml_hints=False)) for e in exc.errors()]
    return []


def not_finite(doc: object, at: str = "") -> str | None:
    """The first field of a document to write as JSON holding NaN or an infinity (which JSON has not, and the state
    file's reader refuses), as `history.0.figures.kv_cache`; None when every number is finite."""
    if isinstance(doc, float) and not math.isfinite(doc):
        return at or "(the document)"
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, (list, tuple)) else ()
    for k, v in items:
        if found := not_finite(v, f"{at}.{k}" if at else str(k)):
            return found
    return None


def save(path: Path, state: State) -> None:
    """Written as `load` reads it: strict JSON (a NaN or an infinity is refused here, the old file left as it was,
    rather than written as `Infinity`, a state file no command could read again)."""
    doc = state.as_json()
    if where := not_finite(doc):
        raise UserError(
            [
                Problem(
                    str(path),
                    where,
                    "is not a finite number, which a state file cannot hold: the state file is unchanged (a gpufleet "
                    "bug: please report it with the command run)",
                )
            ]
        )
    write_atomic(path, json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n", shown=str(path))


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
        try:  # the shared reader: a record too deep to decode was a RecursionError traceback
            raw = inputs.parse_json(inputs.read_text(self.path), str(self.path))
        except UserError:  # none (a new or an empty file) or no record this wrote: nobody to name
            return {}
        return raw if isinstance(raw, dict) else {}

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
        for _ in range(50):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
            except OSError as exc:
                fix = (
                    "remove it (the lock is a file gpufleet makes and removes; nothing is in it between commands)"
                    if os.path.isdir(self.path)
                    else "make its folder writable"
                )
                raise UserError([Problem(str(self.path), "", f"cannot open the lock: {exc.strerror}: {fix}")]) from None
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
