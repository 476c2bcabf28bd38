"""Fact parsers from recorded command output.

pip show, python --version and dpkg-query texts were recorded on this machine (2026-12-02). This machine
has no GPU, so the nvidia-smi and nvcc texts follow the documented formats (`--format=csv,noheader`
prints one value per GPU per line) and are NOT recordings from a GPU host.
"""

from pathlib import Path

import pytest

from gpufleet.images import facts

REC = Path(__file__).parent / "recorded"


def test_pip_show_recorded():
    text = (REC / "pip_show_jinja2.txt").read_text()
    assert facts.parse_pip_show(text)["Name"] == "Jinja2"
    assert facts.parse_pip_version(text) == "3.1.6"


def test_pip_show_local_version_tag_and_absent():
    assert facts.parse_pip_version("Name: torch\nVersion: 2.7.1+cu126\n") == "2.7.1"
    assert facts.parse_pip_version("WARNING: Package(s) not found: vllm\n") is None


def test_python_version_recorded():
    assert facts.parse_python_version("Python 3.11.7\n") == "3.11.7"
    assert facts.parse_python_version("bash: python3.12: command not found") is None


def test_dpkg_version_recorded_strips_epoch_and_revision():
    assert facts.parse_dpkg_version("ii 1:9.2p1-2+deb12u10") == "9.2p1"
    assert facts.parse_dpkg_version("hi 580.95.05-0ubuntu0.24.04.2") == "580.95.05"  # held, as the build leaves it
    assert facts.parse_dpkg_version("") is None


@pytest.mark.parametrize("state", ["iF", "iU", "rc", "iH", "iW", "it", "iiR"])
def test_dpkg_version_of_a_package_whose_install_did_not_finish_is_absent(state):
    """Half-configured, unpacked, removed with its config, half-installed, awaiting or pending triggers, or flagged for
    reinstallation: `${Version}` alone shows a version for each (review finding 1)."""
    assert facts.parse_dpkg_version(f"{state:<3}580.95.05-0ubuntu0.24.04.2") is None


def test_nvidia_smi_driver_one_line_per_gpu():
    assert facts.parse_nvidia_smi_driver("580.95.05\n580.95.05\n") == "580.95.05"
    assert (
        facts.parse_nvidia_smi_driver("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n") is None
    )
    with pytest.raises(ValueError):
        facts.parse_nvidia_smi_driver("580.95.05\n570.172.08\n")


def test_nvcc_and_node_exporter():
    nvcc = "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 12.6, V12.6.85\nBuild cuda_12.6.r12.6/compiler.35059454_0\n"
    assert facts.parse_nvcc_version(nvcc) == "12.6"
    assert facts.parse_node_exporter_version("node_exporter, version 1.7.0 (branch: debian/sid, revision: 1.7.0-1)\n") == "1.7.0"


def test_matches_is_prefix_by_component():
    assert facts.matches("3.12.3", "3.12")
    assert not facts.matches("3.1.2", "3.12") and not facts.matches("3.120", "3.12")
    assert not facts.matches(None, "1")


def test_survey_output_splits_into_parts():
    from gpufleet.images.runner import Result, parse_survey

    m = "gpufleet-survey-x"
    out = (
        f"{m} begin 0\n1.2.3\n\n{m} stderr 0\n\n{m} end 0 0\n"
        f"{m} begin 1\n\n{m} stderr 1\nsudo: a password is required\n\n{m} end 1 1\n"
        f"{m} begin 2\nhalf\n\n{m} stderr 2\n"
    )
    assert parse_survey(out, m, 3) == [Result(0, "1.2.3\n", ""), Result(1, "", "sudo: a password is required\n"), None]
