"""A step's timeout_s is enforced on the host (timeout(1), TERM to the process group then KILL), over the real sshd
(conftest.py): when the runner reports a timeout nothing of that script runs any more, the cleanup runs after the
apply is gone (not queued behind it), and a hanging check costs its own limit once (review findings 4, 5, 11)."""

from __future__ import annotations

import os
import secrets
import signal
from pathlib import Path

import pytest
from selftest_recipe import write_recipe

from gpufleet.images.recipes import load_recipe
from gpufleet.images.runner import Result, Runner, SshHost, StepFailed, Target

pytestmark = pytest.mark.sshd


def _processes(needle: bytes) -> list[int]:
    """Processes whose command line holds `needle` (this test's own excepted)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if needle in (entry / "cmdline").read_bytes():
                    out.append(int(entry.name))
            except OSError:
                continue
    return out


def _kill(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _target(sshd) -> Target:
    return Target("127.0.0.1", sshd.port, "root", sshd.key, sshd.known_hosts)


def test_a_quiet_apply_that_times_out_is_stopped_on_the_host_before_its_cleanup(sshd, tmp_path):
    """An apply that prints nothing went on running after the client's timeout closed its channel; its cleanup then
    waited for the step's lock on the host and ran after the CLI had exited, removing what the apply made (finding 4)."""
    seconds = 7000 + secrets.randbelow(1000)  # sleep N: found in /proc by its own command line
    rf = write_recipe(tmp_path, steps=[{"name": "hold", "template": "hold", "timeout_s": 2, "vars": {"seconds": seconds}}])
    events = []
    try:
        with pytest.raises(StepFailed) as failed:
            Runner(load_recipe(str(rf)), lambda: SshHost(_target(sshd)), report=events.append, retries=0).build()
        left = _processes(f"sleep\0{seconds}\0".encode()) + _processes(str(tmp_path / "root/run/hold.log").encode())
    finally:
        _kill(_processes(f"sleep\0{seconds}\0".encode()))
    assert left == []  # the apply and everything it started are gone when the runner says it timed out
    assert failed.value.phase == "apply" and failed.value.why == "apply timed out after 2s (its timeout_s)"
    assert failed.value.result.exit == 124 and "(timed out after 2s: stopped on the host)" in failed.value.result.stderr
    lines = [ln.split()[0] for ln in (tmp_path / "root/run/hold.log").read_text().splitlines()]
    assert lines == ["start", "cleanup"], lines  # the cleanup ran once the apply was stopped, before the runner returned
    assert any(e.kind == "cleanup" and e.detail == "done" for e in events), events
    assert (tmp_path / "root/.state/hold.applying").exists() is False  # the cleanup cleared the marker


def test_a_hanging_check_costs_its_own_timeout_once_and_leaves_nothing_running(sshd, tmp_path):
    """The survey ran every read as one command whose limit was the sum of all of them (2.28 h on the real recipes),
    then ran the check twice more (once to get its stderr), and left three sleeping processes (finding 5)."""
    seconds = 8000 + secrets.randbelow(1000)
    rf = write_recipe(tmp_path, steps=[{"name": "hang", "template": "hang", "timeout_s": 2, "vars": {"seconds": seconds}}])
    scripts: list[str] = []

    class Counting(SshHost):
        def run(self, script, timeout_s):
            scripts.append(script)
            return super().run(script, timeout_s)

    try:
        with pytest.raises(StepFailed) as failed:
            Runner(load_recipe(str(rf)), lambda: Counting(_target(sshd)), retries=0).build(dry_run=True)
        left = _processes(f"sleep\0{seconds}\0".encode())
    finally:
        _kill(_processes(f"sleep\0{seconds}\0".encode()))
    assert left == []
    assert failed.value.phase == "check" and failed.value.why == "check errored (exit 124) (timed out: its timeout_s)"
    assert "(timed out after 2s: stopped on the host)" in failed.value.result.output
    assert len(scripts) == 1, scripts  # the survey alone: its stderr came with it, the check was not run again
    assert "timeout --kill-after=10 2 bash -c" in scripts[0]


def test_a_timeout_reported_late_by_invoke_is_a_timeout_not_a_lost_connection(sshd, monkeypatch):
    """invoke decides 'timed out' by its timer thread having ended; while that thread is still closing the channel the
    result comes back as exit -1 with no CommandTimedOut, which read as a lost connection and was retried (finding 11,
    2 in 13 CLI runs). Here the timer thread is always 'still alive', so that race happens every time."""
    import invoke

    host = SshHost(_target(sshd))
    try:
        monkeypatch.setattr(invoke.runners.Runner, "timed_out", property(lambda self: False))
        r = host.run("sleep 3", 1)
    finally:
        host.close()
    assert isinstance(r, Result) and r.exit == 124, r
    assert "no answer from the host within 1s" in r.stderr
