"""The apt-packages step's check and the driver_package fact against the real dpkg of this machine, over the real
sshd (conftest.py): a harmless dummy package, gpft-test-demo (no files), is installed in the states a cut-off install
leaves, and purged afterwards. Dry runs only: an apply would run apt-get update against the network.

Review finding 1: both read only `dpkg-query -f '${Version}'`, which shows a version for a half-configured package
too, so a resumed build skipped the step and the manifest recorded an unconfigured driver."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from selftest_recipe import write_recipe
from test_build_sshd import cli
from tools import require

from gpufleet.images import facts
from gpufleet.images.recipes import load_recipe
from gpufleet.images.steps import render

pytestmark = pytest.mark.sshd

PKG = "gpft-test-demo"


def _purge() -> None:
    subprocess.run(["apt-mark", "unhold", PKG], capture_output=True)
    subprocess.run(["dpkg", "--purge", "--force-all", PKG], capture_output=True)


@pytest.fixture
def demo(tmp_path):
    """install(postinst_fails=...) puts the dummy package into dpkg's database; purged at the end either way."""
    for tool in ("dpkg", "dpkg-deb", "dpkg-query", "apt-mark"):
        require(tool, "dpkg" if tool.startswith("dpkg") else "apt")

    def install(postinst_fails: bool) -> str:
        root = tmp_path / f"deb-{postinst_fails}"
        (root / "DEBIAN").mkdir(parents=True)
        (root / "DEBIAN/control").write_text(
            f"Package: {PKG}\nVersion: 1.0-1\nArchitecture: all\nMaintainer: gpufleet tests <tests@example.invalid>\n"
            "Description: gpufleet test dummy (no files)\n"
        )
        post = root / "DEBIAN/postinst"
        post.write_text("#!/bin/sh\n" + ("echo 'simulated: DKMS build cut off' >&2\nexit 1\n" if postinst_fails else "exit 0\n"))
        post.chmod(0o755)
        deb = tmp_path / f"{PKG}-{postinst_fails}.deb"
        subprocess.run(["dpkg-deb", "--root-owner-group", "-b", str(root), str(deb)], check=True, capture_output=True)
        subprocess.run(["dpkg", "-i", str(deb)], capture_output=True)  # exits 1 when the postinst fails
        return subprocess.run(["dpkg-query", "-W", f"-f={facts.DPKG_STATE}", PKG], capture_output=True, text=True).stdout

    _purge()
    yield install
    _purge()


def _apt_recipe(folder: Path) -> Path:
    rf = write_recipe(folder, steps=[{"name": "apt-packages", "template": "apt_packages"}])
    doc = yaml.safe_load(rf.read_text())
    doc["apt_packages"] = [{"name": PKG, "version": "1.0-1", "repo": "ubuntu"}]
    rf.write_text(yaml.safe_dump(doc, sort_keys=False))
    return rf


def _as_applied(rf: Path) -> None:
    """Record the step as applied, as a build that applied this step does, so only its check decides."""
    step = render(load_recipe(str(rf)))[0]
    state = rf.parent / "root/.state"
    state.mkdir(parents=True)
    (state / f"{step.name}.sha256").write_text(step.digest() + "\n")


def test_a_half_configured_package_is_not_installed(sshd, tmp_path, demo):
    assert demo(postinst_fails=True) == "iF 1.0-1"  # what dpkg leaves when the postinst fails or is cut off
    rf = _apt_recipe(tmp_path)
    _as_applied(rf)
    plan = cli(sshd, rf, "--dry-run")
    assert plan.returncode == 0, plan.stderr
    assert "[1/1] apt-packages       would apply check: not satisfied" in plan.stdout, plan.stdout
    assert facts.parse_dpkg_version("iF 1.0-1") is None  # the driver_package fact: no driver installed
    # the check says why on stderr (a build shows it when the step stays unsatisfied after its apply): the package and
    # what dpkg shows against what the pin needs, then dpkg --audit's own report of the half-installed package
    check = render(load_recipe(str(rf)))[0].check
    said = subprocess.run(["bash", "-c", check], capture_output=True, text=True)
    assert said.returncode == 1
    assert f"{PKG}: dpkg shows 'iF 1.0-1', not 'hi 1.0-1' (installed, configured, held at the pin)" in said.stderr
    subprocess.run(["apt-mark", "hold", PKG], check=True, capture_output=True)
    said = subprocess.run(["bash", "-c", check], capture_output=True, text=True)
    assert said.returncode == 1 and "'hF 1.0-1'" in said.stderr, said.stderr  # held, still half-configured


def test_an_installed_package_counts_only_once_held(sshd, tmp_path, demo):
    """The apply holds the pinned packages last: a build cut off before `apt-mark hold` left them unheld for good."""
    assert demo(postinst_fails=False) == "ii 1.0-1"
    rf = _apt_recipe(tmp_path)
    _as_applied(rf)
    plan = cli(sshd, rf, "--dry-run")
    assert plan.returncode == 0 and "would apply check: not satisfied" in plan.stdout, (plan.stdout, plan.stderr)
    subprocess.run(["apt-mark", "hold", PKG], check=True, capture_output=True)
    held = cli(sshd, rf, "--dry-run")
    assert held.returncode == 0 and "[1/1] apt-packages       ok          check: satisfied" in held.stdout, held.stdout
    out = subprocess.run(["dpkg-query", "-W", f"-f={facts.DPKG_STATE}", PKG], capture_output=True, text=True).stdout
    assert out == "hi 1.0-1" and facts.parse_dpkg_version(out) == "1.0"


def test_the_apply_first_finishes_a_cut_off_install_and_may_move_held_packages(tmp_path):
    step = render(load_recipe(str(_apt_recipe(tmp_path))))[0]
    commands = [ln for ln in step.apply.splitlines()[3:] if ln.strip() and not ln.startswith("export ")]
    assert commands[0] == "dpkg --configure -a", commands
    assert "--allow-change-held-packages" in step.apply  # held by the first build: a changed pin must move them
