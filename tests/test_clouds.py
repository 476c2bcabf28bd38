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


# The provider config keys named like a credential that hold none, read one by one: a path or URI where credentials
# are kept, or a one-time MFA code (stale once written).
NOT_CREDENTIALS = {
    "alicloud": {
        "assumeRoleWithOidc.oidcTokenFile": "a path",
        "credentialsUri": "the URI of a credentials service",
        "sharedCredentialsFile": "a path",
    },
    "tencentcloud": {
        "assumeRole.tokenCode": "a one-time MFA code",
        "mfaCertification.tokenCode": "a one-time MFA code",
        "sharedCredentialsDir": "a path",
    },
}


def _provider_config_keys(package: str) -> set[str]:
    """The config keys of an installed Pulumi provider package (config/vars.py), with the fields of its object
    settings as key.field (config/outputs.py: the class named after the key), read as text (no import)."""
    import importlib.util
    import re
    from pathlib import Path

    spec = importlib.util.find_spec(package.replace("-", "_"))
    assert spec is not None and spec.submodule_search_locations, package
    folder = Path(next(iter(spec.submodule_search_locations))) / "config"
    top = set(re.findall(r"__config__\.get(?:_\w+)?\('(\w+)'\)", (folder / "vars.py").read_text()))
    keys = set(top)
    outputs = (folder / "outputs.py").read_text()
    for cls, body in re.findall(r"^class (\w+)\(dict\):\n(.*?)(?=^class |\Z)", outputs, re.S | re.M):
        key = cls[0].lower() + cls[1:]
        if key in top:
            keys |= {
                f"{key}.{name or method}"
                for name, method in re.findall(r'@pulumi\.getter(?:\(name="(\w+)"\))?\n\s+def (\w+)\(', body)
            }
    return keys


@pytest.mark.parametrize("cloud", ["alicloud", "tencentcloud"])
def test_the_provider_credentials_are_the_installed_providers_credential_keys(cloud):
    """Every config key of the pinned provider named like a credential is a profile's provider_credentials (refused
    as plain text in a stack file) or read and found to hold none; each listed key is one the provider reads."""
    import re

    profile = registry.profile(cloud)
    keys = _provider_config_keys(profile.provider_package)
    assert {"region", "secretKey", "securityToken"} <= keys  # the reading found the package's keys
    named = {k for k in keys if re.search(r"(?i)token|key|secret|passw|credential|assertion", k)}
    assert set(profile.provider_credentials) <= keys
    assert named == set(profile.provider_credentials) | set(NOT_CREDENTIALS[cloud])
    assert not set(profile.provider_credentials) & set(NOT_CREDENTIALS[cloud])
