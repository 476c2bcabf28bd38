"""The registry's defaults: a cloud writes only what differs (registry.DEFAULTS); what the CLI reads from the profiles."""

import importlib

import pytest

from gpufleet import registry
from gpufleet.cli import cost as cost_cli
from gpufleet.cli import versioned
from gpufleet.cost import refresh
from gpufleet.errors import UserError


@pytest.fixture
def entries(monkeypatch):
    """Point tencentcloud's concerns at other modules for one test; the checked-module cache is emptied after."""

    def point(**paths: str) -> None:
        monkeypatch.setitem(registry._ENTRIES, "tencentcloud", {**registry.entries()["tencentcloud"], **paths})
        registry._CHECKED.clear()

    yield point
    monkeypatch.undo()
    registry._CHECKED.clear()


def test_spoken():
    assert [registry.spoken(w) for w in ([], ["a"], ["a", "b"], ["a", "b", "c"])] == ["", "a", "a or b", "a, b or c"]
    assert registry.spoken(["a", "b"], "and") == "a and b"


def test_the_shipped_clouds_modules_are_their_own():
    """Nothing to fill in: the module itself, not a view of it."""
    for cloud in ("alicloud", "tencentcloud"):
        for concern in ("rules", "gateway", "prices", "checks", "pricing"):
            assert registry.module(cloud, concern) is importlib.import_module(registry.entries()[cloud][concern])


def test_a_concern_left_out_whole_is_its_defaults(entries):
    entries(gateway="gpufleet.components.tencentcloud.nogateway", rules="gpufleet.components.tencentcloud.norules")
    assert registry.module("tencentcloud", "gateway").TRUSTED_PROXIES == ()
    assert registry.module("tencentcloud", "rules").GAPS == {}
    assert registry.problems(("tencentcloud",)) == []


def test_a_concern_without_defaults_left_out_is_named(entries):
    entries(facts="gpufleet.components.tencentcloud.nofacts")
    (problem,) = registry.problems(("tencentcloud",))
    assert problem.startswith("tencentcloud: facts module gpufleet.components.tencentcloud.nofacts does not import")


def test_own_members_win_and_the_rest_are_defaults(entries, tmp_path, monkeypatch):
    (tmp_path / "partial_rules.py").write_text("RULES = ('own',)\nCRON_ZONE_HOURS = 8\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    entries(rules="partial_rules")
    mod = registry.module("tencentcloud", "rules")
    assert (mod.RULES, mod.CRON_ZONE_HOURS, mod.GAPS, mod.DOCSTRING_OVERRIDES) == (("own",), 8, {}, {})
    assert mod.__name__ == "partial_rules" and mod.__file__ == str(tmp_path / "partial_rules.py")
    assert registry.problems(("tencentcloud",)) == []


def test_a_module_that_fails_its_own_import_is_not_hidden_by_defaults(entries, tmp_path, monkeypatch):
    (tmp_path / "broken_gateway.py").write_text("import no_such_module_for_gpufleet\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    entries(gateway="broken_gateway")
    with pytest.raises(ModuleNotFoundError, match="no_such_module_for_gpufleet"):
        registry.module("tencentcloud", "gateway")
    (problem,) = registry.problems(("tencentcloud",))
    assert "gateway module broken_gateway does not import" in problem


def test_no_prices_module_refuses_catalog_refresh(entries):
    entries(prices="gpufleet.components.tencentcloud.noprices")
    with pytest.raises(UserError, match="tencentcloud has no pricing API; prices come from `catalog build`"):
        registry.module("tencentcloud", "prices").fetch("ap-guangzhou", "2026-12-01")


def test_version_lists_each_clouds_provider():
    assert versioned() == ("gpufleet", "pulumi", "pulumi-alicloud", "tencentcloud-iac-pulumi")


def test_help_and_refresh_messages_come_from_the_profiles():
    assert cost_cli._credentials_help() == "ALIBABA_CLOUD_ACCESS_KEY_ID/SECRET or TENCENTCLOUD_SECRET_ID/KEY"
    assert (cost_cli.CLOUDS_HELP, cost_cli.EVERY_CLOUD, cost_cli.IMAGE_PRICED_BY) == (
        "alicloud | tencentcloud",
        "both",
        "Tencent",
    )
    for cloud, region, example in (
        ("alicloud", "cn-hangzhou", "ecs.cn-hangzhou.aliyuncs.com"),
        ("tencentcloud", "ap-guangzhou", "cvm.tencentcloudapi.com"),
    ):
        with pytest.raises(UserError, match=f"give HOST\\[:PORT\\], e.g. {example}$"):
            refresh.refresh(cloud, region, "a b")
