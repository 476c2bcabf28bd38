"""The cloud registry: every registered cloud fulfils the contract, and what one lacks is named."""

import types

import pytest

from gpufleet import registry
from gpufleet.registry import Capability


def test_every_registered_cloud_fulfils_the_contract():
    assert registry.problems() == []


def test_a_missing_cloud_is_named():
    assert registry.problems(("nocloud",)) == ["nocloud: not registered"]


def test_a_capability_without_a_value_is_named(monkeypatch):
    profile = registry.module("tencentcloud", "profile")
    monkeypatch.setattr(
        profile, "CAPABILITIES", {k: v for k, v in profile.CAPABILITIES.items() if k != Capability.LAYER7_LISTENER}
    )
    assert registry.problems(("tencentcloud",)) == [
        "tencentcloud: gpufleet.components.tencentcloud.profile.CAPABILITIES has no value for layer7_listener "
        "(None = supported, else the message)"
    ]


def test_a_module_without_its_functions_is_named(monkeypatch):
    monkeypatch.setitem(
        registry._ENTRIES,
        "tencentcloud",
        {
            **registry.entries()["tencentcloud"],
            "program": "gpufleet.components.tencentcloud.checks",
            "image": "gpufleet.components.tencentcloud.nothing",
        },
    )
    problems = registry.problems(("tencentcloud",))
    assert "tencentcloud: gpufleet.components.tencentcloud.checks has no declare" in problems
    assert any("image module gpufleet.components.tencentcloud.nothing does not import" in p for p in problems)
    with pytest.raises(TypeError, match="does not fulfil ProgramModule: declare"):
        registry.program("tencentcloud")


def test_modules_load_on_first_use_only():
    assert set(registry.entries()["alicloud"]) == set(registry.CONCERNS)
    assert all(path.startswith("gpufleet.components.alicloud.") for path in registry.entries()["alicloud"].values())


def test_a_module_is_checked_against_its_protocol():
    fake = types.ModuleType("fake")
    fake.declare = lambda fleet, parent: {}
    assert isinstance(fake, registry.ProgramModule)
    assert not isinstance(fake, registry.ChecksModule)


def test_capability_messages_are_preview_notes():
    notes = registry.notes("tencentcloud")
    assert any(n.startswith("gpu_metric_autoscaling:") for n in notes)
    assert not any(n.startswith("gpu_hardware_alarms:") for n in notes)  # supported on Tencent
    assert any(n.startswith("gpu_hardware_alarms:") for n in registry.notes("alicloud"))
