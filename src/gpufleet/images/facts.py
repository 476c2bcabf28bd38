"""Facts: one command read on the host and a pure parser of its output.

A parser returns the observed value as a string, or None when the output says the thing is absent.
Parsers are tested from recorded command output (tests/images/test_facts.py).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable

from msgspec import Struct


def parse_nvidia_smi_driver(text: str) -> str | None:
    """`nvidia-smi --query-gpu=driver_version --format=csv,noheader`: one line per GPU, all equal."""
    values = {line.strip() for line in text.splitlines() if line.strip()}
    if not values or any(not re.fullmatch(r"\d+\.\d+(\.\d+)?", v) for v in values):
        return None
    if len(values) > 1:
        raise ValueError(f"GPUs report different drivers: {', '.join(sorted(values))}")
    return values.pop()


# dpkg-query's format for a package's state and version: "ii 1.0-1" (want install, installed, no error), "hi " when
# held; "iF" (half-configured), "iU" (unpacked), "rc" (removed, its config files left) are no installed package, though
# ${Version} alone shows a version for them too (a cut-off install of the driver's DKMS build leaves "iF").
DPKG_STATE = "${db:Status-Abbrev}${Version}"


def dpkg_installed(text: str) -> bool:
    """Whether `dpkg-query -W -f=DPKG_STATE PKG` says the package is installed and configured (ii or hi, no error)."""
    return text[:3] in ("ii ", "hi ")


def parse_dpkg_version(text: str) -> str | None:
    """`dpkg-query -W -f=DPKG_STATE PKG`: the upstream version (without epoch and Debian revision) of a package that is
    installed and configured; None for one that is absent or whose install did not finish (half-configured, unpacked)."""
    if not dpkg_installed(text):
        return None
    raw = text[3:].strip()
    if not raw:
        return None
    raw = raw.split(":", 1)[1] if re.match(r"^\d+:", raw) else raw
    return raw.rsplit("-", 1)[0] if "-" in raw else raw


def parse_pip_show(text: str) -> dict[str, str]:
    """`pip show PKG`: the `Key: value` header lines (Name, Version, Requires, ...)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key and not key.startswith(" ") and key not in out:
            out[key.strip()] = value.strip()
    return out


def parse_pip_version(text: str) -> str | None:
    """The version from `pip show PKG`, without a local tag (2.7.1+cu126 -> 2.7.1)."""
    version = parse_pip_show(text).get("Version")
    return version.split("+", 1)[0] if version else None


def parse_python_version(text: str) -> str | None:
    """`python --version`: "Python 3.12.3" -> "3.12.3"."""
    m = re.search(r"Python (\d+\.\d+\.\d+)", text)
    return m.group(1) if m else None


def parse_nvcc_version(text: str) -> str | None:
    """`nvcc --version`: "... release 12.6, V12.6.85" -> "12.6"."""
    m = re.search(r"release (\d+\.\d+)", text)
    return m.group(1) if m else None


def parse_node_exporter_version(text: str) -> str | None:
    """`prometheus-node-exporter --version`: "node_exporter, version 1.7.0 (branch: ...)" -> "1.7.0"."""
    m = re.search(r"node_exporter, version (\d+\.\d+\.\d+)", text)
    return m.group(1) if m else None


def parse_first_line(text: str) -> str | None:
    line = text.strip().splitlines()[0].strip() if text.strip() else ""
    return line or None


def matches(observed: str | None, pin: str) -> bool:
    """A pin of "3.12" is met by "3.12.3"; "580.95.05" only by itself."""
    return observed is not None and (observed == pin or observed.startswith(pin + "."))


def observed_problems(recipe, observed) -> list[tuple[str, str]]:
    """(field, message) for each fact a step pins that a build manifest did not observe on the host, or observed with a
    value that does not meet the pin (the runner's own test after apply): such an image does not show what the recipe
    pins."""
    if not isinstance(observed, dict):
        return [("observed", "is not a mapping of fact to the value read on the host")]
    out = []
    for step in recipe.steps:
        if not (step.fact and step.pin):
            continue
        key = observed_key(step)
        want = recipe.pins[step.pin]
        if key not in observed:  # a hand-written manifest, or a host that could not answer: nothing shows the pin holds
            out.append(
                (f"observed.{key}", f"missing: the build records it (pin {step.pin} {want}); use a manifest `image build` wrote")
            )
            continue
        value = observed[key]
        if not isinstance(value, str) or not matches(value, want):
            out.append(
                (
                    f"observed.{key}",
                    f"the host had {value!r}, but pin {step.pin} is {want}: not an image of this recipe; rebuild it",
                )
            )
    return out


def observed_key(step) -> str:
    """The key of a step's fact in a manifest's `observed` (the runner's): the fact's name, or the step's name for a
    fact that reads a step var (file_line: one per step)."""
    return step.name if step.fact == "file_line" else step.fact


class Fact(Struct, frozen=True):
    name: str
    command: Callable[..., str]  # (recipe, step vars) -> shell command
    parse: Callable[[str], str | None]
    needs: tuple[str, ...] = ()  # the step vars its command reads (so it cannot be a manifest fact, which has none)


def _driver_package(recipe) -> str:
    names = [p.name for p in recipe.apt_packages if p.name.startswith("nvidia-driver-")]
    return names[0] if names else "nvidia-driver"


FACTS: dict[str, Fact] = {
    "nvidia_driver": Fact(
        "nvidia_driver", lambda r, v: "nvidia-smi --query-gpu=driver_version --format=csv,noheader", parse_nvidia_smi_driver
    ),
    "driver_package": Fact(
        "driver_package",
        lambda r, v: f"dpkg-query -W -f={shlex.quote(DPKG_STATE)} {shlex.quote(_driver_package(r))}",
        parse_dpkg_version,
    ),
    "python_version": Fact(
        "python_version", lambda r, v: f"{shlex.quote(r.layout.venv)}/bin/python --version", parse_python_version
    ),
    "vllm_version": Fact("vllm_version", lambda r, v: f"{shlex.quote(r.layout.venv)}/bin/pip show vllm", parse_pip_version),
    "torch_version": Fact("torch_version", lambda r, v: f"{shlex.quote(r.layout.venv)}/bin/pip show torch", parse_pip_version),
    "nvcc_version": Fact("nvcc_version", lambda r, v: "nvcc --version", parse_nvcc_version),
    "node_exporter_version": Fact(
        "node_exporter_version", lambda r, v: "prometheus-node-exporter --version", parse_node_exporter_version
    ),
    # Reads the first line of a file named by the step's `path` var (used by the self-test recipe).
    "file_line": Fact("file_line", lambda r, v: f"head -n1 {shlex.quote(str(v['path']))}", parse_first_line, ("path",)),
}

# Facts the manifest records besides the per-step ones, when the host can answer them.
MANIFEST_FACTS = ("nvidia_driver", "driver_package", "python_version", "torch_version", "vllm_version", "node_exporter_version")
