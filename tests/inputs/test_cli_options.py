"""The options every command shares (gpufleet/cli/options.py): --stack NAME|PATH, --format with --json, -o, --version."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gpufleet.cli import options
from gpufleet.errors import UserError

from .inputs_helpers import ROOT, run_cli

DEV = "alicloud-cn-hangzhou-dev"


def test_version_names_the_sdk_and_providers(capsys):
    from importlib import metadata

    r = run_cli(["--version"], capsys)
    assert r.code == 0
    assert r.out.splitlines()[0] == f"gpufleet {metadata.version('gpufleet')}"
    assert f"pulumi-alicloud {metadata.version('pulumi-alicloud')}" in r.out
    assert f"tencentcloud-iac-pulumi {metadata.version('tencentcloud-iac-pulumi')}" in r.out
    # gpufleet once, then the SDK and the two registered clouds' providers (docs/cli.md), each on its own line
    assert r.out.splitlines() == [
        f"gpufleet {metadata.version('gpufleet')}",
        f"  pulumi {metadata.version('pulumi')}",
        f"  pulumi-alicloud {metadata.version('pulumi-alicloud')}",
        f"  tencentcloud-iac-pulumi {metadata.version('tencentcloud-iac-pulumi')}",
    ]


@pytest.mark.parametrize(
    ("fmt", "as_json", "out", "expected"),
    [("table", False, None, "table"), (None, True, None, "json"), ("json", True, None, "json"), ("json", False, None, "json")],
)
def test_json_is_an_alias_of_format_json(fmt, as_json, out, expected):
    assert options.chosen_format(fmt, as_json, ("table", "json", "xlsx"), out) == expected


def test_json_with_format_table_given_is_refused_not_silently_json():
    with pytest.raises(UserError) as e:
        options.chosen_format("table", True, ("table", "json"))
    assert [(p.file, p.message) for p in e.value.problems] == [
        ("--json", "is --format json; it cannot be combined with --format table")
    ]


def test_format_faults_are_named_together(tmp_path):
    with pytest.raises(UserError) as e:
        options.chosen_format("csv", True, ("table", "json", "csv"))
    assert [p.file for p in e.value.problems] == ["--json"]
    with pytest.raises(UserError) as e:
        options.chosen_format("yaml", False, ("table", "json"))
    assert e.value.problems[0].message == "unknown format 'yaml' (choose one of: json, table)"  # the choices once
    with pytest.raises(UserError) as e:
        options.chosen_format("xlsx", False, ("table", "xlsx"), Path("-"))
    assert "-o FILE.xlsx" in e.value.problems[0].message
    assert options.chosen_format("xlsx", False, ("table", "xlsx"), tmp_path / "a.xlsx") == "xlsx"


def test_stack_by_path_inside_and_outside_the_project(capsys, tmp_path, monkeypatch):
    by_name = run_cli(["preview", "--stack", DEV, "--json"], capsys)
    inside = run_cli(["preview", "--stack", f"stacks/Pulumi.{DEV}.yaml", "--format", "json"], capsys)
    assert by_name.code == inside.code == 0
    assert json.loads(inside.out) == json.loads(by_name.out)
    copy = tmp_path / "Pulumi.copied-dev.yaml"
    shutil.copy(ROOT / "stacks" / f"Pulumi.{DEV}.yaml", copy)
    outside = run_cli(["preview", "--stack", str(copy), "--json"], capsys)
    assert outside.code == 0, outside.text
    assert json.loads(outside.out)["stack"] == "copied-dev"
    # a stack file named without a folder (from inside stacks/) is a path too: Pulumi.<name>.yaml, not a stack name
    monkeypatch.chdir(ROOT / "stacks")
    bare = run_cli(["preview", "--stack", f"Pulumi.{DEV}.yaml", "--json"], capsys)
    assert bare.code == 0, bare.text
    assert json.loads(bare.out) == json.loads(by_name.out)


def test_a_link_elsewhere_to_a_stack_file_of_the_project_is_read_under_its_own_name(capsys, tmp_path):
    """The link was resolved before its folder was compared: taken for stacks/Pulumi.linked-dev.yaml, which is not
    there ("no such stack file")."""
    link = tmp_path / "Pulumi.linked-dev.yaml"
    link.symlink_to(ROOT / "stacks" / f"Pulumi.{DEV}.yaml")
    r = run_cli(["preview", "--stack", str(link), "--json"], capsys)
    assert r.code == 0, r.text
    assert json.loads(r.out)["stack"] == "linked-dev"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("Pulumi.gone.yaml", "no such file"),
        ("notastack.yaml", "named Pulumi.<name>.yaml"),
        ("a" * 300 + "/Pulumi.x.yaml", "no such file"),  # a folder name too long to exist: was an OSError traceback
        ("Pulumi.folder.yaml", "is a folder, not a file"),  # was "no such file"
    ],
)
def test_stack_path_faults(capsys, tmp_path, name, message):
    (tmp_path / "Pulumi.folder.yaml").mkdir()
    r = run_cli(["preview", "--stack", str(tmp_path / name)], capsys)
    assert r.code == 2
    assert "--stack" in r.err and message in r.err
    assert "Traceback" not in r.text


def _bad_link(folder: Path, name: str, kind: str) -> Path:
    """folder/name as a symbolic link that leads to no file, or as one of two links that lead to each other."""
    link = folder / name
    if kind == "dangling":
        link.symlink_to("nowhere.yaml")
    else:
        (folder / f"other-{name}").symlink_to(link)
        link.symlink_to(folder / f"other-{name}")
    return link


LINK_SAYS = {
    "dangling": "is a symbolic link that leads to no file (to nowhere.yaml): fix the link",
    "loop": "is a symbolic link that is a loop of links",
}


@pytest.mark.parametrize("kind", ["dangling", "loop"])
@pytest.mark.parametrize("command", [["preview"], ["cost", "estimate"], ["check"]])
def test_a_stack_file_that_is_a_broken_link_is_named_as_one(capsys, project, kind, command):
    """Review F4: a dangling or looping link in stacks/ read "no such stack file (did you mean '<its own name>'?)";
    docs/inputs.md names such a link as one."""
    _bad_link(project / "stacks", "Pulumi.broken-dev.yaml", kind)
    r = run_cli([*command, *(["--stack", "broken-dev"] if command != ["check"] else [])], capsys)
    assert r.code == 2, r.text
    assert f"stacks/Pulumi.broken-dev.yaml: {LINK_SAYS[kind]}" in r.err
    assert "did you mean 'broken-dev'" not in r.err and "Traceback" not in r.text


@pytest.mark.parametrize("kind", ["dangling", "loop"])
def test_a_stack_file_given_by_path_that_is_a_broken_link_is_named_as_one(capsys, tmp_path, kind):
    link = _bad_link(tmp_path, "Pulumi.broken-dev.yaml", kind)
    r = run_cli(["preview", "--stack", str(link)], capsys)
    assert r.code == 2, r.text
    assert f"--stack: {link}: {LINK_SAYS[kind]}" in r.err


@pytest.mark.parametrize("kind", ["dangling", "loop"])
@pytest.mark.parametrize("named", [True, False])
def test_a_usage_file_that_is_a_broken_link_is_named_as_one(capsys, project, kind, named):
    """The usage file a stack names (gpufleet:usage) read "no such file"; the default cost/usage/<stack>.yaml as such a
    link was skipped for the defaults, silently."""
    stack = "alicloud-cn-hangzhou-prod"
    usage = project / "cost" / "usage" / f"{stack}.yaml"
    usage.unlink()
    _bad_link(usage.parent, usage.name, kind)
    if not named:
        path = project / "stacks" / f"Pulumi.{stack}.yaml"
        path.write_text("".join(ln for ln in path.read_text().splitlines(True) if "gpufleet:usage" not in ln))
    r = run_cli(["cost", "estimate", "--stack", stack], capsys)
    assert r.code == 2, r.text
    assert f"cost/usage/{stack}.yaml {LINK_SAYS[kind]}" in r.err or f"cost/usage/{stack}.yaml: {LINK_SAYS[kind]}" in r.err


LONG = "a" * 300  # longer than a file name can be: an OSError (ENAMETOOLONG) if a file were looked up by it


@pytest.mark.parametrize(
    "words",
    [
        ["preview"],
        ["rollout", "status"],
        ["rollout", "start"],
        ["loadtest", "--url", "http://127.0.0.1:9", "--model", "m"],
        ["cost", "estimate"],
        ["cost", "diff", "-s", DEV],
        ["plan", "fit"],
        ["image", "pipeline"],
    ],
)
@pytest.mark.parametrize("given", [LONG, "-x", "a..b", "a b", "by path"])
def test_a_stack_that_is_no_stack_name_is_refused_before_any_file_is_looked_up(capsys, tmp_path, words, given):
    """--stack NAME, and the NAME of --stack PATH/Pulumi.NAME.yaml, follow Pulumi's stack-name rule (1-100 letters,
    digits, '-', '_', '.'), checked in one place (loader.bad_stack_name) for every command."""
    value = str(tmp_path / f"Pulumi.{LONG}.yaml") if given == "by path" else given
    r = run_cli([*words, "--stack", value], capsys)
    assert r.code == 2 and "Traceback" not in r.text, r.text
    where = f"--stack: {value}: " if given == "by path" else "--stack: "
    name = LONG if given == "by path" else given
    assert f"error {where}{name[:60]!r}" in r.err and "is not a stack name: 1-100 letters, digits" in r.err, r.err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("cloud", "hint"),
    [
        ("aws", "(choose one of: alicloud, tencentcloud)"),
        ("", "(choose one of: alicloud, tencentcloud)"),
        ("Alicloud", "(did you mean 'alicloud'?)"),
    ],
)
@pytest.mark.parametrize("as_json", [[], ["--json"]])
def test_check_refuses_an_unknown_cloud_listing_the_registered_ones(capsys, cloud, hint, as_json):
    r = run_cli(["check", "--cloud", cloud, *as_json], capsys)
    assert r.code == 2 and r.out == "" and "Traceback" not in r.text
    assert f"--cloud: unknown cloud {cloud!r} {hint}" in r.err


def test_known_cloud_passes_a_registered_cloud_and_none():
    assert options.known_cloud("alicloud") == "alicloud"
    assert options.known_cloud(None) is None


def test_python_m_gpufleet_is_the_command():
    """`python -m gpufleet` (src/gpufleet/__main__.py) runs the same command as the console script."""
    import subprocess
    import sys

    def run(*args: str):
        return subprocess.run([sys.executable, "-m", "gpufleet", *args], capture_output=True, text=True, timeout=120, cwd=ROOT)

    helped = run("--help")
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith("Usage: python -m gpufleet [OPTIONS] COMMAND") and "image" in helped.stdout
    bad = run("check", "--cloud", "aws")
    assert bad.returncode == 2 and "error --cloud: unknown cloud 'aws'" in bad.stderr and "Traceback" not in bad.stderr


def _project_copy(tmp_path, monkeypatch):
    """A copy of the project (stacks, Pulumi.yaml, images) that the CLI takes as its project."""
    shutil.copytree(ROOT / "stacks", tmp_path / "stacks")
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    shutil.copytree(ROOT / "images", tmp_path / "images", ignore=shutil.ignore_patterns("*.py"))
    monkeypatch.setenv("GPUFLEET_PROJECT", str(tmp_path))


@pytest.mark.parametrize(
    "words",
    [
        ["preview", "-s", "alicloud-cn-hangzhou-dev", "--format", "json"],
        ["plan", "fit", "-s", "alicloud-cn-hangzhou-dev", "--format", "json"],
        ["plan", "capacity", "-s", "alicloud-cn-hangzhou-dev", "--peak-qps", "10", "--qps-per-node", "2", "--format", "json"],
        ["check", "--format", "json"],
        ["loadtest", "--url", "http://127.0.0.1:9", "--model", "m", "-s", "alicloud-cn-hangzhou-dev", "--format", "json"],
        ["rollout", "status", "-s", "alicloud-cn-hangzhou-dev"],
        ["rollout", "start", "-s", "alicloud-cn-hangzhou-dev"],
        ["rollout", "abort", "-s", "alicloud-cn-hangzhou-dev"],
        ["rollout", "finish", "-s", "alicloud-cn-hangzhou-dev"],
        ["rollout", "step", "-s", "alicloud-cn-hangzhou-dev", "--current-url", "http://h:1", "--candidate-url", "http://h:2"],
    ],
)
@pytest.mark.parametrize("target", ["stacks/Pulumi.alicloud-cn-hangzhou-dev.yaml", "images/lock.json"])
def test_an_output_that_would_replace_the_stack_file_is_refused(tmp_path, monkeypatch, capsys, words, target):
    """-o naming the command's own stack file (by any path), or the image lock its fleet is resolved from, would replace
    the input with the output."""
    _project_copy(tmp_path, monkeypatch)
    stack = tmp_path / target
    before = stack.read_bytes()
    r = run_cli([*words, "-o", str(stack)], capsys)
    assert r.code == 2 and "Traceback" not in r.text
    assert "is an input of this command" in r.err and stack.read_bytes() == before


@pytest.mark.parametrize("target", ["stacks/Pulumi.alicloud-cn-hangzhou-dev.yaml", "images/lock.json"])
def test_loadtest_save_json_over_the_stack_file_is_refused_like_o(tmp_path, monkeypatch, capsys, target):
    """--save-json is an output too: the same inputs check as -o, before any request (nothing listens on port 9)."""
    _project_copy(tmp_path, monkeypatch)
    stack = tmp_path / target
    before = stack.read_bytes()
    words = ["loadtest", "--url", "http://127.0.0.1:9", "--model", "m", "--concurrency", "1", "--requests", "1"]
    r = run_cli([*words, "-s", DEV, "--save-json", str(stack)], capsys)
    assert r.code == 2 and "Traceback" not in r.text and stack.read_bytes() == before
    assert f"--save-json: {stack}: is an input of this command" in r.err and "cannot reach" not in r.err


def test_plan_scaling_refuses_an_output_over_its_trace(tmp_path, capsys):
    trace = tmp_path / "trace.csv"
    trace.write_text("time,requests_per_s\n0,1\n10,2\n")
    before = trace.read_bytes()
    words = ["plan", "scaling", "-s", "alicloud-cn-hangzhou-prod", "--trace", str(trace), "--qps-per-node", "2"]
    r = run_cli([*words, "--format", "json", "-o", str(trace)], capsys)
    assert r.code == 2 and "is an input of this command" in r.err and trace.read_bytes() == before


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["preview", "--stack", DEV, "-o", ""], "'-o' / '--output'"),
        (["cost", "estimate", "--stack", DEV, "--format", "json", "-o", "  "], "'-o' / '--output'"),
        (["cost", "reconcile", "--stack", DEV, "--bill", ""], "'--bill'"),
        (["image", "render", "-r", "cuda13-vllm", "--out-dir", ""], "'--out-dir' / '--out'"),
        (["cost", "estimate", "--stack", DEV, "--usage", ""], "'--usage'"),  # was read as "no usage file"
        (["cost", "compare", "--stack", DEV, "--discounts", ""], "'--discounts'"),
        (["rollout", "step", "--stack", DEV, "--prompts", ""], "'--prompts'"),
    ],
)
def test_an_empty_path_is_refused_naming_the_option(tmp_path, monkeypatch, capsys, argv, flag):
    """Path("") is "." (the current folder): -o "" was refused as "a folder" and a file option read the folder."""
    monkeypatch.chdir(ROOT)
    before = sorted(p.name for p in ROOT.iterdir())
    r = run_cli(argv, capsys)
    assert r.code == 2, r.text
    assert f"Invalid value for {flag}: is empty: give a path" in r.err
    assert sorted(p.name for p in ROOT.iterdir()) == before


def test_the_path_parser_passes_a_default_path_through():
    assert options.path(Path("~/.ssh/known_hosts")) == Path("~/.ssh/known_hosts")
    assert options.path("-") == Path("-")


def test_without_format_the_output_files_extension_chooses_it(tmp_path):
    # -o q3.xlsx with no --format wrote a text table into q3.xlsx; a format given that the extension contradicts is
    # refused, naming -o
    choices = ("table", "json", "csv", "xlsx")
    assert options.chosen_format(None, False, choices, tmp_path / "q3.xlsx") == "xlsx"
    assert options.chosen_format(None, False, choices, tmp_path / "Q3.CSV") == "csv"
    assert options.chosen_format(None, False, choices, tmp_path / "q3.txt") == "table"
    assert options.chosen_format(None, False, choices, Path("-")) == "table"
    assert options.chosen_format(None, False, choices) == "table"
    assert options.chosen_format(None, False, ("table", "json"), tmp_path / "q3.xlsx") == "table"  # not one of its own
    assert options.chosen_format(None, True, choices, tmp_path / "a.json") == "json"
    for value, as_json, name in (("table", False, "q3.xlsx"), (None, True, "a.csv"), ("csv", False, "a.json")):
        with pytest.raises(UserError) as e:
            options.chosen_format(value, as_json, choices, tmp_path / name)
        (p,) = e.value.problems
        assert p.file == "-o" and "names a ." in p.message and "give --format" in p.message
        assert not (tmp_path / name).exists()


def test_o_file_holds_what_standard_output_shows_and_o_dash_is_standard_output(capsys, tmp_path):
    """docs/cli.md: -o FILE writes the --format output to FILE instead of standard output, `-o -` is standard output
    (nothing written, no "wrote -"). A text file ends with a newline as standard output does (options.emit), HTML
    included, whose text has none of its own."""
    args = ["cost", "estimate", "-s", DEV]
    for fmt in ("json", "csv", "html"):
        printed = run_cli([*args, "--format", fmt], capsys)
        dashed = run_cli([*args, "--format", fmt, "-o", "-"], capsys)
        target = tmp_path / f"estimate.{fmt}"
        written = run_cli([*args, "--format", fmt, "-o", target], capsys)
        assert printed.code == dashed.code == written.code == 0, written.text
        assert printed.out.endswith("\n") and dashed.out == printed.out and dashed.err == ""
        assert target.read_text() == printed.out, fmt
        assert written.out == "" and written.err == f"wrote {target}\n"
    assert not (tmp_path / "-").exists() and not Path("-").exists()
    table = tmp_path / "estimate.txt"
    assert run_cli([*args, "-o", table], capsys).code == 0 and table.read_bytes().endswith(b"\n")
    inventory = run_cli(["preview", "-s", DEV, "--json", "-o", "-"], capsys)
    assert inventory.code == 0 and inventory.err == "" and json.loads(inventory.out)["stack"] == DEV


@pytest.mark.parametrize(
    "words",
    [["cost", "estimate", "-s", "alicloud-cn-hangzhou-prod", "--json"], ["check", "--cloud", "alicloud", "--json"]],
    ids=["cost estimate", "check"],
)
def test_an_output_over_the_usage_profile_a_stack_names_is_refused(project, capsys, words):
    """The usage file a stack names under gpufleet:usage is one of the command's inputs (docs/cli.md: "its usage
    file"; check reads every stack's): -o naming it would replace the profile with the report."""
    import yaml

    config = yaml.safe_load((project / "stacks" / "Pulumi.alicloud-cn-hangzhou-prod.yaml").read_text())["config"]
    usage = project / config["gpufleet:usage"]
    before = usage.read_bytes()
    r = run_cli([*words, "-o", usage], capsys)
    assert r.code == 2 and "Traceback" not in r.text, r.text
    assert f"-o: {usage}: is an input of this command" in r.err and usage.read_bytes() == before


def test_stack_completion_offers_the_names_that_start_with_the_word(monkeypatch):
    """complete_stack answers a prefix itself (bash's compgen -W completes words so): typer 0.28's autocompletion
    wrapper happens to filter by prefix again, which is no contract of complete_stack's callers."""
    monkeypatch.setenv("GPUFLEET_PROJECT", str(ROOT))
    assert options.complete_stack("alicloud-cn-hangzhou-p") == ["alicloud-cn-hangzhou-prod"]
    assert options.complete_stack("prod") == [] and options.complete_stack("stacks/P") == []
