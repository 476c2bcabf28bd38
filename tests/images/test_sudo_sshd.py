"""`image build --user` other than root over the real sshd (conftest.py): every script runs under `sudo -n`, so the
login user must have sudo without a password. A test user, gpft-nosudo, is added to this machine for the module
(userdel at its end); its login shell puts a `sudo` first on PATH that behaves as sudo(8) does for a user with no
NOPASSWD rule: `sudo -n ...` prints "sudo: a password is required" and exits 1.

Review finding 3: each check then exited 1 and read as "not satisfied": the dry run of a host that was fully built
planned every step and exited 0, and the build called it a failed apply."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from test_build_sshd import cli
from tools import require

pytestmark = pytest.mark.sshd

USER = "gpft-nosudo"


@pytest.fixture(scope="module")
def nosudo_user(sshd):
    require("useradd", "passwd")
    home = Path(tempfile.mkdtemp(prefix="gpft-nosudo-"))  # not under pytest's 0700 folder: the user runs its shell
    home.chmod(0o755)
    (home / "bin").mkdir()
    (home / "bin/sudo").write_text(
        "#!/bin/bash\n# sudo(8) for a user without a NOPASSWD rule\n"
        'if [ "$1" = "-n" ]; then echo "sudo: a password is required" >&2; exit 1; fi\nexit 1\n'
    )
    (home / "shell").write_text(f'#!/bin/bash\nexport PATH={home}/bin:"$PATH"\nexec /bin/bash "$@"\n')
    for f in ("bin/sudo", "shell"):
        (home / f).chmod(0o755)
    # the test key, where conftest.py's sshd looks for a gpft-* user's (Match User gpft-*)
    shutil.copy(sshd.folder / "authorized_keys", home / "authorized_keys")
    (home / "authorized_keys").chmod(0o644)
    subprocess.run(["userdel", USER], capture_output=True)  # left by a run that was killed
    # '*' not '!': sshd (UsePAM no) refuses a locked account even with a key
    made = subprocess.run(
        ["useradd", "--no-create-home", "--home-dir", str(home), "--shell", str(home / "shell"), "-p", "*", USER],
        capture_output=True,
        text=True,
    )
    if made.returncode != 0:
        shutil.rmtree(home)
        pytest.fail(f"useradd {USER}: {made.stderr}")
    try:
        yield USER
    finally:
        subprocess.run(["userdel", USER], capture_output=True)
        shutil.rmtree(home, ignore_errors=True)


def test_a_user_whose_sudo_wants_a_password_is_refused_at_connect(sshd, recipe_file, nosudo_user):
    built = cli(sshd, recipe_file)  # as root: every step is done
    assert built.returncode == 0, built.stderr
    before = {p: p.stat().st_mtime_ns for p in (recipe_file.parent / "root").rglob("*")}
    for extra in (["--dry-run"], []):
        r = cli(sshd, recipe_file, "-u", nosudo_user, *extra)
        assert r.returncode == 2, (r.stdout, r.stderr)
        assert (
            f"error --user: {nosudo_user}@127.0.0.1:{sshd.port} cannot run sudo without a password "
            "(`sudo -n`: sudo: a password is required)"
        ) in r.stderr, r.stderr
        assert f"give {nosudo_user} a NOPASSWD rule" in r.stderr and "--user root" in r.stderr
        assert "would apply" not in r.stdout and "plan:" not in r.stdout and "apply" not in r.stdout, r.stdout
    assert {p: p.stat().st_mtime_ns for p in (recipe_file.parent / "root").rglob("*")} == before  # nothing ran


def test_root_is_not_probed(sshd, recipe_file):
    """root runs the scripts itself (no sudo): a host without sudo is fine."""
    assert os.path.exists("/bin/bash")
    r = cli(sshd, recipe_file, "--dry-run", "-u", "root")
    assert r.returncode == 0 and "plan: 3 to apply" in r.stdout, r.stderr
