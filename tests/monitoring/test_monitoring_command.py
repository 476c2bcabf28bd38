"""`gpufleet monitoring --stack S --out-dir DIR` (docs/monitoring.md): the rule file and the dashboard written into a
folder, both or neither, from an installed gpufleet (it replaced a script of the checkout, which a wheel user lacked).
The folder is checked before the stack is read; bad input is exit 2 with the message, never a traceback."""

from __future__ import annotations

import errno
import json

import pytest
import yaml
from inputs.inputs_helpers import run_cli
from tools import rename_fails_at

PROD = "alicloud-cn-hangzhou-prod"
NAMES = ("gpufleet-llm-prod-alicloud-cn-hangzhou.rules.yml", "gpufleet-llm-prod-alicloud-cn-hangzhou.dashboard.json")
OLD = "old content\n"


def test_both_files_are_written_into_a_new_folder_and_their_paths_printed(tmp_path, capsys):
    out = tmp_path / "new" / "monitoring"
    r = run_cli(["monitoring", "--stack", PROD, "--out-dir", out], capsys)
    assert r.code == 0, r.text
    assert r.out.splitlines() == [str(out / n) for n in NAMES]
    rules = yaml.safe_load((out / NAMES[0]).read_text())
    assert rules["groups"][0]["rules"] and "GpuUtilizationHigh" in (out / NAMES[0]).read_text()
    assert json.loads((out / NAMES[1]).read_text())["panels"]
    assert sorted(p.name for p in out.iterdir()) == sorted(NAMES)  # no temporary file left


def test_a_stack_file_path_is_taken_as_the_stack(tmp_path, capsys, project):
    by_name = run_cli(["monitoring", "-s", "tencentcloud-ap-guangzhou-prod", "--out-dir", tmp_path / "a"], capsys)
    path = project / "stacks" / "Pulumi.tencentcloud-ap-guangzhou-prod.yaml"
    by_path = run_cli(["monitoring", "--stack", path, "--out-dir", tmp_path / "b"], capsys)
    assert by_name.code == by_path.code == 0, by_name.text + by_path.text
    assert [p.name for p in sorted((tmp_path / "a").iterdir())] == [p.name for p in sorted((tmp_path / "b").iterdir())]
    for a in (tmp_path / "a").iterdir():
        assert a.read_text() == (tmp_path / "b" / a.name).read_text()


def test_two_stacks_of_one_fleet_name_write_their_own_files_into_one_folder(tmp_path, capsys):
    """Review M4: the help's two examples, one after the other, wrote gpufleet-llm-prod.* twice (the second replacing the
    first without a word): each region's prod fleet is llm-prod."""
    for stack in (PROD, "tencentcloud-ap-guangzhou-prod"):
        assert run_cli(["monitoring", "--stack", stack, "--out-dir", tmp_path], capsys).code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [*NAMES, *(n.replace("alicloud-cn-hangzhou", "tencentcloud-ap-guangzhou") for n in NAMES)]
    )


def test_old_files_are_replaced(tmp_path, capsys):
    for name in NAMES:
        (tmp_path / name).write_text(OLD)
    assert run_cli(["monitoring", "--stack", PROD, "--out-dir", tmp_path], capsys).code == 0
    assert all((tmp_path / n).read_text() != OLD for n in NAMES)


@pytest.mark.parametrize(("out", "said"), [("FILE", "exists and is not a folder"), ("-", "standard output"), ("", "is empty")])
def test_an_out_dir_that_is_no_folder_is_refused_before_the_stack_is_read(tmp_path, monkeypatch, capsys, out, said):
    monkeypatch.chdir(tmp_path)  # a folder named `-` would be made here
    (tmp_path / "FILE").write_text(OLD)
    out = str(tmp_path / out) if out == "FILE" else out
    r = run_cli(["monitoring", "--stack", "no-such-stack", "--out-dir", out], capsys)
    assert r.code == 2 and said in r.err and "--out-dir" in r.err and "Traceback" not in r.text, r.text
    assert "no-such-stack" not in r.err  # the folder is checked first
    assert (tmp_path / "FILE").read_text() == OLD and sorted(p.name for p in tmp_path.iterdir()) == ["FILE"]


@pytest.mark.parametrize(
    "argv", [["monitoring", "--stack", "no-such-stack"], ["image", "render", "-r", "no-such-recipe"]], ids=lambda a: a[0]
)
def test_out_dir_dash_is_refused_in_one_wording_by_every_command_that_writes_a_folder(tmp_path, monkeypatch, capsys, argv):
    """Review F9: monitoring and image render each refused `--out-dir -` in a wording of their own; files.folder_problems
    refuses it for both, before the stack or the recipe is read."""
    monkeypatch.chdir(tmp_path)
    r = run_cli([*argv, "--out-dir", "-"], capsys)
    assert r.code == 2 and r.err == "error --out-dir: -: give a folder: - (standard output) cannot hold several files\n", r.text
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_stack_is_refused_and_nothing_is_made(tmp_path, capsys):
    out = tmp_path / "monitoring"
    r = run_cli(["monitoring", "--stack", "alicloud-cn-hangzhou-prd", "--out-dir", out], capsys)
    assert r.code == 2 and "Pulumi.alicloud-cn-hangzhou-prd.yaml" in r.err and "Traceback" not in r.text, r.text
    assert "did you mean 'alicloud-cn-hangzhou-prod'" in r.err
    assert not out.exists()


def test_a_metric_the_pinned_software_does_not_export_is_exit_1_writing_nothing(tmp_path, monkeypatch, capsys):
    from gpufleet.components import monitoring

    known = monitoring.exported_names
    monkeypatch.setattr(monitoring, "exported_names", lambda vllm: known(vllm) - {"vllm:num_requests_waiting"})
    out = tmp_path / "monitoring"
    r = run_cli(["monitoring", "--stack", PROD, "--out-dir", out], capsys)
    assert r.code == 1 and r.out == "", r.text
    assert r.err == "metric names the pinned software does not export: vllm:num_requests_waiting\n"
    assert not out.exists()


def test_a_folder_where_a_file_goes_writes_neither(tmp_path, capsys):
    """A folder in the dashboard's place was an IsADirectoryError traceback after the rules file was rewritten."""
    (tmp_path / NAMES[1]).mkdir()
    (tmp_path / NAMES[0]).write_text(OLD)
    r = run_cli(["monitoring", "--stack", PROD, "--out-dir", tmp_path], capsys)
    assert r.code == 2 and f"--out-dir: {tmp_path / NAMES[1]}: is a folder: not replacing it" in r.err, r.text
    assert (tmp_path / NAMES[0]).read_text() == OLD


def test_a_full_disk_keeps_both_old_files(tmp_path, monkeypatch, capsys):
    from gpufleet import files

    def enospc(folder, name, data, mode):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files, "_write_temp", enospc)
    for name in NAMES:
        (tmp_path / name).write_text(OLD)
    r = run_cli(["monitoring", "--stack", PROD, "--out-dir", tmp_path], capsys)
    assert r.code == 2 and "No space left on device" in r.err and "Traceback" not in r.text, r.text
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == dict.fromkeys(NAMES, OLD)


def test_a_second_rename_that_fails_is_exit_2_naming_each_file(tmp_path, monkeypatch, capsys):
    """A rename that failed after the first file was replaced was a PermissionError traceback (write_folder's renames
    were unprotected): exit 2 naming the file replaced and the one not, no temporary file left."""
    rename_fails_at(monkeypatch, 2)
    r = run_cli(["monitoring", "--stack", PROD, "--out-dir", tmp_path], capsys)
    assert r.code == 2 and "Traceback" not in r.text and "cannot rename gpufleet-llm-prod-alicloud-cn-hangzhou." in r.err
    assert "replaced: gpufleet-llm-prod-alicloud-cn-hangzhou." in r.err and "which cannot be atomic" in r.err, r.err
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
