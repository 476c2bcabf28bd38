"""Issue 27, bad input: what the clouds accept (IP family, lengths and characters, the clouds' quotas on lists),
unknown `gpufleet:` config keys, alias bombs, oversized stack files and YAML errors, each through the CLI on both clouds.

Each case is exit 2 with one line naming the file, the field and the fix, no traceback and nothing written; at a
cap the stack is accepted (the quota is not one too low)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from gpufleet import registry
from gpufleet.stacks import loader

from .inputs_helpers import run_cli, snapshot

STACKS = ["alicloud-cn-hangzhou-dev", "tencentcloud-ap-guangzhou-dev"]


def stack_file(project: Path, stack: str) -> Path:
    return project / "stacks" / f"Pulumi.{stack}.yaml"


def edit(project: Path, stack: str, change) -> None:
    """Apply change(config) to the stack file's `config:` (the fleet is config['gpufleet:fleet'])."""
    path = stack_file(project, stack)
    doc = yaml.safe_load(path.read_text())
    change(doc["config"])
    path.write_text(yaml.safe_dump(doc, sort_keys=False, width=1 << 30))


def fleet_change(change):
    return lambda config: change(config["gpufleet:fleet"])


def one_line_refusal(project: Path, argv: list[str], capsys, shown: str, *words: str) -> str:
    """Exit 2, every `error` line names the file, the words are in the output, nothing on disk changed."""
    before = snapshot(project)
    r = run_cli(argv, capsys)
    assert r.code == 2, r.text
    assert "Traceback" not in r.text
    errors = [line for line in r.err.splitlines() if line.startswith("error ")]
    assert errors and all(line.startswith(f"error {shown}") for line in errors), r.err
    for word in words:
        assert word in r.err, r.err
    assert snapshot(project) == before
    return r.err


def commands(stack: str) -> list[list[str]]:
    return [["preview", "--stack", stack], ["cost", "estimate", "--stack", stack]]


# --- IP family ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize(
    "field, change, value",
    [
        ("fleet.network.vpc_cidr", lambda f: f["network"].update(vpc_cidr="fd00::/16"), "fd00::/16 is IPv6"),
        ("fleet.network.ssh_cidrs", lambda f: f["network"].update(ssh_cidrs=["2001:db8::/48"]), "2001:db8::/48 is IPv6"),
        (
            "fleet.load_balancer.allowed_cidrs",
            lambda f: f.setdefault("load_balancer", {}).update(allowed_cidrs=["2001:db8:1::/48"]),
            "2001:db8:1::/48 is IPv6",
        ),
    ],
)
def test_ipv6_is_refused_where_the_clouds_take_ipv4(project, capsys, stack, field, change, value):
    edit(project, stack, fleet_change(change))
    for argv in commands(stack):
        err = one_line_refusal(project, argv, capsys, f"stacks/Pulumi.{stack}.yaml: {field}", value, "IPv4")
        assert len(err.strip().splitlines()) == 1, err


# --- lengths and characters ----------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize(
    "value", ["", "on\ncall", "on\tcall", " oncall", "x" * 1_000_000, "a\x00b", "oncall\u202egpu", "on\u200bcall"]
)
def test_contact_group_refused(project, capsys, stack, value):
    edit(project, stack, fleet_change(lambda f: f.setdefault("alarms", {}).update(contact_group=value)))
    one_line_refusal(
        project,
        ["preview", "--stack", stack],
        capsys,
        f"stacks/Pulumi.{stack}.yaml: fleet.alarms.contact_group",
        "1 to 128 characters",
    )


@pytest.mark.parametrize("value", ["值班组", "x" * 128, "notice-abcd1234", "ops on-call (GPU)"])
def test_contact_group_accepted(project, capsys, value):
    stack = STACKS[0]
    edit(project, stack, fleet_change(lambda f: f.setdefault("alarms", {}).update(contact_group=value)))
    r = run_cli(["preview", "--stack", stack, "--format", "json"], capsys)
    assert r.code == 0, r.text


# --- lists at and over the clouds' caps ---------------------------------------------------------------------


def _schedules(n: int) -> list[dict]:
    return [{"name": f"s{i:05d}", "cron": "0 1 * * *", "min": 1, "max": 1} for i in range(n)]


def _cidrs(n: int) -> list[str]:
    return [f"10.{i // 256}.{i % 256}.0/24" for i in range(n)]


def _tags(n: int) -> dict[str, str]:
    return {f"k{i}": "v" for i in range(n)}


SETTERS = {
    "autoscaling.schedules": lambda f, n: f.setdefault("autoscaling", {}).update(schedules=_schedules(n)),
    "tags": lambda f, n: f.update(tags=_tags(n)),
    "network.ssh_cidrs": lambda f, n: f["network"].update(ssh_cidrs=_cidrs(n)),
    "load_balancer.allowed_cidrs": lambda f, n: f.setdefault("load_balancer", {}).update(allowed_cidrs=_cidrs(n)),
}
CASES = [(stack, path) for stack in STACKS for path in registry.list_caps(stack.split("-")[0])]


def test_every_capped_list_is_generated():
    assert {path for _, path in CASES} == set(SETTERS)


@pytest.mark.parametrize("stack, path", CASES)
def test_list_over_the_cap_names_the_quota(project, capsys, stack, path):
    cap = registry.list_caps(stack.split("-")[0])[path]
    edit(project, stack, fleet_change(lambda f: SETTERS[path](f, cap.most + 1)))
    err = one_line_refusal(
        project,
        ["preview", "--stack", stack],
        capsys,
        f"stacks/Pulumi.{stack}.yaml: fleet.{path}",
        f"{cap.most + 1} given",
        cap.quota,
        f"keep at most {cap.most}",
    )
    assert len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("stack, path", CASES)
def test_list_at_the_cap_is_not_refused_for_its_length(project, stack, path):
    cap = registry.list_caps(stack.split("-")[0])[path]
    raw = yaml.safe_load(stack_file(project, stack).read_text())["config"]["gpufleet:fleet"]
    SETTERS[path](raw, cap.most)
    assert loader.cap_problems(raw) == []


def test_ten_thousand_schedules_fail_fast(project, capsys):
    """Issue 27: 10,000 schedules took 34 s and 1 GB before; the quota check runs on the raw list, before the model."""
    stack = STACKS[0]
    edit(project, stack, fleet_change(lambda f: SETTERS["autoscaling.schedules"](f, 10_000)))
    start = time.perf_counter()
    err = one_line_refusal(
        project, ["preview", "--stack", stack], capsys, f"stacks/Pulumi.{stack}.yaml: fleet.autoscaling.schedules", "10000 given"
    )
    assert time.perf_counter() - start < 10, err  # parsing the 0.7 MB file is most of it


def test_zones_over_the_region_are_refused_at_once(project, capsys):
    stack = STACKS[1]
    edit(project, stack, fleet_change(lambda f: f.update(zones=["ap-guangzhou-3"] * 5000)))
    one_line_refusal(
        project, ["preview", "--stack", stack], capsys, f"stacks/Pulumi.{stack}.yaml", "5000 given; ap-guangzhou has"
    )


def test_unknown_cloud_is_held_to_the_widest_cap():
    widest = max(registry.list_caps(c)["autoscaling.schedules"].most for c in ("alicloud", "tencentcloud"))
    raw = {"cloud": "alicloud-typo", "autoscaling": {"schedules": [{}] * (widest + 1)}}
    assert [p for p, _ in loader.cap_problems(raw)] == ["fleet.autoscaling.schedules"]
    raw["autoscaling"]["schedules"] = [{}] * widest
    assert loader.cap_problems(raw) == []


# --- unknown keys ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize(
    "key, suggestion",
    [("gpufleet:usgae", "did you mean 'gpufleet:usage'?"), ("gpufleet:flet", "did you mean 'gpufleet:fleet'?")],
)
def test_unknown_gpufleet_config_key(project, capsys, stack, key, suggestion):
    edit(project, stack, lambda config: config.update({key: "cost/usage/x.yaml"}))
    for argv in commands(stack):
        one_line_refusal(
            project, argv, capsys, f"stacks/Pulumi.{stack}.yaml: config.{key}", "unknown gpufleet config key", suggestion
        )


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize(
    "key, shown, suggestion",
    [
        ("foo", "foo", ""),
        (True, "true", ""),  # `true: 1`: the key "true" to Pulumi
        (None, "null", ""),
        ("CLOUD:region:extra", "CLOUD:region:extra", "region"),  # CLOUD: the stack's cloud
        ("ns:module:x", "ns:module:x", ""),  # two ':' are <namespace>:config:<name> only
    ],
)
def test_a_config_key_pulumi_cannot_parse_is_refused(project, capsys, stack, key, shown, suggestion):
    """Review F5: Pulumi's ParseKey (sdk/go/common/resource/config/key.go) refuses a config key that is not
    <namespace>:<name> (or <namespace>:config:<name>), so `pulumi preview` failed on a file gpufleet passed."""
    cloud = stack.split("-")[0]
    key, shown = (k.replace("CLOUD", cloud) if isinstance(k, str) else k for k in (key, shown))
    edit(project, stack, lambda config: config.update({key: 1}))
    fix = f"not a Pulumi config key (Pulumi refuses the stack file): write <namespace>:<name>, e.g. {cloud}:region"
    for argv in [*commands(stack), ["check"]]:
        err = one_line_refusal(project, argv, capsys, f"stacks/Pulumi.{stack}.yaml: config.{shown}: {fix}")
        assert err.count("not a Pulumi config key") == 1, err
        if suggestion:  # the nearest key the file has
            assert f"(did you mean '{cloud}:{suggestion}'?)" in err, err


def test_the_config_keys_pulumi_parses_pass():
    assert [k for k in ("alicloud:region", ":x", "ns:", "ns:config:x", "gpufleet:fleet") if not loader.pulumi_config_key(k)] == []


def test_other_namespaces_and_the_tls_secret_keys_are_accepted(project, capsys):
    stack = STACKS[0]

    def change(config):
        config["alicloud:profile"] = "default"  # the provider's own key
        config["gpufleet:tlsCert"] = {"secure": "v1:AAAA"}  # named by the fleet below: a secret the program reads
        config["gpufleet:tlsKey"] = {"secure": "v1:BBBB"}
        config["gpufleet:fleet"]["load_balancer"] = {
            "tls": {
                "domain": "llm.example.com",
                "certificate_config": "gpufleet:tlsCert",
                "private_key_config": "gpufleet:tlsKey",
            }
        }

    edit(project, stack, change)
    assert loader.config_key_problems(yaml.safe_load(stack_file(project, stack).read_text())["config"], "f") == []


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize(
    "where, change, suggestion",
    [
        ("fleet.netwrk", lambda f: f.update(netwrk=f.pop("network")), "did you mean 'network'?"),
        ("fleet.network.ssh_cidr", lambda f: f["network"].update(ssh_cidr=f["network"].pop("ssh_cidrs")), "'ssh_cidrs'"),
        (
            "fleet.autoscaling.schedules.0.crn",
            lambda f: f.update(autoscaling={"schedules": [{"name": "ab", "crn": "x"}]}),
            "'cron'",
        ),
        ("fleet.alarms.contact_grup", lambda f: f.update(alarms={"contact_grup": "x"}), "'contact_group'"),
    ],
)
def test_unknown_keys_at_every_level(project, capsys, stack, where, change, suggestion):
    edit(project, stack, fleet_change(change))
    one_line_refusal(project, ["preview", "--stack", stack], capsys, f"stacks/Pulumi.{stack}.yaml", where, suggestion)


@pytest.mark.parametrize(
    "key, where, said",
    [(None, "fleet.null", "the key nothing (null) is not text"), (True, "fleet.true", "the key true is not text")],
)
def test_a_key_that_is_not_text_is_named_as_yaml_wrote_it(project, capsys, key, where, said):
    """Review F13: `null: x` in the spec was named fleet.None (Python's word; pydantic names true 1)."""
    stack = STACKS[0]
    edit(project, stack, fleet_change(lambda f: f.update({key: "x"})))
    one_line_refusal(project, ["preview", "--stack", stack], capsys, f"stacks/Pulumi.{stack}.yaml: {where}: {said}")


def test_a_secret_where_text_goes_is_named_as_a_secret_not_a_python_dict(project, capsys):
    """Review F13: `is {'secure': 'v1:...'} but fleet.region is ...` and `expected a file path, got {'secure': ...}`."""
    stack = STACKS[0]
    cloud = stack.split("-")[0]
    edit(project, stack, lambda config: config.update({f"{cloud}:region": {"secure": "v1:QUJD"}}))
    err = one_line_refusal(
        project, ["preview", "--stack", stack], capsys, f"stacks/Pulumi.{stack}.yaml: config.{cloud}:region: is a secret"
    )
    edit(project, stack, lambda config: config.update({f"{cloud}:region": config["gpufleet:fleet"]["region"]}))
    edit(project, stack, lambda config: config.update({"gpufleet:usage": {"secure": "v1:QUJD"}}))
    err += one_line_refusal(
        project,
        ["cost", "estimate", "--stack", stack],
        capsys,
        f"stacks/Pulumi.{stack}.yaml: config.gpufleet:usage: expected a file path, got a secret (secure: ...)",
    )
    assert "{" not in err and "v1:QUJD" not in err, err


@pytest.mark.parametrize(
    "where, change, said",
    [
        # review F10: pydantic's and ipaddress's own words, with no fix
        (
            "fleet.network.ssh_cidrs",
            lambda f: f["network"].update(ssh_cidrs="198.51.100.0/24"),
            "Input should be a list (its items under the key, one `- item` a line, or [a, b]), got text",
        ),
        ("fleet.zones", lambda f: f.update(zones={"a": 1}), "Input should be a list (its items under the key"),
        ("fleet.zones", lambda f: f.update(zones=[]), "is empty: give at least 1 item"),
        (
            "fleet.network.vpc_cidr",
            lambda f: f["network"].update(vpc_cidr="10.10.0.0/33"),
            "'10.10.0.0/33' does not appear to be an IPv4 or IPv6 network: write a network as address/prefix",
        ),
        (
            "fleet.network.vpc_cidr",
            lambda f: f["network"].update(vpc_cidr="10.20.0.1/16"),
            "10.20.0.1/16 has host bits set: write the network's first address (10.20.0.0/16)",
        ),
    ],
    ids=["list-as-text", "list-as-mapping", "empty-list", "prefix-33", "host-bits"],
)
def test_a_library_message_comes_with_its_fix(project, capsys, where, change, said):
    stack = STACKS[0]
    edit(project, stack, fleet_change(change))
    one_line_refusal(project, ["preview", "--stack", stack], capsys, f"stacks/Pulumi.{stack}.yaml: {where}: {said}")


# --- the file itself ------------------------------------------------------------------------------------------------


def test_alias_bomb_under_an_unknown_key_ends_quickly(project, capsys):
    stack = STACKS[0]
    path = stack_file(project, stack)
    bomb = "  gpufleet:x: &a [x,x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"  gpufleet:{chr(98 + i)}: &{chr(98 + i)} [{','.join([f'*{chr(97 + i)}'] * 10)}]\n" for i in range(9)
    )
    path.write_text(path.read_text() + bomb)
    start = time.perf_counter()
    one_line_refusal(
        project, ["preview", "--stack", stack], capsys, f"stacks/Pulumi.{stack}.yaml:", "aliases expand to more than"
    )
    assert time.perf_counter() - start < 5


def test_oversized_stack_file_refused_before_parsing(project, capsys):
    stack = STACKS[1]
    path = stack_file(project, stack)
    path.write_text(path.read_text() + "# " + "x" * loader.MAX_STACK_BYTES + "\n")
    one_line_refusal(project, ["preview", "--stack", stack], capsys, f"stacks/Pulumi.{stack}.yaml", "larger than 1 MiB")


@pytest.mark.parametrize("stack", STACKS)
def test_control_character_is_one_line_with_line_and_column(project, capsys, stack):
    path = stack_file(project, stack)
    lines = path.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("name: llm"))
    lines[at] = lines[at].replace("name: llm", 'name: "l\x01lm"')
    path.write_text("".join(lines))
    column = lines[at].index("\x01") + 1
    err = one_line_refusal(
        project,
        ["preview", "--stack", stack],
        capsys,
        f"stacks/Pulumi.{stack}.yaml:{at + 1}:{column}: not valid YAML: control characters are not allowed (U+0001 here)",
    )
    assert len(err.strip().splitlines()) == 1 and "position" not in err, err


def test_region_new_skips_a_stack_with_an_unknown_key_and_names_it(project, capsys):
    """`region new` reads every stack's VPC: a broken one is skipped and named (docs/inputs.md), the new file is written."""
    edit(project, STACKS[0], lambda config: config.update({"gpufleet:usgae": "x"}))
    r = run_cli(["region", "new", "--cloud", "alicloud", "--region", "cn-beijing", "--env", "dev"], capsys)
    assert r.code == 0, r.text
    assert "config.gpufleet:usgae" in r.out and "did you mean 'gpufleet:usage'" in r.out, r.out
    assert (project / "stacks" / "Pulumi.alicloud-cn-beijing-dev.yaml").is_file()


def test_unknown_stack_file_attribute(project, capsys):
    stack = STACKS[0]
    path = stack_file(project, stack)
    path.write_text(path.read_text().replace("config:", "confg:", 1))
    one_line_refusal(
        project,
        ["preview", "--stack", stack],
        capsys,
        f"stacks/Pulumi.{stack}.yaml: confg",
        "not an attribute of a Pulumi stack file (did you mean 'config'?)",
    )


@pytest.mark.parametrize("stack", STACKS)
def test_keys_with_control_characters_are_shown_escaped_on_one_line(project, capsys, stack):
    def change(config):
        config["gpufleet:us\nage"] = "x"
        config["gpufleet:fleet"]["network"]["team\x1b[31m"] = "v"

    edit(project, stack, change)
    err = one_line_refusal(
        project, ["preview", "--stack", stack], capsys, f"stacks/Pulumi.{stack}.yaml", "config.gpufleet:us\\nage"
    )
    assert len(err.strip().splitlines()) == 1 and "\x1b" not in err, err
    edit(project, stack, lambda config: config.pop("gpufleet:us\nage"))
    err = one_line_refusal(
        project,
        ["preview", "--stack", stack],
        capsys,
        f"stacks/Pulumi.{stack}.yaml",
        "fleet.network.team\\x1b[31m: unknown field",
    )
    assert "\x1b" not in err, err


def test_extra_args_cap_follows_the_vllm_snapshots(project, capsys):
    """serving.extra_args holds at most as many flags as the largest vLLM snapshot has engine arguments; 30,000
    unknown flags took 80 s and printed 30,000 lines, now one line at once."""
    from gpufleet.stacks import spec

    folder = Path(spec.__file__).resolve().parents[1] / "sizing" / "data" / "vllm_args"
    counts = {p.name: len(json.loads(p.read_text())["args"]) for p in folder.glob("*.json")}
    assert max(counts.values()) == spec.EXTRA_ARGS_MAX, counts
    stack = STACKS[1]
    edit(project, stack, fleet_change(lambda f: f["serving"].update(extra_args={f"flag-x{i}": "1" for i in range(30_000)})))
    start = time.perf_counter()
    err = one_line_refusal(
        project, ["preview", "--stack", stack], capsys, f"stacks/Pulumi.{stack}.yaml: fleet.serving.extra_args", "30000 flags"
    )
    assert len(err.strip().splitlines()) == 1 and time.perf_counter() - start < 10, err


def test_a_huge_value_is_cut_in_its_message(project, capsys):
    stack = STACKS[0]
    edit(project, stack, fleet_change(lambda f: f["model"].update(name="x" * 200_000)))
    err = one_line_refusal(project, ["preview", "--stack", stack], capsys, f"stacks/Pulumi.{stack}.yaml: fleet.model.name")
    assert len(err) < 3000 and "more characters)" in err, len(err)


def test_a_file_that_is_not_a_stack_file_is_said_once_and_none_of_its_lines_is_shown(project, capsys, tmp_path):
    """Review F6: /etc/shadow linked as a stack file printed one 'not an attribute' line per entry, the entry (password
    hash and all) as the key. A file none of whose keys is a stack file's attribute, or near one, is said once."""
    secret = tmp_path / "shadow"
    secret.write_text("".join(f"user{i}:$6$salt$hash{i}:20228:0:99999:7:::\n" for i in range(30)) + "token: hunter2\n")
    (project / "stacks" / "Pulumi.shadow-dev.yaml").symlink_to(secret)
    err = one_line_refusal(
        project,
        ["preview", "--stack", "shadow-dev"],
        capsys,
        "stacks/Pulumi.shadow-dev.yaml: is not a Pulumi stack file: none of its 31 top-level keys is an attribute of one",
    )
    assert len(err.strip().splitlines()) == 1 and "$6$" not in err and "hunter2" not in err, err


def test_unknown_top_level_keys_are_named_three_at_most_and_only_when_shaped_like_a_key(project, capsys):
    stack = STACKS[0]
    path = stack_file(project, stack)
    extra = {"foo": 1, "bar": 2, "root:$6$x:1:": 3, "secretsprovder": 4, "baz": 5, "qux": 6}
    path.write_text(path.read_text() + yaml.safe_dump(extra))
    err = one_line_refusal(project, ["preview", "--stack", stack], capsys, f"stacks/Pulumi.{stack}.yaml")
    lines = err.strip().splitlines()
    assert len(lines) == 4, err
    assert lines[0].endswith("secretsprovder: not an attribute of a Pulumi stack file (did you mean 'secretsprovider'?)")
    assert lines[-1].endswith(
        "and 3 more top-level keys not attributes of a Pulumi stack file "
        "(secretsprovider, encryptedkey, encryptionsalt, config, environment): remove them"
    ), err
    assert "$6$" not in err, err
