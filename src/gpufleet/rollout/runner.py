"""The rollout commands, one transition each, under the operator lock, resumable after a crash.

A transition is a list of stack-file changes (plan.Change). Before the first is made the transition is recorded in
the state file (`in_progress`); each change rewrites the stack file (gpufleet.stacks.rollout.rollout_step_spec,
atomically) and is deployed. With the Pulumi CLI the deploy runs through the Automation API and the next change
follows; without it the exact commands are printed, the state records `awaiting_deploy`, and the next rollout
command takes the deploy as done (the operator ran the commands) and continues. A crash anywhere leaves either the
old stack file or the new one, and the recorded transition: the next command makes the same change again (a change
sets a value, so making it twice is making it once) and deploys.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from msgspec import Struct, field

from gpufleet import inputs
from gpufleet.errors import Problem, UserError
from gpufleet.files import write_atomic
from gpufleet.rollout import deploy, plan
from gpufleet.rollout.gates import Gate, failed
from gpufleet.rollout.plan import Change
from gpufleet.rollout.state import ACTIVE, Lock, State, load, now_iso, operator, paths, save
from gpufleet.stacks.loader import MAX_STACK_BYTES, stack_arg
from gpufleet.stacks.rollout import StepError, rollout_step_spec


class Context(Struct):
    stack: str
    stack_file: Path
    project: Path
    rollout: Any  # the spec's rollout section (FleetSpec.rollout), None when the stack has none
    environ: Mapping[str, str]
    say: Callable[[str], None] = print
    now: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))

    @property
    def shown(self) -> str:
        return str(self.stack_file)

    @property
    def stack_arg(self) -> str:
        """What --stack takes for this stack in a hint (loader.stack_arg)."""
        return stack_arg(self.stack, self.stack_file, self.project)


# the measured gates of one step: (gates, figures for the report)
Measure = Callable[[], tuple[list[Gate], dict]]


class Unfinished(Exception):
    """A transition this command recorded could not be completed, and is not taken back (the stack file already holds
    a change, it is a rollback, or the state file could not be put back): the state file records it in progress and
    the command named in the message finishes it (exit 1, as a `pulumi up` that failed; not 2, 'nothing done'). Also a
    failed gate whose rollback could not be recorded: the message names `rollout abort`, which makes it.

    `report`: the command's report as far as it got (its gates, the state as this command leaves it), set when the
    exception leaves the Run, for the CLI to print and write before it exits 1."""

    report: dict | None = None


def spec_change(text: str, change: Change, now: datetime) -> str:
    """The stack file's text after `change` (gpufleet.stacks.rollout owns how a rollout section changes)."""

    if change.kind == "weight":
        assert change.weight is not None
        return rollout_step_spec(text, change.weight)
    if change.kind == "rollback":
        return rollout_step_spec(text, "rolled_back")
    if change.kind == "promote":
        return rollout_step_spec(text, "promoted", now=now)
    return rollout_step_spec(text, "finished", now=now)


class Run:
    """One command's run: the lock held, the state loaded; `report` collects what it did."""

    def __init__(self, ctx: Context, command: str):
        self.ctx, self.command = ctx, command
        self.state_path, self.lock_path = paths(ctx.stack_file, ctx.stack)
        self.lock = Lock(self.lock_path, command)
        self.state: State | None = None
        # while held (a step or promote confirming an awaited deploy before it measures), the state is not saved and
        # the notes not said: a command refused before its gates are measured leaves the state file as it was
        self.held = False
        self._held_notes: list[str] = []
        self._dirty = False
        self._cli: str | None = None  # the Pulumi CLI, once its version was checked
        self._acted = 0  # stack-file writes and deploys made by this command (a transition that made none can be undone)
        self.report: dict = {"stack": ctx.stack, "stack_arg": ctx.stack_arg, "command": command, "applied": [], "notes": []}

    def __enter__(self) -> Run:
        self.lock.__enter__()
        try:
            self.state = load(self.state_path)
        except BaseException:
            self.lock.__exit__(None, None, None)  # a damaged state file: refuse, and leave no lock behind
            raise
        if self.lock.took_over:
            t = self.lock.took_over
            self.note(
                f"the previous `rollout {t.get('command')}` (pid {t.get('pid')}, since {t.get('since')}) ended without finishing; resuming"
            )
        return self

    def __exit__(self, *exc) -> None:
        error = exc[1]
        if isinstance(error, Unfinished | deploy.DeployFailed) and error.report is None:
            error.report = _finish_report(self)  # the gates measured are printed and written before the exit 1
        self.lock.__exit__(*exc)

    def note(self, text: str) -> None:
        if self.held:
            self._held_notes.append(text)
            return
        self.report["notes"].append(text)
        self.ctx.say(text)

    def save(self) -> None:
        assert self.state is not None
        if self.held:
            self._dirty = True
            return
        save(self.state_path, self.state)

    def release(self, save: bool = True) -> None:
        """End the hold: say the notes kept and save the state (the command is past its refusals). `save=False`: the
        caller's next save writes it (the gates measured are saved with the awaited deploy taken as done, in one write)."""
        if not self.held:
            return
        self.held = False
        for text in self._held_notes:
            self.note(text)
        self._held_notes = []
        if self._dirty:
            self._dirty = False
            if save:
                self.save()

    # ---- transitions ---------------------------------------------------------------------------------

    def begin(self, changes: list[Change], then: dict, gated: bool = False) -> None:
        """Record the transition (its changes and the state it ends in), then make it. A stack file that cannot take
        the changes is refused before anything is recorded (the state file kept the transition, half made).

        The record comes first, so that a crash leaves it for the next command to finish. A write that fails instead
        (a full disk: a UserError) is not a crash: while nothing was made yet (no stack-file write, no deploy) the
        record is taken back, the state file as it was before it (or none, for a first start), and the command is
        refused with exit 2, having changed nothing. A rollback is never taken back (the failed gate that began it
        would be measured again, and could pass), nor a transition whose stack file already changed: that is
        Unfinished (exit 1), naming the command that finishes it.

        `gated`: the rollback of the gates that failed, in the state's last history entry and not saved yet: they and
        the rollback's record are saved together (one write), so that no state file holds the failed gates without the
        rollback they call for. When that cannot be done (the write fails, or the stack file cannot take the rollback)
        the failed gates are saved alone if they can be, which `rollout step` and `promote` then refuse, and the
        command ends Unfinished naming `rollout abort` (_rollback_not_recorded)."""
        assert self.state is not None and not self.held
        rollback = then.get("status") in ("rolled_back", "aborted")
        try:
            self.check_changes(changes)
        except UserError as exc:
            if not gated:
                raise
            raise self._rollback_not_recorded(exc.problems) from None
        before = None if rollback else self._state_file_bytes()  # a rollback is never taken back
        self.state.in_progress = {
            "command": self.command,
            "since": now_iso(self.ctx.now()),
            "changes": [c.as_json() for c in changes],
            "then": then,
        }
        try:
            self.save()
        except UserError as exc:
            self.state.in_progress = None  # not recorded (the state file is as it was)
            if not gated:
                raise
            raise self._rollback_not_recorded(exc.problems) from None
        acted = self._acted
        try:
            self.proceed()
        except UserError as exc:
            if self._acted == acted and not rollback:
                try:
                    self._put_back(before)
                except (UserError, OSError) as undo:
                    why = undo.problems if isinstance(undo, UserError) else [Problem(str(self.state_path), "", str(undo))]
                    raise self._unfinished([*exc.problems, *why], rollback, made=False) from None
                undone = (
                    "the state file it created is removed (no rollout is recorded)"
                    if before is None
                    else "the transition it recorded in this file is taken back"
                )
                said = f"`rollout {self.command}` made no change: {undone}; run it again once that is fixed"
                raise UserError([*exc.problems, Problem(str(self.state_path), "", said)]) from None
            raise self._unfinished(exc.problems, rollback, made=self._acted > acted) from None

    def _state_file_bytes(self) -> bytes | None:
        """The state file as it is before a transition is recorded (None: there is none), to put back if it is undone."""
        try:
            return self.state_path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:  # it was read when the command began: nothing is recorded yet
            raise UserError(
                [Problem(str(self.state_path), "", f"cannot be read ({exc.strerror}); nothing was changed")]
            ) from None

    def _put_back(self, before: bytes | None) -> None:
        if before is None:
            self.state_path.unlink(missing_ok=True)
        else:
            write_atomic(self.state_path, before, shown=str(self.state_path))

    def _rollback_not_recorded(self, problems: list[Problem]) -> Unfinished:
        """A failed gate's rollback that could not be recorded (`problems`): the failed gates are saved alone if they
        can be (step and promote refuse such a state: _no_rollback_dropped), and the command ends Unfinished (exit 1,
        a gate failed) naming `rollout abort`, which makes the rollback."""
        st = self.state
        assert st is not None
        arg = self.ctx.stack_arg
        try:
            self.save()
        except UserError as exc:
            problems = [*problems, *(p for p in exc.problems if p not in problems)]
            kept = (
                f"{self.state_path} is unchanged and the candidate still at {st.weight} %: do not run `rollout step` or "
                "`promote` (they would measure again)"
            )
        else:
            kept = f"the failed gates are recorded in {self.state_path}, and `rollout step` and `promote` refuse until it is made"
        return Unfinished(
            f"{'; '.join(str(p) for p in problems)}. The rollback the failed gates call for ({st.reason}) is not "
            f"recorded: {kept}; once that is fixed, `gpufleet rollout abort --stack {arg}` rolls back"
        )

    def _unfinished(self, problems: list[Problem], rollback: bool, made: bool) -> Unfinished:
        """What is recorded and what finishes it, after `problems` stopped a transition this command recorded."""
        arg = self.ctx.stack_arg
        what = "the rollback" if rollback else f"`rollout {self.command}`"
        held = ", and the stack file holds its change" if made else ", the stack file not changed yet"
        again = "abort" if rollback else self.command
        other = "" if rollback else f", or `gpufleet rollout abort --stack {arg}` rolls back"
        return Unfinished(
            f"{'; '.join(str(p) for p in problems)}. {what} is recorded in {self.state_path} as in progress{held}: "
            f"once that is fixed, `gpufleet rollout {again} --stack {arg}` finishes it{other}"
        )

    def check_changes(self, changes: list[Change]) -> None:
        """Refuse (UserError, nothing written) changes the stack file cannot take, or a Pulumi CLI that cannot deploy them."""
        text = self._text()
        for change in changes:
            text = self._changed(text, change)
        self.pulumi_cli()

    def proceed(self) -> bool:
        """Make the recorded transition's remaining changes; True when it is complete, False when a deploy is awaited."""
        st = self.state
        assert st is not None and st.in_progress is not None
        cli = self.pulumi_cli()  # a CLI too old for the Automation API is refused before anything is written
        if st.awaiting_deploy:
            self.note(
                f"taking the deploy of `{Change.from_json(st.awaiting_deploy['change']).describe()}` as done (its commands were run)"
            )
            st.awaiting_deploy = None
            st.in_progress["changes"] = st.in_progress["changes"][1:]
            self.save()
        while st.in_progress["changes"]:
            change = Change.from_json(st.in_progress["changes"][0])
            self._write(change)
            self.report["applied"].append(change.as_json())
            if cli:
                self.ctx.say(f"pulumi up -s {self.ctx.stack} (Automation API): {change.describe()}")
                self._acted += 1
                deploy.automation_up(self.ctx.stack, self.ctx.project, self.ctx.stack_file, self.ctx.say)
                st.in_progress["changes"] = st.in_progress["changes"][1:]
                self.save()
                continue
            cmds = deploy.commands(self.ctx.stack, self.ctx.project, self.ctx.stack_file)
            st.awaiting_deploy = {"change": change.as_json(), "commands": cmds}
            self.save()
            self.report["awaiting_deploy"] = st.awaiting_deploy
            return False
        then = st.in_progress["then"]
        for key, value in then.items():
            setattr(st, key, value)
        st.in_progress = None
        self.save()
        return True

    def pulumi_cli(self) -> str | None:
        """The Pulumi CLI on PATH, its version checked once (deploy.require_usable_cli); None without one."""
        cli = deploy.pulumi_cli(self.ctx.environ)
        if cli and cli != self._cli:
            deploy.require_usable_cli(cli, self.ctx.environ)
            self._cli = cli
        return cli

    def _text(self) -> str:
        # as the loader read it (a BOM dropped)
        return inputs.read_text(self.ctx.stack_file, self.ctx.shown, max_bytes=MAX_STACK_BYTES)

    def _changed(self, text: str, change: Change) -> str:
        """The stack file's text after `change`, or a UserError when it cannot be written line by line."""

        section = (inputs.parse_yaml(text, self.ctx.shown)["config"]["gpufleet:fleet"] or {}).get("rollout") or {}
        if (change.kind == "promote" and section.get("phase") == "promoted") or (change.kind == "finish" and not section):
            return text  # made before a crash (promoting again would move retire_after; a finished file has no section)

        try:
            return spec_change(text, change, self.ctx.now().replace(microsecond=0))
        except StepError as exc:
            fix = (
                f": put the stack file's rollout section back as the rollout left it, or remove {self.state_path} to "
                "forget the rollout (the stack file is not changed by that)"
                if self.state_path.exists()
                else ""
            )
            raise UserError(
                [Problem(self.ctx.shown, "gpufleet:fleet.rollout", f"cannot make `{change.describe()}`: {exc}{fix}")]
            ) from None

    def _write(self, change: Change) -> None:
        path = self.ctx.stack_file
        text = self._text()
        new = self._changed(text, change)
        if new != text:
            write_atomic(path, new, shown=self.ctx.shown)
            self._acted += 1
        if change.kind == "promote":  # the window's end is what the stack file says
            retire = inputs.parse_yaml(new, self.ctx.shown)["config"]["gpufleet:fleet"]["rollout"]["retire_after"]
            assert self.state is not None and self.state.in_progress is not None
            self.state.in_progress["then"]["retire_after"] = retire.isoformat() if isinstance(retire, datetime) else str(retire)

    def resume(self) -> bool:
        """Finish a transition a crash or an awaited deploy left; True when none is left open."""
        st = self.state
        if st is None or st.in_progress is None:
            return True
        if not st.awaiting_deploy:
            self.note(f"resuming `rollout {st.in_progress['command']}` recorded at {st.in_progress['since']}")
        return self.proceed()

    # ---- gates ---------------------------------------------------------------------------------------

    def gate(self, measure: Measure, to: str) -> bool:
        """Measure the gates before moving to `to`; record them; on a failure roll back. True when all passed."""
        st = self.state
        assert st is not None
        self.pulumi_cli()  # a CLI that cannot deploy the step is refused before the gates are measured
        gates, figures = measure()
        self.release(save=False)  # measured: the awaited deploy taken as done is saved with the gates (below)
        bad = failed(gates)
        entry = {
            "at": now_iso(self.ctx.now()),
            "command": self.command,
            "weight": st.weight,
            "to": to,
            "gates": [g.as_json() for g in gates],
            "figures": figures,
            "result": "failed" if bad else "passed",
        }
        st.history.append(entry)
        self.report.update(gates=entry["gates"], figures=figures, to=to, result=entry["result"])
        if not bad:
            self.save()
            return True
        st.reason = failure_reason(entry)
        self.note(f"rolling back: {st.reason}")
        # the failed gates are saved with the rollback's record, in one write (begin, gated): never one without the other
        self.begin(plan.rollback_changes(st.weight), {"status": "rolled_back", "step": -1}, gated=True)
        return False


def _value(x: float | None) -> str:
    return "not measured" if x is None else f"{x:g}"


def failure_reason(entry: dict) -> str:
    """Why a measurement (a history entry) failed: its weight and each failed gate, measured against its threshold."""
    why = "; ".join(
        f"{g['name']} {_value(g['measured'])} (must be {g['op']} {g['threshold']:g}: {g['detail']})"
        for g in entry["gates"]
        if not g["passed"]
    )
    return f"gate failed at {entry['weight']} %: {why}"


def dropped_rollback(st: State) -> dict | None:
    """The last measurement, when it failed and no rollback of it is recorded (a state file whose rollback record
    could not be saved, or one an earlier gpufleet left after such a failure); None otherwise. A rollback in progress
    ends the rollout (rolled_back), so a rollout still rolling with failed last gates and nothing in progress has
    dropped its rollback."""
    last = st.history[-1] if st.history else None
    if last is None or last.get("result") != "failed" or st.status != "rolling":
        return None
    if st.in_progress and st.in_progress["then"].get("status") in ("rolled_back", "aborted"):
        return None
    return last


def _no_rollback_dropped(run: Run, st: State) -> None:
    """Refuse (exit 2, before measuring) a step or promote after failed gates whose rollback is not recorded: measured
    again, the gates could pass and the candidate move on. `rollout abort` makes the rollback those gates call for.
    Refused rather than rolled back here: the one command that rolls back is `abort`, and the operator who ran `step`
    learns that its last gates failed (and why) before anything is deployed."""
    last = dropped_rollback(st)
    if last is None:
        return
    raise UserError(
        [
            Problem(
                str(run.state_path),
                f"history.{len(st.history) - 1}",
                f"the gates measured at {last['at']} failed ({failure_reason(last)}) and no rollback is recorded: "
                f"`gpufleet rollout abort --stack {run.ctx.stack_arg}` makes that rollback (`rollout {run.command}` does "
                "not measure again: the gates could pass and move the candidate on)",
            )
        ]
    )


def require_rollout(ctx: Context) -> Any:
    r = ctx.rollout
    if r is None:
        raise UserError(
            [
                Problem(
                    ctx.shown,
                    "gpufleet:fleet.rollout",
                    "missing: a rollout needs the candidate in a `rollout:` section (docs/rollout.md)",
                )
            ]
        )
    return r


def _require_state(run: Run, statuses: tuple[str, ...], hold: bool = False) -> State | None:
    """The state, once a transition left open (an awaited deploy, a crash) is finished; None while a deploy is still
    awaited. UserError when there is no rollout, or it is not in one of `statuses`. `hold`: an awaited deploy that
    leaves the rollout in `statuses` is taken as done without saving it (Run.held) until the caller releases it."""
    st = run.state
    if st is None:
        raise UserError(
            [Problem(run.ctx.shown, "", f"no rollout in progress: `gpufleet rollout start --stack {run.ctx.stack_arg}` first")]
        )
    was_open, was_awaited, was = st.in_progress is not None, st.awaiting_deploy is not None, st.status
    if was_awaited and _after_open(st)[0] == was and was not in statuses:
        raise _status_refused(run, was, statuses)  # before the awaited deploy is taken as done: a refused command changes nothing
    if (
        hold
        and was_awaited
        and st.in_progress is not None
        and len(st.in_progress["changes"]) == 1
        and _after_open(st)[0] in statuses
    ):
        # the awaited deploy is taken as done in memory only: the command's own checks and its measurement may still
        # refuse it (exit 2), and then the deploy stays awaited (run.release() once the gates are measured)
        run.held = True
    if not run.resume():
        return None
    if was_open and not was_awaited:
        return None  # a transition a crash or a failed deploy left, made now: that is this command's work
    if st.status not in statuses and was_open and st.status != was:
        return None  # the awaited transition ended the rollout (a rollback, a finish): that is this command's report
    if st.status not in statuses:
        raise _status_refused(run, st.status, statuses)
    return st


def _status_refused(run: Run, status: str, statuses: tuple[str, ...]) -> UserError:
    return UserError(
        [Problem(str(run.state_path), "status", f"is {status}: `rollout {run.command}` needs {' or '.join(statuses)}")]
    )


def _after_open(st: State) -> tuple[str, str | None]:
    """The status and retire_after the state has once its open transition (an awaited deploy, a crash) is made."""
    then = st.in_progress["then"] if st.in_progress else {}
    return then.get("status", st.status), then.get("retire_after", st.retire_after)


def _declared_as_recorded(run: Run, st: State) -> None:
    """Refuse (before measuring or writing anything) a stack file whose rollout is not where the state file recorded it:
    a hand edit between two commands would have the gates measured before a step the file does not hold, and the
    report name a weight that is not the one declared."""
    r = run.ctx.rollout
    declared = (r.phase, 100 if r.phase == "promoted" else r.candidate_weight)
    if declared == ("rolling", st.weight):
        return
    field, value = ("phase", r.phase) if r.phase != "rolling" else ("candidate_weight", f"{r.candidate_weight} %")
    raise UserError(
        [
            Problem(
                run.ctx.shown,
                f"gpufleet:fleet.rollout.{field}",
                f"is {value}, but the rollout recorded in {run.state_path.name} is rolling at {st.weight} % (steps "
                f"{' → '.join(map(str, st.steps))}): set it back to phase rolling, candidate_weight {st.weight} (the "
                f"weight deployed), or roll back with `gpufleet rollout abort --stack {run.ctx.stack_arg}`",
            )
        ]
    )


def deployed_weight(st: State) -> int | None:
    """The candidate's weight as deployed: the state's step's, except once a rollback's own change (the candidate
    group to 0 nodes) is next: its weight 0 went first and was deployed (or the weight was 0 already). The state's
    step moves only when the whole transition ends."""
    changes = (st.in_progress or {}).get("changes") or []
    return 0 if changes and changes[0].get("kind") == "rollback" else st.weight


def _finish_report(run: Run) -> dict:
    st = run.state
    if st is not None:
        run.report.update(
            status=st.status,
            step=st.step,
            weight=deployed_weight(st),
            steps=st.steps,
            strategy=st.strategy,
            retire_after=st.retire_after,
            reason=st.reason,
            awaiting_deploy=st.awaiting_deploy,
        )
    return run.report


# ---- the commands --------------------------------------------------------------------------------------------------


def start(ctx: Context) -> dict:
    with Run(ctx, "start") as run:
        st = run.state
        if st is not None and st.status in ACTIVE:
            if st.in_progress and st.in_progress["command"] == "start" and not st.awaiting_deploy:
                run.resume()  # a start that crashed before its deploy: this is the same start, finish it
                return _finish_report(run)
            raise UserError(
                [
                    Problem(
                        str(run.state_path),
                        "",
                        f"a rollout of {ctx.stack} is in progress since {st.started_at} by {st.started_by or '?'} ({st.status}, "
                        f"{'candidate not yet deployed' if st.weight is None else f'candidate at {st.weight} %'}): "
                        f"`gpufleet rollout status|step|abort --stack {ctx.stack_arg}`",
                    )
                ]
            )
        r = require_rollout(ctx)
        if getattr(r, "phase", "rolling") != "rolling":
            raise UserError(
                [Problem(ctx.shown, "gpufleet:fleet.rollout.phase", f"is {r.phase}: a rollout starts from phase rolling")]
            )
        size = r.candidate.replicas
        if size is not None and size.max and not size.desired_or_min and size.min == 0:
            raise UserError(
                [
                    Problem(
                        ctx.shown,
                        "gpufleet:fleet.rollout.candidate.replicas",
                        "is 0 nodes (as a rollback leaves it): give the candidate its size again, or remove the key for "
                        "the default, before starting",
                    )
                ]
            )
        steps = list(plan.steps_of(r.strategy, getattr(r, "steps", None)))
        run.state = State(stack=ctx.stack, strategy=r.strategy, steps=steps, started_at=now_iso(ctx.now()), started_by=operator())
        run.begin([Change("weight", steps[0])], {"step": 0})
        return _finish_report(run)


def step(ctx: Context, measure: Measure) -> dict:
    """Confirm an awaited deploy, measure the gates, move the candidate to the next weight (or roll back)."""
    with Run(ctx, "step") as run:
        st = _require_state(run, ("rolling",), hold=True)
        if st is None:  # _require_state returns only a rolling state
            run.release()
            return _finish_report(run)
        _no_rollback_dropped(run, st)
        _declared_as_recorded(run, st)
        nxt = plan.next_weight(tuple(st.steps), st.step)
        if nxt is None:
            run.release()
            run.note(
                f"the candidate is at the last step ({st.weight} %): `gpufleet rollout promote --stack {ctx.stack_arg}` next"
            )
            return _finish_report(run)
        if run.gate(measure, f"{nxt} %"):
            run.begin([Change("weight", nxt)], {"step": st.step + 1})
        return _finish_report(run)


def promote(ctx: Context, measure: Measure) -> dict:
    with Run(ctx, "promote") as run:
        st = _require_state(run, ("rolling",), hold=True)
        if st is None:  # _require_state returns only a rolling state
            run.release()
            return _finish_report(run)
        _no_rollback_dropped(run, st)
        _declared_as_recorded(run, st)
        if st.step != len(st.steps) - 1:
            raise UserError(
                [
                    Problem(
                        str(run.state_path),
                        "step",
                        f"the candidate is at {st.weight} %, not the last step ({st.steps[-1]} %): `rollout step` until it is",
                    )
                ]
            )
        if run.gate(measure, "promoted"):
            run.begin([Change("promote")], {"status": "promoted"})  # retire_after: from the stack file written
        return _finish_report(run)


def abort(ctx: Context, reason: str | None = None) -> dict:
    with Run(ctx, "abort") as run:
        st = run.state
        if st is None:
            raise UserError([Problem(ctx.shown, "", "no rollout in progress: nothing to abort")])
        if st.in_progress and st.in_progress["then"].get("status") in ("rolled_back", "aborted"):
            run.resume()  # the rollback itself is what is open: finish it
            return _finish_report(run)
        if st.status not in ACTIVE:
            run.note(f"nothing to abort: the rollout is {st.status}")
            return _finish_report(run)
        r = ctx.rollout  # the stack file as it is now: the weight it holds (promoted: 100)
        now = None if r is None else (100 if r.phase == "promoted" else r.candidate_weight)
        changes = plan.rollback_changes(now)
        run.check_changes(changes)  # refused before the note below: a refused abort drops nothing
        if st.in_progress:
            run.note(f"dropping the unfinished `rollout {st.in_progress['command']}`")
            st.in_progress, st.awaiting_deploy = None, None
        if failed_gates := dropped_rollback(st):  # the rollback those gates called for, which was not recorded
            st.reason = f"{failure_reason(failed_gates)}; rolled back by `rollout abort`{': ' + reason if reason else ''}"
            run.begin(changes, {"status": "rolled_back", "step": -1})
            return _finish_report(run)
        st.reason = f"aborted by the operator{': ' + reason if reason else ''}"
        run.begin(changes, {"status": "aborted", "step": -1})
        return _finish_report(run)


def finish(ctx: Context, force: bool = False) -> dict:
    with Run(ctx, "finish") as run:
        if run.state is not None and run.state.awaiting_deploy and not force:
            status, retire_after = _after_open(run.state)
            if status == "promoted":  # refused inside the window before the awaited deploy is taken as done
                _require_window_over(run, retire_after)
        st = _require_state(run, ("promoted", "finished"))
        if st is None or st.status == "finished":
            return _finish_report(run)
        if not force:
            _require_window_over(run, st.retire_after)
        run.begin([Change("finish")], {"status": "finished"})
        return _finish_report(run)


def _require_window_over(run: Run, retire_after: str | None) -> None:
    """Refuse a finish before retire_after (keep_previous_hours): the old group is still kept."""
    if retire_after and run.ctx.now() < datetime.fromisoformat(retire_after):
        raise UserError(
            [
                Problem(
                    str(run.state_path),
                    "retire_after",
                    f"the old group is kept until {retire_after} (keep_previous_hours): finish after it, or --force",
                )
            ]
        )


def status(ctx: Context) -> dict:
    """The state as it is (no lock: reading a file written atomically)."""
    state_path, lock_path = paths(ctx.stack_file, ctx.stack)
    st = load(state_path)
    if st is None:
        raise UserError([Problem(ctx.shown, "", f"no rollout recorded ({state_path.name} does not exist)")])
    last = st.history[-1] if st.history else None
    rep: dict[str, Any] = {
        "stack": ctx.stack,
        "stack_arg": ctx.stack_arg,
        "command": "status",
        "notes": [],
        "applied": [],
        "in_progress": st.in_progress,
        "history": st.history,
    }
    if last:
        rep.update(gates=last["gates"], figures=last["figures"], to=last["to"], result=last["result"], measured_at=last["at"])
    rep.update(
        status=st.status,
        step=st.step,
        weight=deployed_weight(st),
        steps=st.steps,
        strategy=st.strategy,
        retire_after=st.retire_after,
        reason=st.reason,
        awaiting_deploy=st.awaiting_deploy,
    )
    return rep
