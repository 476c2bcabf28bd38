"""A real OpenSSH server on 127.0.0.1 for the image runner tests, and the self-test recipe.

The server runs as root from its own config in a temp dir (temporary host key, AuthorizedKeysFile
pointing at a test key, StrictModes no, UsePAM no, PidFile in the temp dir) on a free high port.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
from msgspec import Struct
from selftest_recipe import PREFIXES, write_recipe
from tools import require


class Sshd(Struct):
    port: int
    pid: int
    key: Path
    host_pub: Path
    known_hosts: Path  # holds the server's real host key
    folder: Path

    def session_pids(self) -> list[int]:
        """The per-connection sshd processes (children of the listener) — killing them drops the connection."""
        out = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    stat = (entry / "stat").read_text()
                except OSError:
                    continue
                ppid = int(stat.rsplit(")", 1)[1].split()[1])
                if ppid == self.pid:
                    out.append(int(entry.name))
        return out

    def drop_connections(self) -> int:
        pids = self.session_pids()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return len(pids)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def sshd(tmp_path_factory) -> Sshd:
    sshd_path = require("sshd", "openssh-server")
    d = tmp_path_factory.mktemp("sshd")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / "host_ed25519")], check=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / "client_ed25519")], check=True)
    shutil.copy(d / "client_ed25519.pub", d / "authorized_keys")
    port = _free_port()
    (d / "sshd_config").write_text(
        "\n".join(
            [
                f"Port {port}",
                "ListenAddress 127.0.0.1",
                f"HostKey {d / 'host_ed25519'}",
                f"PidFile {d / 'sshd.pid'}",
                f"AuthorizedKeysFile {d / 'authorized_keys'}",
                "StrictModes no",
                "UsePAM no",
                "PermitRootLogin prohibit-password",
                "PubkeyAuthentication yes",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "MaxStartups 50",
                "LogLevel ERROR",
                # test users (test_sudo_sshd.py): their key in their home, which they can read (this folder is 0700)
                "Match User gpft-*",
                "    AuthorizedKeysFile %h/authorized_keys",
                "",
            ]
        )
    )
    Path("/run/sshd").mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([sshd_path, "-D", "-e", "-f", str(d / "sshd_config")], stderr=open(d / "sshd.log", "w"))
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"sshd did not start: {(d / 'sshd.log').read_text()}")
            time.sleep(0.05)
    pub = (d / "host_ed25519.pub").read_text().split()
    (d / "known_hosts").write_text(f"[127.0.0.1]:{port} {pub[0]} {pub[1]}\n")
    yield Sshd(port, proc.pid, d / "client_ed25519", d / "host_ed25519.pub", d / "known_hosts", d)
    for prefix in PREFIXES:  # the runner's step locks of the tests' prefixes (Runner.lock_path)
        shutil.rmtree(f"/run/lock/gpufleet-{hashlib.sha256(str(prefix).encode()).hexdigest()[:16]}", ignore_errors=True)
    proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture
def recipe_file(tmp_path) -> Path:
    return write_recipe(tmp_path)
