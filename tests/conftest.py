"""Suite-wide options and the end-of-run check that nothing outlives the tests."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest


def pytest_addoption(parser):
    parser.addoption("--update-goldens", action="store_true", help="rewrite tests/goldens/*.json from the current program")


SUMMARY = pytest.StashKey[list]()


def pytest_configure(config):
    config.stash[SUMMARY] = []


ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True, scope="session")
def _no_recipes_of_the_checkout():
    """The checkout is a project too: a developer's own recipes in its images/recipes/ (README: copy a shipped recipe
    there to fill in its pins) were what tests about the shipped recipes read, run from the checkout. In this process
    that folder is still looked in and named, but holds nothing (tests of project recipes use a project of their own;
    a test running gpufleet in a subprocess from the checkout would still see them)."""
    from gpufleet.stacks import project

    ours = ROOT / project.RECIPES_DIR
    first, listed = project.first, project.listed

    def others(folders: tuple[Path, ...]) -> tuple[Path, ...]:
        return tuple(f for f in folders if f != ours)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(project, "first", lambda folders, filename, what: first(others(folders), filename, what))
        mp.setattr(project, "listed", lambda folders, prefix, suffix: listed(others(folders), prefix, suffix))
        yield


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A copy of the project's stacks/, the usage files they name (cost/usage/) and images/lock.json (the user state
    commands read and `region new` writes), used via GPUFLEET_PROJECT."""
    root = tmp_path / "project"
    root.mkdir()
    shutil.copy(ROOT / "Pulumi.yaml", root / "Pulumi.yaml")
    shutil.copytree(ROOT / "stacks", root / "stacks", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "cost" / "usage", root / "cost" / "usage")  # a stack's `gpufleet:usage` path is the project's
    (root / "images").mkdir()
    shutil.copy(ROOT / "images" / "lock.json", root / "images" / "lock.json")  # user state: read from the project root
    monkeypatch.setenv("GPUFLEET_PROJECT", str(root))
    return root


@pytest.fixture
def summary(request):
    """`summary(line)`: a line shown in the `gpufleet` section at the end of the run, never in the middle of the
    progress line (a test printing there breaks `pytest -q`'s dots)."""
    return request.config.stash[SUMMARY].append


def pytest_terminal_summary(terminalreporter, config):
    lines = config.stash.get(SUMMARY, [])
    if lines:
        terminalreporter.section("gpufleet")
        for line in lines:
            terminalreporter.write_line(line)


def _cmdline(entry: Path) -> str:
    return (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()


def _processes_under(folder: str) -> list[tuple[int, str]]:
    """Processes (other than this one) whose command line or working folder is inside `folder`."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = _cmdline(entry)
            cwd = os.readlink(entry / "cwd")
            if not cmdline:  # a process in the middle of its exec reads empty for a moment: name it once it has one
                time.sleep(0.2)
                cmdline = _cmdline(entry)
        except OSError:
            continue
        if folder in cmdline or cwd.startswith(folder):
            out.append((int(entry.name), cmdline or cwd))
    return out


def _loop_devices() -> set[str]:
    try:
        out = subprocess.run(["losetup", "--list", "--noheadings", "--output", "NAME,BACK-FILE"], capture_output=True, text=True)
    except OSError:
        return set()
    return {line.strip() for line in out.stdout.splitlines() if line.strip()}


def _nspawn_cgroups() -> set[str]:
    """Cgroup folders the node boot test makes (named gpufleet-node-*), wherever they sit in the hierarchy."""
    root = Path("/sys/fs/cgroup")
    if not root.is_dir():
        return set()
    return {str(p) for p in root.rglob("gpufleet-node-*") if p.is_dir()}


def pytest_sessionstart(session):
    session.config._gpufleet_before = (_loop_devices(), _nspawn_cgroups())


def pytest_sessionfinish(session, exitstatus):
    """Fail the run on any process started under pytest's temp folder, loop device or nspawn cgroup folder that the
    tests left behind (and clean them up, so that one failing run does not spoil the next)."""
    if not hasattr(session.config, "_gpufleet_before") or hasattr(session.config, "workerinput"):
        return
    loops_before, cgroups_before = session.config._gpufleet_before
    leftovers = []
    factory = getattr(session.config, "_tmp_path_factory", None)
    base = str(factory.getbasetemp()) if factory is not None and factory._basetemp is not None else None
    if base:
        for pid, what in _processes_under(base):
            leftovers.append(f"process {pid} still running: {what[:160]}")
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    # Only this run's loop devices (backed by a file under its temp folder): another pytest may be booting nodes too.
    for loop in sorted(loop for loop in _loop_devices() - loops_before if base and base in loop):
        leftovers.append(f"loop device still attached: {loop}")
        subprocess.run(["losetup", "-d", loop.split()[0]], capture_output=True)
    for folder in sorted(_nspawn_cgroups() - cgroups_before):
        leftovers.append(f"cgroup folder left behind: {folder}")
    if leftovers:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        text = "the tests left these behind (each test must clean up after itself):\n  " + "\n  ".join(leftovers)
        if reporter is not None:
            reporter.write_line(text, red=True)
        session.exitstatus = 1
