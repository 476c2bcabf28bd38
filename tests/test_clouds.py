"""The cloud registry is complete for every cloud of the catalog, and a missing entry is caught."""

import pytest
from gpufleet.components import clouds
from gpufleet.stacks.catalog import CLOUDS


def test_every_catalog_cloud_is_fully_registered():
    assert clouds.registry_problems(CLOUDS) == []


@pytest.mark.parametrize("table", ["PROFILES", "REGISTRY"])
def test_a_missing_entry_is_named(monkeypatch, table):
    monkeypatch.setattr(clouds, table, {k: v for k, v in getattr(clouds, table).items() if k != "tencentcloud"})
    assert any(p.startswith("tencentcloud: no " + table) for p in clouds.registry_problems(CLOUDS))


def test_a_capability_without_a_value_is_named(monkeypatch):
    monkeypatch.setitem(clouds.CAPABILITIES, "new_capability", {"alicloud": None})
    assert clouds.registry_problems(CLOUDS) == [
        "tencentcloud: CAPABILITIES['new_capability'] has no value (None = supported, else the message)"
    ]


def test_a_module_without_its_functions_is_named(monkeypatch):
    monkeypatch.setitem(
        clouds.REGISTRY,
        "tencentcloud",
        {"program": "gpufleet.components.tencentcloud.checks", "checks": "gpufleet.components.tencentcloud.nothing"},
    )
    problems = clouds.registry_problems(CLOUDS)
    assert "tencentcloud: gpufleet.components.tencentcloud.checks has no declare()" in problems
    assert any("does not import" in p for p in problems)


def test_capability_messages_are_preview_notes():
    notes = clouds.notes("tencentcloud")
    assert any(n.startswith("gpu_metric_autoscaling:") for n in notes)
    assert not any(n.startswith("gpu_hardware_alarms:") for n in notes)  # supported on Tencent
    assert any(n.startswith("gpu_hardware_alarms:") for n in clouds.notes("alicloud"))
