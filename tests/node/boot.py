"""Boot a node tree with systemd-nspawn (real systemd, real cloud-init), one container at a time.

Mechanics that hold on these machines (docs/node.md): the root is an overlayfs mounted by the test (lower:
the cached Debian tree plus the image layer; upper: the node's own persistent folder, so a reboot is a
second boot on the same upper); `--register=no --keep-unit`, the container started inside its own cgroup
folder (removed afterwards); a NoCloud seed bound read-only; a loop device bound as the data disk; commands
inside through `nsenter -t <init pid>`. Everything is undone in `close()`, also after a failure.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path

CGROUP_ROOTS = [Path("/sys/fs/cgroup/systemd"), Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup")]


def _cgroup_roots() -> list[Path]:
    out = []
    for root in CGROUP_ROOTS:
        if (root / "cgroup.procs").exists() and os.access(root, os.W_OK):
            out.append(root)
            if root == Path("/sys/fs/cgroup"):
                break
    return [r for r in out if r != Path("/sys/fs/cgroup")] or out


def _rmtree_cgroup(path: Path) -> None:
    if not path.exists():
        return
    for child in sorted((p for p in path.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        try:
            child.rmdir()
        except OSError:
            pass
    try:
        path.rmdir()
    except OSError:
        pass


class Node:
    def __init__(self, lowers: list[Path], work: Path, data_disk: Path | None, seed: Path, log):
        self.lowers, self.work, self.data_disk, self.seed, self.log = lowers, work, data_disk, seed, log
        self.root = work / "root"
        self.upper = work / "upper"
        self.ovl_work = work / "ovl-work"
        self.name = "gpufleet-" + uuid.uuid4().hex[:8]
        self.loop: str | None = None
        self.proc: subprocess.Popen | None = None
        self.cgroups: list[Path] = []
        self.console = work / "console.log"
        for d in (self.root, self.upper, self.ovl_work):
            d.mkdir(parents=True, exist_ok=True)
        self.mounted = False

    # --- lifecycle --------------------------------------------------------------------------------
    def mount(self) -> None:
        if self.mounted:
            return
        opts = f"lowerdir={':'.join(map(str, self.lowers))},upperdir={self.upper},workdir={self.ovl_work}"
        subprocess.run(["mount", "-t", "overlay", "overlay", "-o", opts, str(self.root)], check=True)
        self.mounted = True

    def umount(self) -> None:
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.root)], check=False)
            self.mounted = False

    def boot(self, timeout_s: float = 60) -> None:
        self.mount()
        args = [
            "systemd-nspawn", "-q", "-D", str(self.root), "--boot", "--console=pipe", "--register=no", "--keep-unit",
            "-M", self.name, "--private-network", f"--bind-ro={self.seed}:/var/lib/cloud/seed/nocloud",
        ]  # fmt: skip
        if self.data_disk is not None:
            if self.loop is None:
                self.loop = subprocess.run(
                    ["losetup", "--find", "--show", str(self.data_disk)], check=True, capture_output=True, text=True
                ).stdout.strip()
            args.append(f"--bind={self.loop}:/dev/vdb")
        self.cgroups = []
        for root in _cgroup_roots():
            cg = root / self.name
            cg.mkdir(exist_ok=True)
            self.cgroups.append(cg)
        cgroups = list(self.cgroups)

        def enter():
            for cg in cgroups:
                (cg / "cgroup.procs").write_text(str(os.getpid()))

        out = self.console.open("ab")
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=out, preexec_fn=enter)
        self.init_pid = self._find_init(timeout_s)
        self.wait_booted(timeout_s)

    def _find_init(self, timeout_s: float) -> int:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nspawn exited {self.proc.returncode}: {self.console.read_text()[-2000:]}")
            for pid in self._descendants(self.proc.pid):
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                except OSError:
                    continue
                ns = next((line.split()[1:] for line in status.splitlines() if line.startswith("NSpid:")), [])
                if len(ns) >= 2 and ns[-1] == "1":
                    return pid
            time.sleep(0.1)
        raise RuntimeError("no container init found")

    @staticmethod
    def _descendants(pid: int) -> list[int]:
        out, todo = [], [pid]
        while todo:
            p = todo.pop()
            try:  # a short-lived process (nspawn's helpers while it boots) may be gone by now: it has no children left
                tasks = os.listdir(f"/proc/{p}/task")
            except OSError:
                continue
            for task in tasks:
                try:
                    kids = [int(x) for x in Path(f"/proc/{p}/task/{task}/children").read_text().split()]
                except OSError:
                    kids = []
                out += kids
                todo += kids
        return out

    def wait_booted(self, timeout_s: float) -> None:
        """Until the container's systemd says running or degraded (before its bus is up, systemctl says nothing)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            r = self.sh(f"timeout {int(timeout_s)} systemctl is-system-running --wait", timeout_s=timeout_s + 5)
            self.state = r.stdout.strip()
            if self.state in ("running", "degraded"):
                return
            time.sleep(0.2)
        raise RuntimeError(f"container did not finish booting ({self.state!r}): {self.console.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None
        for cg in self.cgroups:
            _rmtree_cgroup(cg)
        self.cgroups = []

    def reboot(self) -> None:
        self.stop()
        self.boot()

    def close(self) -> None:
        try:
            self.stop()
        finally:
            self.umount()
            if self.loop:
                subprocess.run(["losetup", "-d", self.loop], check=False)
                self.loop = None

    # --- inside -----------------------------------------------------------------------------------
    def sh(self, script: str, timeout_s: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["nsenter", "-t", str(self.init_pid), "-a", "/bin/bash", "-c", script],
            capture_output=True, text=True, timeout=timeout_s, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"},
        )  # fmt: skip

    def http(self, path: str, key: str | None = None, *, source: str | None = None, port: int | None = None) -> int:
        """Status of GET path on the node (the serving port unless `port`), from `source` (an address on lo)."""
        hdr = f"-H 'Authorization: Bearer {key}'" if key else ""
        src = f"--interface {source}" if source else ""
        url = f"http://127.0.0.1:{port or self.port}{path}"
        r = self.sh(f"curl -s -o /dev/null -w '%{{http_code}}' --max-time 5 {src} {hdr} {url}")
        return int(r.stdout or 0)

    def listeners(self) -> dict[int, set[str]]:
        """Listening TCP ports inside the node -> the local addresses they are bound to (from `ss`)."""
        out: dict[int, set[str]] = {}
        for line in self.sh("ss -ltnH").stdout.splitlines():
            local = line.split()[3]
            addr, _, port = local.rpartition(":")
            out.setdefault(int(port), set()).add(addr)
        return out

    def wait_http(self, path: str, want: int, within_s: float, key: str | None = None) -> float:
        start = time.monotonic()
        while time.monotonic() - start < within_s:
            if self.http(path, key) == want:
                return time.monotonic() - start
            time.sleep(0.2)
        raise AssertionError(f"{path} did not answer {want} within {within_s}s\n{self.diagnose()}")

    def journal(self, unit: str) -> str:
        return self.sh(f"journalctl -b --no-pager -o cat -u {unit}").stdout

    def diagnose(self) -> str:
        r = self.sh(
            "systemctl --no-pager status gpufleet-prepare.service vllm.service gpufleet-gateway-render.service nginx.service"
            " 2>&1 | tail -60; journalctl -b --no-pager -o short -u gpufleet-prepare -u vllm -u gpufleet-gateway-render -u nginx"
            " | tail -40; cloud-init status --long"
        )
        return r.stdout + r.stderr


def prepare_dir(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path
