"""Credentials held as plain text in a stack file (it is committed, and a rollout rewrites and keeps it) are bad
input on every command that reads it: a provider's credential keys not held as `secure:`, a PEM private key in any
plain value (a chain with its key appended, given as certificate_config), and a credential given to vLLM in
serving.extra_args (--hf-token). Exit 2, one line naming the file, the key and the fix; the value is never printed."""

from __future__ import annotations

import pytest

from gpufleet import registry

from .inputs_helpers import run_cli
from .test_limits import STACKS, edit, fleet_change, one_line_refusal

SECRET = "SEKRET123"
CERT = "-----BEGIN CERTIFICATE-----\nMIIBexample\n-----END CERTIFICATE-----\n"
KEY = f"-----BEGIN PRIVATE KEY-----\n{SECRET}\n-----END PRIVATE KEY-----\n"
CIPHERTEXT = {"secure": "v1:AAAAexampleciphertext"}


def commands(stack: str) -> list[list[str]]:
    return [["preview", "--stack", stack], ["cost", "estimate", "--stack", stack], ["plan", "fit", "--stack", stack]]


def refused(project, capsys, stack: str, field: str, *words: str) -> None:
    for argv in commands(stack):
        err = one_line_refusal(project, argv, capsys, f"stacks/Pulumi.{stack}.yaml: {field}", *words)
        assert SECRET not in err and "PRIVATE KEY-----" not in err, err


def accepted(project, capsys, stack: str) -> None:
    r = run_cli(["preview", "--stack", stack, "--json"], capsys)
    assert r.code == 0, r.text
    assert SECRET not in r.out


def cloud_of(stack: str) -> str:
    return stack.split("-")[0]


def credential_keys(stack: str) -> list[tuple[str, str]]:
    """(config key, field or "") of each credential the stack's provider reads."""
    return [
        (f"{cloud_of(stack)}:{name.partition('.')[0]}", name.partition(".")[2])
        for name in registry.profile(cloud_of(stack)).provider_credentials
    ]


def put(config: dict, key: str, field: str, value) -> None:
    if field:
        config[key] = {"roleArn": "acs:ram::1:role/deploy", field: value}
    else:
        config[key] = value


@pytest.mark.parametrize("stack", STACKS)
def test_a_provider_credential_held_as_plain_text_is_refused_naming_the_key_and_the_fix(project, capsys, stack):
    """alicloud:accessKey / secretKey / securityToken, tencentcloud:secretId / secretKey / securityToken and the
    providers' nested tokens passed without a word (finding 7)."""
    for key, field in credential_keys(stack):
        edit(project, stack, lambda config, key=key, field=field: put(config, key, field, f"{SECRET}x"))
        shown = f"config.{key}.{field}" if field else f"config.{key}"
        fix = f"pulumi config set --secret --path {key}.{field}" if field else f"pulumi config set --secret {key}"
        refused(project, capsys, stack, shown, "holds a credential as plain text", fix, "where pulumi runs")
        edit(project, stack, lambda config, key=key: config.pop(key))


@pytest.mark.parametrize("stack", STACKS)
def test_a_provider_credential_held_as_a_secret_is_accepted(project, capsys, stack):
    def change(config):
        for key, field in credential_keys(stack):
            put(config, key, field, dict(CIPHERTEXT))
        config[f"{cloud_of(stack)}:profile"] = "default"  # the provider's other keys stay theirs

    edit(project, stack, change)
    accepted(project, capsys, stack)


def test_every_plain_provider_credential_is_named_at_once(project, capsys):
    stack = STACKS[0]
    edit(project, stack, lambda config: config.update({"alicloud:accessKey": "LTAI5" + SECRET, "alicloud:secretKey": SECRET}))
    err = one_line_refusal(project, ["preview", "--stack", stack], capsys, f"stacks/Pulumi.{stack}.yaml: config.alicloud:")
    assert "config.alicloud:accessKey:" in err and "config.alicloud:secretKey:" in err and SECRET not in err


def test_a_provider_credential_in_an_object_setting_given_as_json_text_is_refused(project, capsys):
    stack = STACKS[1]
    edit(
        project,
        stack,
        lambda config: config.update(
            {
                "tencentcloud:assumeRoleWithWebIdentity": '{"roleArn": "qcs::cam::uin/1:roleName/d", "webIdentityToken": "SEKRET123"}'
            }
        ),
    )
    refused(project, capsys, stack, "config.tencentcloud:assumeRoleWithWebIdentity.webIdentityToken", "as plain text")


def tls(certificate, private_key=CIPHERTEXT):
    def change(config):
        fleet_change(
            lambda f: f.setdefault("load_balancer", {}).update(
                tls={
                    "domain": "llm.example.com",
                    "certificate_config": "gpufleet:tlsCertificate",
                    "private_key_config": "gpufleet:tlsKey",
                }
            )
        )(config)
        config["gpufleet:tlsCertificate"] = certificate
        config["gpufleet:tlsKey"] = private_key

    return change


@pytest.mark.parametrize("stack", STACKS)
def test_a_chain_with_its_private_key_appended_as_plain_certificate_config_is_refused(project, capsys, stack):
    """`cat fullchain.pem privkey.pem` given as plain certificate_config: preview read the certificate and the key sat
    in the committed file (finding 7). The fix keeps the chain plain and the key secret."""
    edit(project, stack, tls(CERT + KEY))
    refused(
        project,
        capsys,
        stack,
        "config.gpufleet:tlsCertificate",
        "holds a PEM private key as plain text",
        'keep only the certificate chain here (`pulumi config set gpufleet:tlsCertificate -- "$(cat fullchain.pem)"`)',
        'pulumi config set --secret gpufleet:tlsKey -- "$(cat privkey.pem)"',
    )


@pytest.mark.parametrize("stack", STACKS)
def test_the_private_key_config_held_as_plain_text_is_refused_by_every_command(project, capsys, stack):
    """It was refused by preview only: cost, plan and the rollout commands read and kept it."""
    edit(project, stack, tls(CERT, KEY))
    refused(
        project, capsys, stack, "config.gpufleet:tlsKey", "holds the private key", "pulumi config set --secret gpufleet:tlsKey"
    )


@pytest.mark.parametrize(
    "value, field",
    [
        (KEY.replace("PRIVATE KEY", "RSA PRIVATE KEY"), "config.other:deployKey"),
        ({"nested": [f"x {KEY}"]}, "config.other:deployKey.nested.0"),
    ],
)
def test_a_pem_private_key_in_any_plain_value_is_refused(project, capsys, value, field):
    stack = STACKS[0]
    edit(project, stack, lambda config: config.update({"other:deployKey": value}))
    refused(project, capsys, stack, field, "holds a PEM private key", "pulumi config set --secret other:deployKey")


def test_a_plain_certificate_and_a_secret_key_are_accepted(project, capsys):
    stack = STACKS[0]
    edit(project, stack, tls(CERT))
    r = run_cli(["cost", "estimate", "--stack", stack], capsys)
    assert r.code == 0, r.text


@pytest.mark.parametrize("stack", STACKS)
def test_a_hub_token_in_extra_args_is_refused_by_every_command(project, capsys, stack):
    """serving.extra_args: {hf-token: ...} was accepted and rendered into the node's user-data (finding 1)."""
    edit(project, stack, fleet_change(lambda f: f["serving"].update(extra_args={"hf-token": SECRET})))
    refused(project, capsys, stack, "fleet.serving.extra_args", "hf-token cannot be set here", "model.source", "instance role")


def test_a_credential_the_provider_reads_nowhere_else_is_told_to_be_encrypted(monkeypatch):
    from msgspec.structs import replace

    from gpufleet.stacks import loader

    module = registry.module("alicloud", "profile")
    monkeypatch.setattr(module, "PROFILE", replace(module.PROFILE, provider_credentials={"apiToken": ""}))
    (problem,) = loader.plaintext_secret_problems({"alicloud:apiToken": SECRET}, "stacks/Pulumi.x.yaml")
    assert problem.path == "config.alicloud:apiToken" and SECRET not in problem.message
    assert problem.message.endswith("remove it and encrypt it: `pulumi config set --secret alicloud:apiToken`")
