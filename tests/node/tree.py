"""The node tree: a Debian trixie minbase root built once with debootstrap, cached outside the repo.

The cache folder is keyed by a hash of the package lists, so changing a package builds a new tree.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

SUITE = "trixie"
MIRROR = "http://deb.debian.org/debian"
# debootstrap's own resolver takes these (DESIGN.md "Seen working"); e2fsprogs for the data disk's mkfs.
BOOTSTRAP = ("systemd", "systemd-sysv", "dbus", "cloud-init", "python3", "curl", "python3-cffi-backend", "e2fsprogs")
# Installed with apt inside the tree afterwards (cloud-init ends clean with them; sshd for the image runner).
# nginx and prometheus-node-exporter: the gateway and the exporter the image recipe pins. Debian trixie's packages
# stand in for Ubuntu 24.04's (nginx 1.24, node_exporter 1.7.0): same Debian packaging (nginx.service, conf.d
# include, www-data; prometheus-node-exporter.service), newer upstream versions.
APT = ("iproute2", "openssh-server", "nginx", "prometheus-node-exporter")
CACHE = Path(os.environ.get("GPUFLEET_NODE_TREE_CACHE", "/var/cache/gpufleet-node-tree"))


def key() -> str:
    return hashlib.sha256("\n".join([SUITE, MIRROR, *BOOTSTRAP, "--", *APT]).encode()).hexdigest()[:16]


def path() -> Path:
    return CACHE / key()


def build(log) -> Path:
    """The cached tree, built first when missing (a half-built tree is never left under the final name)."""
    final = path()
    if (final / ".complete").exists():
        return final
    tmp = final.with_name(final.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    _run(["debootstrap", "--variant=minbase", "--include=" + ",".join(BOOTSTRAP), SUITE, str(tmp), MIRROR], log)
    # No service starts while packages install (nothing is booted; nginx would take the host's port 80).
    policy = tmp / "usr/sbin/policy-rc.d"
    policy.write_text("#!/bin/sh\nexit 101\n")
    policy.chmod(0o755)
    _run(
        [
            "systemd-nspawn",
            "-q",
            "-D",
            str(tmp),
            "--register=no",
            "--keep-unit",
            "--setenv=DEBIAN_FRONTEND=noninteractive",
            "apt-get",
            "install",
            "-y",
            "--no-install-recommends",
            *APT,
        ],
        log,
    )
    _run(["systemd-nspawn", "-q", "-D", str(tmp), "--register=no", "--keep-unit", "apt-get", "clean"], log)
    policy.unlink()
    # No host keys baked into the cache: each boot generates its own (ssh-keygen -A at sshd start).
    for f in (tmp / "etc/ssh").glob("ssh_host_*"):
        f.unlink()
    (tmp / ".complete").write_text(key() + "\n")
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    return final


def _run(cmd: list[str], log) -> None:
    run = subprocess.run(cmd, capture_output=True, text=True)
    log(f"$ {' '.join(cmd[:6])}... -> {run.returncode}")
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({run.returncode}):\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")


if __name__ == "__main__":
    import time

    t = time.monotonic()
    print(build(print), f"{time.monotonic() - t:.0f}s")
