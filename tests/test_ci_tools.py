"""Every system tool a test asks tools.require for is installed in CI: .ci/run exports CI=true, under which a missing
tool fails its test, so a tool scripts/install-system-tools.sh does not install would turn CI red (or, before CI=true
was set there, skip the check unseen)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Debian packages of priority required (or essential) in bookworm, present on every Debian system (apt-cache show).
BASE = {"dpkg", "apt", "passwd", "e2fsprogs"}


def installed() -> set[str]:
    """The packages scripts/install-system-tools.sh passes to apt-get install."""
    text = (ROOT / "scripts" / "install-system-tools.sh").read_text()
    out: set[str] = set()
    for cmd in re.findall(r"apt-get install ((?:\\\n|[^\n])*)", text):
        words = cmd.replace("\\\n", " ").split(">")[0].split()
        out |= {w for w in words if not w.startswith("-")}
    return out


def required() -> dict[str, set[str]]:
    """package -> the test files that require one of its tools (require(name, package=name))."""
    out: dict[str, set[str]] = {}
    for path in ROOT.joinpath("tests").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "require":
                args = node.args
                package = args[1] if len(args) > 1 else args[0]
                names = [package] if not isinstance(package, ast.IfExp) else [package.body, package.orelse]
                for n in names:  # require(tool, "dpkg" if ... else "apt") names its packages in both branches
                    assert isinstance(n, ast.Constant), f"{path}:{node.lineno}: require's package is not written out"
                    out.setdefault(n.value, set()).add(str(path.relative_to(ROOT)))
    return out


def test_ci_sets_ci_true_before_the_tests():
    text = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"(?m)^export CI=true$", text)
    assert text.index("export CI=true") < text.index(".venv/bin/pytest")


def test_every_required_tool_is_installed_by_the_ci_script():
    need = required()
    assert {"cloud-init", "shellcheck", "systemd", "nginx", "prometheus", "gpg"} <= set(need)
    missing = {pkg: files for pkg, files in need.items() if pkg not in installed() | BASE}
    assert not missing, f"add to scripts/install-system-tools.sh: {missing}"
