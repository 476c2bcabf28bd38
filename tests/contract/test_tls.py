"""Issue 14 items 1, 6, 7: HTTPS at the load balancer, encrypted disks and hardened nodes, deletion protection."""

from __future__ import annotations

import copy
from datetime import UTC, datetime

import pytest

from gpufleet import contract, validation
from gpufleet.components import hardening
from gpufleet.errors import UserError
from gpufleet.preview import preview_spec, preview_stack
from gpufleet.stacks import loader

from . import sweep

NOW = datetime(2026, 12, 1, tzinfo=UTC)


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch):
    monkeypatch.setenv("GPUFLEET_NOW", NOW.isoformat())


def _raw(stack: str) -> dict:
    _, config = loader.read_stack_config(stack, sweep.ROOT)
    return copy.deepcopy(config[loader.CONFIG_KEY])


def _of(inv, token):
    return [r for r in inv.resources if r["type"] == token]


@pytest.fixture(scope="module")
def ali():
    return preview_stack("alicloud-cn-hangzhou-prod", sweep.ROOT)


@pytest.fixture(scope="module")
def tc():
    return preview_stack("tencentcloud-ap-guangzhou-prod", sweep.ROOT)


def test_alicloud_prod_listens_https_with_a_certificate_and_redirects_http(ali):
    listeners = {r["name"]: r["inputs"] for r in _of(ali, "alicloud:slb/listener:Listener")}
    https = listeners["llm-prod-lb-listener"]
    assert https["protocol"] == "https" and https["frontendPort"] == 443
    assert https["serverCertificateId"] == "1234567890123456_example"
    assert https["tlsCipherPolicy"] == "tls_cipher_policy_1_2_strict"
    assert https["healthCheckType"] == "http" and https["healthCheckUri"] == "/health"
    redirect = listeners["llm-prod-lb-redirect"]
    assert (redirect["protocol"], redirect["frontendPort"], redirect["listenerForward"], redirect["forwardPort"]) == (
        "http",
        80,
        "on",
        443,
    )
    assert ali.outputs["endpoint"] == "https://llm.example.com"


def test_alicloud_prod_encryption_metadata_and_protection(ali):
    (config,) = [r["inputs"] for r in _of(ali, "alicloud:ess/scalingConfiguration:ScalingConfiguration")]
    assert config["systemDiskEncrypted"] is True and all(d["encrypted"] is True for d in config["dataDisks"])
    (clb,) = [r["inputs"] for r in _of(ali, "alicloud:slb/applicationLoadBalancer:ApplicationLoadBalancer")]
    assert clb["deleteProtection"] == "on"
    assert [r["inputs"]["deletionProtection"] for r in _of(ali, "alicloud:vpc/natGateway:NatGateway")] == [True]
    assert [r["inputs"]["deletionProtection"] for r in _of(ali, "alicloud:ecs/eipAddress:EipAddress")] == [True]
    (group,) = [r["inputs"] for r in _of(ali, "alicloud:ess/scalingGroup:ScalingGroup")]
    assert group["groupDeletionProtection"] is True


def test_alicloud_subscription_instances_are_encrypted_token_mode_and_protected(monkeypatch):
    seen = {}
    from gpufleet import mockengine

    original = mockengine._Recorder.RegisterResource

    def register(self, request):
        if request.type == "alicloud:ecs/instance:Instance":
            seen[request.name] = request.protect
        return original(self, request)

    monkeypatch.setattr(mockengine._Recorder, "RegisterResource", register)
    raw = _raw("alicloud-cn-hangzhou-prod")
    raw["billing"] = {"model": "monthly", "period_months": 1}
    inv = preview_spec(raw, "alicloud-cn-hangzhou-prod")
    nodes = [r["inputs"] for r in _of(inv, "alicloud:ecs/instance:Instance")]
    assert len(nodes) == 2 and seen and all(seen.values())
    for n in nodes:
        assert n["httpTokens"] == "required" and n["systemDiskEncrypted"] is True
        assert all(d["encrypted"] is True for d in n["dataDisks"])


def test_tencent_prod_https_listener_rule_keeps_http_health_check_and_as_attachment(tc):
    (listener,) = [r["inputs"] for r in _of(tc, "tencentcloud:Clb/listener:Listener")]
    assert listener["protocol"] == "HTTPS" and listener["port"] == 443
    assert listener["certificateId"] == "ExAmPlE1" and listener["certificateSslMode"] == "UNIDIRECTIONAL"
    assert not any(k.startswith("healthCheck") for k in listener)  # the provider refuses them on an HTTPS listener
    (rule,) = [r["inputs"] for r in _of(tc, "tencentcloud:Clb/listenerRule:ListenerRule")]
    assert (rule["domain"], rule["url"], rule["healthCheckType"], rule["healthCheckHttpPath"]) == (
        "llm.example.com",
        "/",
        "HTTP",
        "/health",
    )
    (group,) = [r["inputs"] for r in _of(tc, "tencentcloud:As/scalingGroup:ScalingGroup")]
    (fwd,) = group["forwardBalancerIds"]
    assert "ruleId" in fwd and fwd["listenerId"]
    assert tc.outputs["endpoint"] == "https://llm.example.com"


def test_tencent_nodes_have_no_password_and_prod_is_protected(monkeypatch):
    from gpufleet import mockengine

    protected = {}
    original = mockengine._Recorder.RegisterResource

    def register(self, request):
        protected[(request.type, request.name)] = request.protect
        return original(self, request)

    monkeypatch.setattr(mockengine._Recorder, "RegisterResource", register)
    raw = _raw("tencentcloud-ap-guangzhou-prod")
    raw["billing"] = {"model": "monthly", "period_months": 1}
    inv = preview_spec(raw, "tencentcloud-ap-guangzhou-prod")
    (config,) = [r["inputs"] for r in _of(inv, "tencentcloud:As/scalingConfig:ScalingConfig")]
    assert config["keepImageLogin"] is True and "password" not in config and "keyIds" not in config
    for n in [r["inputs"] for r in _of(inv, "tencentcloud:Instance/instance:Instance")]:
        assert n["keepImageLogin"] is True and n["disableApiTermination"] is True
        assert all(d["encrypt"] is True for d in n["dataDisks"])
    for token in (
        "tencentcloud:As/scalingGroup:ScalingGroup",
        "tencentcloud:Nat/gateway:Gateway",
        "tencentcloud:Eip/instance:Instance",
    ):
        assert [v for (t, _), v in protected.items() if t == token] == [True], token
    (clb,) = [r["inputs"] for r in _of(inv, "tencentcloud:Clb/instance:Instance")]
    assert clb["deleteProtect"] is True


@pytest.mark.parametrize("stack", ["alicloud-cn-hangzhou-prod", "tencentcloud-ap-guangzhou-prod"])
def test_prod_without_tls_is_refused_naming_the_field(stack):
    raw = _raw(stack)
    raw["load_balancer"].pop("tls")
    with pytest.raises(UserError) as err:
        validation.validate(raw, stack=stack, file="x.yaml", sizing=False)
    (p,) = [p for p in err.value.problems if p.path == "fleet.load_balancer.tls"]
    assert "plain HTTP" in p.message


def test_tls_without_a_certificate_is_refused_naming_the_field():
    raw = _raw("alicloud-cn-hangzhou-prod")
    raw["load_balancer"]["tls"] = {"domain": "llm.example.com"}
    with pytest.raises(UserError) as err:
        validation.validate(raw, stack="s", file="x.yaml", sizing=False)
    assert any(p.path == "fleet.load_balancer.tls" and "certificate" in p.message for p in err.value.problems)


def test_dev_plain_http_is_allowed_with_a_note():
    fleet = validation.load_fleet("alicloud-cn-hangzhou-dev", sweep.ROOT, sizing=False)
    assert fleet.spec.load_balancer.tls is None
    assert any("plain HTTP" in n for n in hardening.notes(fleet.spec))


@pytest.mark.parametrize("stack", ["alicloud-cn-hangzhou-prod", "tencentcloud-ap-guangzhou-prod"])
def test_pem_pair_from_secret_config_is_uploaded_opaque_and_passes_the_contract(stack):
    raw = _raw(stack)
    raw["load_balancer"]["tls"] = {
        "domain": "llm.example.com",
        "certificate_config": "gpufleet:tlsCertificate",
        "private_key_config": "gpufleet:tlsKey",
    }
    config = {loader.CONFIG_KEY: raw, "gpufleet:tlsCertificate": "PEM", "gpufleet:tlsKey": "KEY"}
    from gpufleet.components.fleet import declare_program
    from gpufleet.preview import run

    fleet = validation.validate(raw, stack=stack, file="x", sizing=False)
    inv = run(lambda: declare_program(fleet), stack, config)
    token = {"alicloud": "alicloud:slb/serverCertificate:ServerCertificate"}.get(
        fleet.spec.cloud, "tencentcloud:Ssl/certificate:Certificate"
    )
    (cert,) = [r["inputs"] for r in inv.resources if r["type"] == token]
    assert "[secret]" in cert.values() and "PEM" not in cert.values() and "KEY" not in cert.values()
    assert contract.check_inventory(inv.resources, NOW, fleet.spec.cloud) == []
    assert any("opaque" in n for n in hardening.notes(fleet.spec))


def test_contract_refuses_https_without_certificate_and_a_bad_cipher_policy():
    bad = [
        {"type": "alicloud:slb/listener:Listener", "name": "l", "inputs": {"protocol": "https", "tlsCipherPolicy": "tls_1_3"}},
        {"type": "tencentcloud:Clb/listener:Listener", "name": "t", "inputs": {"protocol": "HTTPS"}},
    ]
    ali = contract.check_inventory(bad[:1], NOW, "alicloud")
    assert {v.rule.arg for v in ali} == {"protocol", "tls_cipher_policy"}
    (v,) = contract.check_inventory(bad[1:], NOW, "tencentcloud")
    assert v.spec_field == "fleet.load_balancer.tls.certificate_id"


def _openssl_cert(tmp_path, days: int) -> tuple[str, str]:
    """A self-signed certificate and key from the real openssl, valid `days` days from now."""
    import subprocess

    key, crt = tmp_path / f"k{days}.pem", tmp_path / f"c{days}.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(crt)]
        + ["-days", str(days), "-subj", "/CN=llm.example.com"],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return crt.read_text(), key.read_text()


def _pem_stack(tmp_path, days: int, key_plain: bool):
    import yaml

    from .test_preview_cli import _project

    project = _project(tmp_path)
    path = project / "stacks" / "Pulumi.alicloud-cn-hangzhou-prod.yaml"
    doc = yaml.safe_load(path.read_text())
    crt, key = _openssl_cert(tmp_path, days)
    doc["config"]["gpufleet:fleet"]["load_balancer"]["tls"] = {
        "domain": "llm.example.com",
        "certificate_config": "gpufleet:tlsCertificate",
        "private_key_config": "gpufleet:tlsKey",
    }
    doc["config"]["gpufleet:tlsCertificate"] = crt  # a certificate is public: plain config is readable offline
    doc["config"]["gpufleet:tlsKey"] = key if key_plain else {"secure": "v1:AAAAexampleciphertext"}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return project


@pytest.mark.parametrize("days, warned", [(10, True), (400, False)])
def test_preview_reads_a_plain_pem_certificate_and_warns_within_30_days(tmp_path, days, warned):
    from .test_preview_cli import _preview

    result = _preview(_pem_stack(tmp_path, days, key_plain=False), "alicloud-cn-hangzhou-prod")
    out = " ".join((result.stdout + result.stderr).split())
    assert result.returncode == 0, out
    assert "gpufleet:tlsCertificate expires" in out
    assert ("WARNING the certificate in gpufleet:tlsCertificate" in out) is warned


def test_preview_refuses_a_private_key_in_plain_text(tmp_path):
    """Refused where the stack file is read (the loader), so by every command, not only by preview."""
    from .test_preview_cli import _preview

    result = _preview(_pem_stack(tmp_path, 400, key_plain=True), "alicloud-cn-hangzhou-prod")
    out = result.stdout + result.stderr
    assert result.returncode == 2 and "Traceback" not in out, out
    assert "stacks/Pulumi.alicloud-cn-hangzhou-prod.yaml: config.gpufleet:tlsKey: holds the private key" in out
    assert "load_balancer.tls.private_key_config names it" in out and "pulumi config set --secret gpufleet:tlsKey" in out
    assert "BEGIN PRIVATE KEY" not in out


def test_secret_certificate_config_is_opaque():
    raw = _raw("alicloud-cn-hangzhou-prod")
    raw["load_balancer"]["tls"] = {"domain": "a.example.com", "certificate_config": "g:c", "private_key_config": "g:k"}
    fleet = validation.validate(raw, stack="s", file="x", sizing=False)
    (note,) = hardening.pem_notes(fleet.spec, {"g:c": {"secure": "v1:x"}, "g:k": {"secure": "v1:y"}}, NOW)
    assert "opaque" in note


def test_one_config_key_for_the_chain_and_the_key_is_refused():
    raw = _raw("alicloud-cn-hangzhou-prod")
    raw["load_balancer"]["tls"] = {"domain": "a.example.com", "certificate_config": "g:pem", "private_key_config": "g:pem"}
    with pytest.raises(UserError) as info:
        validation.validate(raw, stack="s", file="x", sizing=False)
    assert any(
        p.path == "fleet.load_balancer.tls" and "are both g:pem" in p.message and "name a config key for each" in p.message
        for p in info.value.problems
    ), info.value.problems


@pytest.mark.parametrize("stack", ["alicloud-cn-hangzhou-prod", "tencentcloud-ap-guangzhou-prod"])
def test_preview_warns_of_pem_config_keys_the_stack_file_does_not_hold(tmp_path, stack):
    """The keys are set later (`pulumi config set --secret`) or come from a Pulumi ESC environment: preview runs the
    program and warns (it was a ConfigMissingError traceback from the program, exit 1)."""
    import yaml

    from .test_preview_cli import _preview, _project

    project = _project(tmp_path)
    path = project / "stacks" / f"Pulumi.{stack}.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["config"]["gpufleet:fleet"]["load_balancer"]["tls"] = {
        "domain": "llm.example.com",
        "certificate_config": "gpufleet:tlsCertificate",
        "private_key_config": "gpufleet:tlsKey",
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    result = _preview(project, stack)
    out = " ".join((result.stdout + result.stderr).split())
    assert result.returncode == 0 and "Traceback" not in out, out
    assert "WARNING load_balancer.tls.certificate_config: gpufleet:tlsCertificate is not set in the stack file" in out
    assert "WARNING load_balancer.tls.private_key_config: gpufleet:tlsKey is not set in the stack file" in out


def test_a_misspelt_tls_config_key_is_pointed_at_the_key_the_fleet_names():
    """gpufleet:tlsKee was told 'did you mean gpufleet:fleet?': the suggestions left out the keys the fleet names."""
    raw = _raw("alicloud-cn-hangzhou-prod")
    raw["load_balancer"]["tls"] = {
        "domain": "llm.example.com",
        "certificate_config": "gpufleet:tlsCertificate",
        "private_key_config": "gpufleet:tlsKey",
    }
    config = {loader.CONFIG_KEY: raw, "gpufleet:tlsCertificate": "PEM", "gpufleet:tlsKee": "KEY"}
    (problem,) = loader.config_key_problems(config, "stacks/Pulumi.x.yaml")
    assert problem.path == "config.gpufleet:tlsKee"
    assert "did you mean 'gpufleet:tlsKey'?" in problem.message
    assert "gpufleet:tlsKey: the TLS PEM that load_balancer.tls.private_key_config names" in problem.message


@pytest.mark.parametrize(
    "value, said",
    [
        (5, "is a number"),
        ({"secure": 5}, "is a secure: mapping that is not one non-empty ciphertext"),
        ({"secure": ""}, "is a secure: mapping"),
        ({"secure": "v1:abc", "extra": 1}, "is a secure: mapping"),
    ],
)
def test_a_pem_config_value_that_is_neither_text_nor_a_secret_is_refused(value, said):
    """`gpufleet:tlsCertificate: 5` was noted as 'secret config: opaque offline' and previewed."""
    raw = _raw("alicloud-cn-hangzhou-prod")
    raw["load_balancer"]["tls"] = {
        "domain": "llm.example.com",
        "certificate_config": "gpufleet:tlsCertificate",
        "private_key_config": "gpufleet:tlsKey",
    }
    fleet = validation.validate(raw, stack="alicloud-cn-hangzhou-prod", file="x", sizing=False)
    config = {"gpufleet:tlsCertificate": value, "gpufleet:tlsKey": {"secure": "v1:AAAAexampleciphertext"}}
    ((field, message),) = hardening.config_problems(fleet.spec, config, "stacks/Pulumi.x.yaml")
    assert field == "fleet.load_balancer.tls.certificate_config"
    assert said in message and "pulumi config set --secret gpufleet:tlsCertificate" in message
    good = {**config, "gpufleet:tlsCertificate": {"secure": "v1:AAAAexampleciphertext"}}
    assert hardening.config_problems(fleet.spec, good, "stacks/Pulumi.x.yaml") == []
