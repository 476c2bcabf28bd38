"""The runner and `image build` against a real OpenSSH server on 127.0.0.1 (fixture in conftest.py)."""

import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from selftest_recipe import tree_step, write_recipe
from tools import require

from gpufleet.images.recipes import load_recipe
from gpufleet.images.runner import ConnectionLost, HostKeyRefused, Runner, SshHost, Target

pytestmark = pytest.mark.sshd


def cli(sshd, recipe_file, *extra, known_hosts=None, manifest_out=True, cwd=None):
    cmd = [
        sys.executable,
        "-m",
        "gpufleet.cli.image",
        "build",
        "-r",
        str(recipe_file),
        "-H",
        "127.0.0.1",
        "-p",
        str(sshd.port),
        "-k",
        str(sshd.key),
        "--known-hosts",
        str(known_hosts or sshd.known_hosts),
        *(["--manifest-out", str(recipe_file.parent / "m.json")] if manifest_out else []),
        *extra,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=cwd)


def runner(sshd, recipe_file, **kw):
    target = Target("127.0.0.1", sshd.port, "root", sshd.key, sshd.known_hosts)
    return Runner(load_recipe(str(recipe_file)), lambda: SshHost(target), **kw)


def test_first_run_applies_all_second_changes_nothing(sshd, recipe_file):
    first = cli(sshd, recipe_file)
    assert first.returncode == 0, first.stderr
    assert "changed: applied 3 (tree, user, unit)" in first.stdout
    root = recipe_file.parent / "root"
    assert (root / "opt/app/VERSION").read_text() == "1.2.3\n"
    assert (root / "etc/passwd").read_text().startswith("gpftest:")
    assert "User=gpftest" in (root / "etc/systemd/system/gpftest.service").read_text()
    manifest = json.loads((root / "etc/gpufleet/image-manifest.json").read_text())
    assert manifest["recipe"] == "selftest" and manifest["observed"] == {"tree": "1.2.3"}
    assert (recipe_file.parent / "m.json").read_text() == (root / "etc/gpufleet/image-manifest.json").read_text()
    # what the build leaves in the prefix (the image): its records, not its locks (review finding 14: .locks/ was there)
    assert sorted(p.name for p in root.iterdir()) == [".state", "etc", "opt", "run"]
    assert sorted(p.name for p in (root / ".state").iterdir()) == ["tree.sha256", "unit.sha256", "user.sha256"]
    before = (root / "etc/gpufleet/image-manifest.json").stat().st_mtime_ns

    second = cli(sshd, recipe_file)
    assert second.returncode == 0, second.stderr
    assert "no change: all 3 steps already satisfied, manifest unchanged" in second.stdout
    assert "applied" not in second.stdout.replace("no change", "")
    assert (root / "etc/gpufleet/image-manifest.json").stat().st_mtime_ns == before


def test_drifted_step_is_reapplied(sshd, recipe_file):
    assert cli(sshd, recipe_file).returncode == 0
    (recipe_file.parent / "root/opt/app/VERSION").write_text("1.2.2\n")
    again = cli(sshd, recipe_file)
    assert again.returncode == 0 and "changed: applied 1 (tree)" in again.stdout


def _slow_recipe(folder: Path, seconds: int = 4) -> Path:
    return write_recipe(
        folder,
        steps=[
            tree_step(folder),
            {"name": "slow", "template": "slow", "vars": {"seconds": seconds}},
            {"name": "unit", "template": "unit"},
        ],
    )


class _Dropper(threading.Thread):
    """Drops the SSH connections once the slow step has started; what happened is read by the test after join()
    (an assert inside a thread cannot fail the test)."""

    def __init__(self, sshd, folder: Path):
        super().__init__()
        self.sshd, self.started = sshd, folder / "root/run/slow.started"
        self.dropped: int | None = None
        self.error: BaseException | None = None

    def run(self):
        try:
            deadline = time.monotonic() + 30
            while not self.started.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.3)
            self.dropped = self.sshd.drop_connections()
        except BaseException as exc:
            self.error = exc


def _drop_when_started(sshd, folder: Path) -> _Dropper:
    t = _Dropper(sshd, folder)
    t.start()
    return t


def test_killed_connection_mid_step_then_rerun_finishes(sshd, tmp_path):
    rf = _slow_recipe(tmp_path)
    t = _drop_when_started(sshd, tmp_path)
    with pytest.raises(ConnectionLost):
        runner(sshd, rf, retries=0).build()
    t.join()
    assert t.error is None and t.dropped and t.dropped >= 1, (t.error, t.dropped)
    assert not (tmp_path / "root/etc/systemd/system/gpftest.service").exists()  # it stopped in the middle
    events = []
    result = runner(sshd, rf, retries=0, report=events.append).build()
    assert "tree" in result.satisfied and "unit" in result.applied
    assert (tmp_path / "root/etc/systemd/system/gpftest.service").exists()
    assert any(e.kind == "satisfied" and e.step == "tree" for e in events)


def test_runner_reconnects_by_itself(sshd, tmp_path):
    rf = _slow_recipe(tmp_path)
    t = _drop_when_started(sshd, tmp_path)
    slept = []
    result = runner(sshd, rf, retries=2, backoff_s=0.5, sleep=lambda s: (slept.append(s), time.sleep(s))).build()
    t.join()
    assert t.error is None and t.dropped and t.dropped >= 1, (t.error, t.dropped)
    assert result.reconnects == 1 and slept == [0.5]
    assert result.status == "changed" and (tmp_path / "root/etc/systemd/system/gpftest.service").exists()


def test_failing_step_stops_with_its_output(sshd, tmp_path):
    prefix = tmp_path / "root"
    rf = write_recipe(
        tmp_path,
        steps=[
            tree_step(tmp_path),
            {"name": "broken", "template": "fail"},
            {"name": "unit", "template": "unit"},
        ],
    )
    r = cli(sshd, rf)
    assert r.returncode == 1
    assert "step broken (apply): apply exited 3" in r.stderr
    assert "error: payload checksum mismatch (simulated)" in r.stderr and "unpacking payload" in r.stderr
    assert not (prefix / "etc/systemd/system/gpftest.service").exists()  # later steps did not run
    assert not (prefix / "opt/app/partial").exists()  # cleanup removed what the step created
    assert "cleanup" in r.stdout


def test_unknown_host_key_is_refused(sshd, recipe_file, tmp_path):
    empty = tmp_path / "known_hosts"
    r = cli(sshd, recipe_file, known_hosts=empty)
    assert r.returncode == 2
    assert "is not in" in r.stderr and "--accept-new-host-key" in r.stderr
    assert not (recipe_file.parent / "root").exists()  # nothing ran
    ok = cli(sshd, recipe_file, "--accept-new-host-key", known_hosts=empty)
    assert ok.returncode == 0, ok.stderr
    assert f"[127.0.0.1]:{sshd.port} ssh-ed25519" in empty.read_text()


def test_accept_new_host_key_starts_a_new_line_when_the_file_lacks_one(sshd, recipe_file, tmp_path):
    other = "example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
    kh = tmp_path / "kh_nonl"
    kh.write_text(other)  # no newline at the end
    ok = cli(sshd, recipe_file, "--dry-run", "--accept-new-host-key", known_hosts=kh)
    assert ok.returncode == 0, ok.stderr
    lines = kh.read_text().splitlines()
    assert lines[0] == other
    assert lines[1].startswith(f"[127.0.0.1]:{sshd.port} ssh-ed25519 ")
    assert kh.read_text().endswith("\n")
    again = cli(sshd, recipe_file, "--dry-run", known_hosts=kh)  # the key was recorded: no --accept-new-host-key needed
    assert again.returncode == 0, again.stderr


@pytest.mark.parametrize("clash", ["file", "folder"])
def test_the_default_manifest_destination_is_checked_before_connecting(sshd, tmp_path, clash):
    recipe_file = write_recipe(tmp_path)
    if clash == "file":
        (tmp_path / "build").write_text("")  # build/images cannot be made
    else:
        (tmp_path / "build/images/selftest-127.0.0.1.manifest.json").mkdir(parents=True)
    r = cli(sshd, recipe_file, manifest_out=False, cwd=tmp_path)  # the default, relative to the working folder
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert "error manifest (default of --manifest-out): build/images/selftest-127.0.0.1.manifest.json: " in r.stderr
    assert not (tmp_path / "root").exists(), sorted(str(p) for p in (tmp_path / "root").rglob("*"))  # nothing ran


def test_known_hosts_lines_paramiko_cannot_parse_are_skipped(sshd, recipe_file, tmp_path):
    kh = tmp_path / "kh"
    kh.write_text("bad ssh-ed25519 !!!notbase64\nshort ssh-rsa AAAAB3NzaC1yc2E=\n" + sshd.known_hosts.read_text())
    r = cli(sshd, recipe_file, "--dry-run", known_hosts=kh)
    assert r.returncode == 0, r.stderr
    assert "plan: 3 to apply" in r.stdout


def test_changed_host_key_is_refused_even_with_accept_new(sshd, tmp_path):
    other = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    pub = (tmp_path / "other.pub").read_text().split()
    kh = tmp_path / "kh"
    kh.write_text(f"[127.0.0.1]:{sshd.port} {pub[0]} {pub[1]}\n")
    target = Target("127.0.0.1", sshd.port, "root", sshd.key, kh, accept_new_host_key=True)
    with pytest.raises(HostKeyRefused, match="changed"):
        SshHost(target)


def test_dry_run_only_checks(sshd, recipe_file):
    r = cli(sshd, recipe_file, "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "plan: 3 to apply (tree, user, unit), 0 already satisfied" in r.stdout
    assert not (recipe_file.parent / "root").exists()


def test_no_change_rebuild_reads_everything_in_one_remote_command(sshd, recipe_file):
    target = Target("127.0.0.1", sshd.port, "root", sshd.key, sshd.known_hosts)
    scripts: list[str] = []

    class Counting(SshHost):
        def run(self, script, timeout_s):
            scripts.append(script)
            return super().run(script, timeout_s)

    first = Runner(load_recipe(str(recipe_file)), lambda: Counting(target)).build()
    assert first.status == "changed" and first.applied == ["tree", "user", "unit"]
    scripts.clear()
    again = Runner(load_recipe(str(recipe_file)), lambda: Counting(target)).build()
    assert again.status == "unchanged" and again.satisfied == ["tree", "user", "unit"] and not again.manifest_changed
    assert len(scripts) == 1, scripts  # checks, facts and the manifest read as one survey script


def _lockset_recipe(folder: Path, lock: str) -> Path:
    return write_recipe(
        folder,
        steps=[
            tree_step(folder),
            {"name": "pkgs", "template": "lockset", "vars": {"lock": lock}},
        ],
    )


def test_a_recipe_change_the_check_does_not_read_is_applied_and_the_manifest_records_what_was(sshd, tmp_path):
    """Review finding 2: the check reads the pinned package only (as python_packages' does), so a new lock was skipped
    as 'already satisfied' and the manifest still got the new recipe's digest. Now the host records the digest of each
    step it applied (after its check passed) and a step whose digest changed is applied again."""
    from gpufleet.images.steps import render

    root = tmp_path / "root"
    v1 = _lockset_recipe(tmp_path, "transformers==4.50.0")
    assert cli(sshd, v1).returncode == 0
    v2 = _lockset_recipe(tmp_path, "transformers==4.51.3")
    digests = {s.name: s.digest() for s in render(load_recipe(str(v2)))}

    plan = cli(sshd, v2, "--dry-run")
    assert plan.returncode == 0, plan.stderr
    assert "plan: 1 to apply (pkgs), 1 already satisfied" in plan.stdout, plan.stdout
    assert "check: satisfied, but the step changed since it was applied" in plan.stdout

    again = cli(sshd, v2)
    assert again.returncode == 0, again.stderr
    assert "changed: applied 1 (pkgs), 1 already satisfied" in again.stdout, again.stdout
    assert (root / "opt/pk/lock").read_text() == "transformers==4.51.3\n"
    manifest = json.loads((root / "etc/gpufleet/image-manifest.json").read_text())
    assert manifest["steps"] == digests
    assert {n: (root / ".state" / f"{n}.sha256").read_text().strip() for n in digests} == digests
    assert sorted(p.name for p in (root / ".state").iterdir()) == ["pkgs.sha256", "tree.sha256"]  # no marker left
    assert "no change: all 2 steps already satisfied" in cli(sshd, v2).stdout


def test_a_host_built_before_digests_were_recorded_is_applied_again_and_the_plan_says_why(sshd, recipe_file):
    root = recipe_file.parent / "root"
    assert cli(sshd, recipe_file).returncode == 0
    assert (root / ".state/tree.sha256").is_file()
    shutil.rmtree(root / ".state")  # as a build by an earlier gpufleet left it: every check passes, nothing recorded
    plan = cli(sshd, recipe_file, "--dry-run")
    assert plan.returncode == 0, plan.stderr
    assert "plan: 3 to apply (tree, user, unit), 0 already satisfied" in plan.stdout, plan.stdout
    assert plan.stdout.count("but the host records no applied digest for it (built before gpufleet recorded them") == 3
    build = cli(sshd, recipe_file)
    assert build.returncode == 0, build.stderr
    assert "changed: applied 3 (tree, user, unit), 0 already satisfied" in build.stdout, build.stdout
    assert "no change: all 3 steps already satisfied" in cli(sshd, recipe_file).stdout


def test_a_build_whose_host_facts_no_longer_meet_the_pins_at_the_end_fails_and_writes_no_manifest(sshd, tmp_path):
    """Review finding 8: each step was verified only right after it ran, so a build whose tree another build (or a
    later step) changed to 1.2.4 reported success with a manifest observing 1.2.4 against its pin 1.2.3; the problem
    surfaced only at `lock record`, after the image and its copies existed."""
    prefix = tmp_path / "root"
    rf = write_recipe(
        tmp_path,
        steps=[
            tree_step(tmp_path),
            {"name": "clobber", "template": "clobber", "vars": {"version": "1.2.4"}},
        ],
    )
    r = cli(sshd, rf)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "failed step manifest (check): at the end of the build the host's facts do not meet the recipe's pins" in r.stderr
    assert "observed.tree: the host had '1.2.4', but pin app is 1.2.3" in r.stderr, r.stderr
    assert "no manifest written" in r.stderr
    assert not (prefix / "etc/gpufleet/image-manifest.json").exists()
    assert not (tmp_path / "m.json").exists()


def test_an_apply_after_which_the_check_still_fails_runs_its_cleanup_and_says_why_once(sshd, tmp_path):
    """Review finding 10: only an apply that exited non-zero ran the cleanup (the wrong file stayed), and the message
    'check: not satisfied' was printed twice."""
    rf = write_recipe(tmp_path, steps=[{"name": "vf", "template": "verifyfail"}])
    r = cli(sshd, rf)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "failed step vf (check): apply finished but the step is still not satisfied: check: not satisfied" in r.stderr
    assert r.stderr.count("check: not satisfied") == 1, r.stderr
    assert "[1/1] vf                 cleanup     done" in r.stdout, r.stdout
    assert not (tmp_path / "root/opt/app/V2").exists()  # the cleanup removed what the failed apply made
    assert not (tmp_path / "root/.state/vf.applied").exists() and not (tmp_path / "root/.state/vf.sha256").exists()


def test_a_manifest_write_that_fails_leaves_no_temporary_file(sshd, recipe_file):
    """Review finding 14: a failed write (a full disk) left image-manifest.json.tmp on the builder, in the image. The
    manifest here is made immutable (chattr +i), so its rename fails after the temporary file is written."""
    chattr = require("chattr", "e2fsprogs")
    assert cli(sshd, recipe_file).returncode == 0
    manifest = recipe_file.parent / "root/etc/gpufleet/image-manifest.json"
    manifest.write_text("{}\n")  # not what this build writes: the next build replaces it
    if subprocess.run([chattr, "+i", str(manifest)], capture_output=True).returncode != 0:
        pytest.skip("this file system takes no immutable flag (chattr +i)")
    try:
        r = cli(sshd, recipe_file)
    finally:
        subprocess.run([chattr, "-i", str(manifest)], check=True)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert f"failed step manifest (apply): writing {manifest} exited 1" in r.stderr, r.stderr
    assert sorted(p.name for p in manifest.parent.iterdir()) == ["image-manifest.json"]  # no .tmp left
    assert manifest.read_text() == "{}\n"


def test_a_build_whose_step_record_went_meanwhile_writes_no_manifest(sshd, tmp_path):
    """The manifest's steps are the digests the builder records as applied; one that is gone by the end (another
    build re-applying that step) is not claimed: the build fails and writes no manifest."""
    prefix = tmp_path / "root"
    rf = write_recipe(
        tmp_path,
        steps=[
            tree_step(tmp_path),
            {"name": "forget", "template": "forget"},
        ],
    )
    r = cli(sshd, rf)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "failed step manifest (check): the host no longer records the applied digest of tree" in r.stderr, r.stderr
    assert not (prefix / "etc/gpufleet/image-manifest.json").exists() and not (tmp_path / "m.json").exists()
    again = cli(sshd, rf)  # the next build applies tree again and records it
    assert again.returncode == 0 and "changed: applied 1 (tree), 1 already satisfied" in again.stdout, again.stdout
