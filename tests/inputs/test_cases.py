"""A named test for every case of issue 15 (cron cases live with the cron module): exit 2 with a clear
`file: field: message`, no traceback, nothing written; or exit 1 where a check failed."""

from __future__ import annotations

import json
import os
import resource
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from tools import rename_fails_at

from gpufleet import inputs
from gpufleet.errors import UserError

from .inputs_helpers import ROOT, run_cli, snapshot

STACK = "alicloud-cn-hangzhou-dev"
STACK_FILE = f"stacks/Pulumi.{STACK}.yaml"


def stack_doc(project: Path) -> dict:
    return yaml.safe_load((project / STACK_FILE).read_text())


def put_fleet(project: Path, change) -> None:
    doc = stack_doc(project)
    change(doc["config"]["gpufleet:fleet"])
    (project / STACK_FILE).write_text(yaml.safe_dump(doc, sort_keys=False))


def refused(argv, capsys, *folders, names=None, code=2):
    before = snapshot(*folders)
    r = run_cli(argv, capsys)
    assert r.code == code, r.text
    assert "Traceback" not in r.text
    if names:
        assert names in r.text, r.text
    assert snapshot(*folders) == before
    return r


# --- the reader ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, where, message",
    [
        (b"a: 1\na: 2\n", "f.yaml:2:1: ", "duplicate key 'a'"),
        (b"x: .nan\n", "f.yaml:1:4: ", "not a finite number"),
        (b"x: .inf\n", "f.yaml:1:4: ", "not a finite number"),
        (b"x: 1.0e+999999999\n", "f.yaml:1:4: ", "not a finite number"),
        (b"x: 1" + b"0" * 400 + b"\n", "f.yaml:1:4: ", "out of range"),
        (b"\xff\xfe: 1\n", "f.yaml:1:1: ", "not UTF-8"),
        (b"[" * 100 + b"]" * 100, "f.yaml:1:65: ", "nested deeper than 64"),
        (b"a: &a [1]\n" + b"".join(b"b%d: *a\n" % i for i in range(101)), "f.yaml:102:7: ", "more than 100 aliases"),
        (b"{[1]: 2}\n", "f.yaml:1:2: ", "cannot be a key"),
        # a date-shaped value no calendar has: PyYAML's ValueError was a traceback (preview of retire_after: 2026-13-01)
        (b"x: 2026-13-01T00:00:00Z\n", "f.yaml:1:4: ", "'2026-13-01T00:00:00Z' is not a date or time (month must be in 1..12)"),
        (b"x: 2026-02-30\n", "f.yaml:1:4: ", "is not a date or time (day is out of range for month): correct it, or quote"),
        (b"2026-12-01 25:00:00: x\n", "f.yaml:1:1: ", "is not a date or time (hour must be in 0..23)"),
        (b"a: [\n", "f.yaml:2:1: ", "not valid YAML: did not find expected node content"),
        # issue 27: a control character is one line with the file's line and column, not an offset in a string
        (b'config:\n  x: "a\x01b"\n', "f.yaml:2:8: ", "not valid YAML: control characters are not allowed (U+0001 here)"),
        (b"a: 1\nb: x\x07y\n", "f.yaml:2:5: ", "(U+0007 here)"),
        # an alias bomb: 10 aliases of 10 aliases, 9 deep (10**9 nodes), ends at the event stream
        (
            b"a: &a [x,x,x,x,x,x,x,x,x,x]\n"
            + b"".join(b"%c: &%c [%s]\n" % (98 + i, 98 + i, b",".join([b"*%c" % (97 + i)] * 10)) for i in range(9)),
            "f.yaml:4:",
            "aliases expand to more than 10000 nodes",
        ),
    ],
)
def test_yaml_reader_refuses(tmp_path, text, where, message):
    p = tmp_path / "f.yaml"
    p.write_bytes(text)
    with pytest.raises(UserError) as exc:
        inputs.load_yaml(p, "f.yaml")
    shown = str(exc.value)
    assert shown.startswith(where) and message in shown and "\n" not in shown, shown


@pytest.mark.parametrize(
    "text, said",
    [
        # review F8: these named neither line nor field, where the YAML reader gives file:line:column
        ('{"levels": [\n  {"c": 1},\n  {"c": 2, "rps": NaN}\n]}', "f.json:3:19: levels.1.rps: NaN is not a finite number"),
        ('{"a": {"x": [1, Infinity]}}', "f.json:1:17: a.x.1: Infinity is not a finite number"),
        ('{"a": 1e999}', "f.json:1:7: a: 1e999 is not a finite number"),
        ('{"a": -' + "9" * 30 + "}", "f.json:1:7: a: -999999"),
        ('{"a": {"k": 1, "k": 2}, "b": NaN}', "f.json:1:16: a.k: duplicate key 'k'; keep one"),  # as the decoder meets them
        ('{"s": "NaN, \\" 1e999", "n": [-Infinity]}', "f.json:1:30: n.0: -Infinity is not"),  # in a text: not a number
    ],
)
def test_json_reader_refusals_name_the_line_and_the_field(text, said):
    with pytest.raises(UserError) as exc:
        inputs.parse_json(text, "f.json")
    assert str(exc.value).startswith(said), str(exc.value)


def test_yaml_reader_accepts_anchors_within_the_budget(tmp_path):
    p = tmp_path / "f.yaml"
    p.write_text("base: &b {x: 1, y: [1, 2]}\nc: *b\nd: *b\n")
    assert inputs.load_yaml(p) == {"base": {"x": 1, "y": [1, 2]}, "c": {"x": 1, "y": [1, 2]}, "d": {"x": 1, "y": [1, 2]}}


SHIPPED_YAML = sorted(
    p for p in Path(inputs.PACKAGE).rglob("*") if p.suffix in (".yaml", ".yml") and "__pycache__" not in p.parts
)
SHIPPED_JSON = sorted(p for p in Path(inputs.PACKAGE).rglob("*.json") if "__pycache__" not in p.parts)


def test_the_strict_reading_is_skipped_only_for_files_inside_the_package(tmp_path):
    assert SHIPPED_YAML and all(inputs.shipped(p) for p in SHIPPED_YAML)
    assert not inputs.shipped(tmp_path / "f.yaml")
    assert not inputs.shipped(Path(inputs.PACKAGE) / ".." / "gpufleet-evil" / "f.yaml")  # a sibling named alike
    assert not inputs.shipped(f"{inputs.PACKAGE}../../f.yaml")
    # a folder named gpufleet outside the package is not the package: the alias cap still refuses there
    p = tmp_path / "gpufleet" / "f.yaml"
    p.parent.mkdir()
    p.write_text("a: &a [1]\n" + "".join(f"b{i}: *a\n" for i in range(101)))
    with pytest.raises(UserError, match="more than 100 aliases"):
        inputs.load_yaml(p, "f.yaml")


@pytest.mark.parametrize("path", SHIPPED_YAML, ids=lambda p: str(p.relative_to(inputs.PACKAGE)))
def test_every_shipped_yaml_file_passes_the_strict_reading_it_is_read_without(path):
    """What makes reading shipped files without the caps and the strict constructor safe: each passes them, and reads
    the same either way."""
    text = inputs.read_text(path)
    assert inputs.parse_yaml(text, str(path), strict=True) == inputs.load_yaml(path)


@pytest.mark.parametrize("path", SHIPPED_JSON, ids=lambda p: str(p.relative_to(inputs.PACKAGE)))
def test_every_shipped_json_file_passes_the_strict_reading_it_is_read_without(path):
    text = inputs.read_text(path)
    assert inputs.parse_json(text, str(path), strict=True) == inputs.load_json(path)


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"a": 1, "a": 2}', "duplicate key 'a'"),
        ('{"a": NaN}', "not a finite number"),
        ('{"a": Infinity}', "not a finite number"),
        ('{"a": 1e999}', "not a finite number"),
        ('{"a": 1' + "0" * 400 + "}", "out of range"),
        ("[" * 100 + "]" * 100, "nested deeper than 64"),
        ("[" * 100000 + "]" * 100000, "nested deeper than 64"),
        ('{"a": ', "f.json:1:7: not valid JSON: Expecting value"),
    ],
)
def test_json_reader_refuses(tmp_path, text, message):
    p = tmp_path / "f.json"
    p.write_text(text)
    with pytest.raises(UserError) as exc:
        inputs.load_json(p, "f.json")
    assert message in str(exc.value), str(exc.value)


def test_reader_size_cap(tmp_path):
    p = tmp_path / "big.yaml"
    p.write_bytes(b"# " + b"x" * inputs.MAX_BYTES)
    with pytest.raises(UserError, match="larger than 10 MiB"):
        inputs.load_yaml(p)


def test_reader_folder_and_missing(tmp_path):
    with pytest.raises(UserError, match="is a folder"):
        inputs.load_yaml(tmp_path)
    with pytest.raises(UserError, match="no such file: make one"):
        inputs.load_yaml(tmp_path / "none.yaml", missing="make one")


def _unblock_later(fifo: Path) -> threading.Timer:
    """Open the FIFO's writing end in a few seconds: a reader stuck in open() then reads an empty file instead of
    hanging the test run (the reader that refuses a FIFO has no reader there, and the open fails harmlessly)."""

    def write_end():
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass

    timer = threading.Timer(3, write_end)
    timer.start()
    return timer


def test_reader_reads_a_pipe_never_hangs_on_a_fifo_and_refuses_a_device(tmp_path):
    """A FIFO with no writer hung the reader forever in open() (`--usage FIFO`, a FIFO in stacks/ under `check`): it
    reads as empty at once now. A pipe with a writer is read to its end (`--api-key-file <(pass show key)`, a secret
    never on disk). A device was read as whatever it gives (/dev/null as an empty file): refused."""
    fifo = tmp_path / "usage.yaml"
    os.mkfifo(fifo)
    timer = _unblock_later(fifo)  # a reader stuck in open() is released after 3 s: the time says which it was
    try:
        started = time.monotonic()
        assert inputs.load_yaml(fifo) is None  # empty: no writer
        assert time.monotonic() - started < 2
    finally:
        timer.cancel()
    read_end, write_end = os.pipe()
    os.write(write_end, b"key: value\n")
    os.close(write_end)
    try:
        assert inputs.load_yaml(f"/dev/fd/{read_end}") == {"key": "value"}
    finally:
        os.close(read_end)
    with pytest.raises(UserError) as exc:
        inputs.load_yaml("/dev/null")
    assert str(exc.value) == "/dev/null: is not a regular file (a device or socket): give a file (save what it holds to one)"


def test_reader_names_a_link_that_does_not_resolve(tmp_path):
    """A dangling link said "no such file", naming a path that is there; a loop said "cannot read: Too many levels of
    symbolic links"."""
    dangling, loop1, loop2 = tmp_path / "lock.json", tmp_path / "a.json", tmp_path / "b.json"
    dangling.symlink_to(tmp_path / "moved" / "lock.json")
    loop1.symlink_to(loop2.name)
    loop2.symlink_to(loop1.name)
    with pytest.raises(UserError) as exc:
        inputs.load_json(dangling)
    assert str(exc.value) == (
        f"{dangling}: is a symbolic link that leads to no file (to {tmp_path / 'moved' / 'lock.json'}): fix the link, or "
        "give the file itself"
    )
    with pytest.raises(UserError) as exc:
        inputs.load_json(loop1)
    assert (
        str(exc.value)
        == f"{loop1}: is a symbolic link that is a loop of links (to b.json): fix the link, or give the file itself"
    )


@pytest.mark.parametrize(
    "argv, fifo",
    [
        (["cost", "estimate", "--stack", STACK, "--usage", "{fifo}"], "in/usage.yaml"),
        (["cost", "compare", "--stack", STACK, "--discounts", "{fifo}"], "in/d.yaml"),
        (["check"], "project/stacks/Pulumi.tencentcloud-ap-guangzhou-x.yaml"),  # one the user did not even name
    ],
    ids=["usage", "discounts", "check"],
)
def test_a_fifo_as_an_input_file_is_read_as_a_file_not_waited_on(project, tmp_path, argv, fifo):
    """These waited forever for a writer in open(). A FIFO no process writes is now read at once as an empty file:
    the same answer as an empty regular file there, never a hang (timeout) or a traceback."""
    path = tmp_path / fifo
    path.parent.mkdir(exist_ok=True)
    argv = [a.format(fifo=path) for a in argv]
    cmd = [sys.executable, "-c", "from gpufleet.cli import main; main()", *argv]
    answers = []
    for make in (os.mkfifo, lambda p: p.write_text("")):
        make(path)
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=project)
        assert "Traceback" not in r.stderr, r.stderr
        answers.append((r.returncode, r.stderr.replace(str(tmp_path), "")))
        path.unlink()
    assert answers[0] == answers[1]


def test_reader_accepts_bom_and_plain_documents(tmp_path):
    p = tmp_path / "ok.yaml"
    p.write_bytes(b"\xef\xbb\xbfa: [1, 2.5, x]\n")
    assert inputs.load_yaml(p) == {"a": [1, 2.5, "x"]}
    assert inputs.StrictLoader.__mro__[1].__name__ in ("CSafeLoader", "SafeLoader")


# --- every input file goes through the reader: not UTF-8, wrong shapes ----------------------------------

NOT_UTF8 = b"x: \xff\xfe\n"


def test_stack_file_not_utf8(project, capsys):
    (project / STACK_FILE).write_bytes(NOT_UTF8)
    refused(["preview", "--stack", STACK], capsys, project, names=f"{STACK_FILE}:1:4: not UTF-8")


def test_stack_duplicate_key_refused_also_by_the_pulumi_program(project, capsys):
    (project / STACK_FILE).write_text((project / STACK_FILE).read_text() + "config:\n  x: 1\n")
    refused(["preview", "--stack", STACK], capsys, project, names="duplicate key 'config'")
    # stacks/__main__.py (what `pulumi up` runs) loads through the same loader
    assert "load_fleet" in (ROOT / "stacks" / "__main__.py").read_text()


def test_deeply_nested_stack(project, capsys):
    (project / STACK_FILE).write_text("config: " + "[" * 5000 + "]" * 5000 + "\n")
    refused(["preview", "--stack", STACK], capsys, project, names="nesting depth")


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda f: f.update(zones=[{"a": 1}]), "fleet.zones.0"),
        (lambda f: f.update(gpu={"kind": ["A10"]}), "fleet.gpu.kind"),
        (lambda f: f.update(cloud=["alicloud"]), "fleet.cloud"),
        (lambda f: f.update(region={"x": 1}), "fleet.region"),
        (lambda f: f.update(name="llm\n"), "fleet.name"),  # pydantic's (Rust) `$` is the end of text
        (lambda f: f["billing"].update(model="spot", spot_price_limit=float("inf")), "not a finite number"),
    ],
)
def test_wrong_shapes_in_stack(project, capsys, change, field):
    put_fleet(project, change)
    refused(["preview", "--stack", STACK], capsys, project, names=field)


def test_brackets_in_values_print_literally(project, capsys):
    put_fleet(project, lambda f: f.update(zones=["[/x]", "[bold]y"]))
    r = refused(["preview", "--stack", STACK], capsys, project, names="'[/x]' is not a zone")
    assert "'[bold]y'" in r.text


def test_brackets_in_url_print_literally(capsys):
    r = run_cli(["loadtest", "--url", "http://[/x]", "--model", "m", "--requests", "1"], capsys)
    assert r.code == 2 and "http://[/x]" in r.text and "Traceback" not in r.text, r.text


def test_missing_field_reported_once(project, capsys):
    put_fleet(project, lambda f: f.pop("cloud"))
    r = refused(["preview", "--stack", STACK], capsys, project, names="fleet.cloud")
    assert r.text.count("fleet.cloud") == 1, r.text


def test_misspelt_key_gets_did_you_mean(project, capsys):
    put_fleet(project, lambda f: f["serving"].update(max_num_seq=8))
    refused(["preview", "--stack", STACK], capsys, project, names="did you mean 'max_num_seqs'")


def test_did_you_mean_with_nothing_to_choose_from_adds_nothing():
    from gpufleet.errors import did_you_mean

    assert did_you_mean("x", []) == "" and did_you_mean("b", ["a"]) == " (choose one of: a)"


@pytest.mark.parametrize("value", ["abc\n", "oss://bucket/model.tar\n"])
def test_trailing_newline_not_accepted_by_patterns(project, capsys, value):
    sha = "a" * 64 + "\n"
    put_fleet(project, lambda f: f["model"].update(sha256=sha, source=value))
    r = refused(["preview", "--stack", STACK], capsys, project, names="fleet.model.sha256")
    assert "fleet.model.source" in r.text


def test_preview_json_sorted(project, capsys):
    r = run_cli(["preview", "--stack", STACK, "--json"], capsys)
    assert r.code == 0, r.text
    doc = json.loads(r.out)
    assert list(doc) == sorted(doc)
    assert r.out == json.dumps(doc, indent=2, sort_keys=True) + "\n"


# --- usage, discounts, budget --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, names",
    [
        ("replicas_average: .nan\n", "not a finite number"),
        ("replicas_average: .inf\n", "not a finite number"),
        ("replicas_average: 1e999999999\n", "must be a number >= 0 and at most"),
        ("replicas_average: [1]\n", "replicas_average: must be a finite number"),
        ("- 1\n", "expected a mapping of usage keys to numbers, got a list"),
        ("replica_average: 1\n", "did you mean 'replicas_average'"),
    ],
)
def test_usage_file(project, tmp_path, capsys, text, names):
    f = tmp_path / "usage.yaml"
    f.write_text(text)
    refused(["cost", "estimate", "--stack", STACK, "--usage", f], capsys, project, tmp_path, names=names)


def test_usage_file_not_utf8(project, tmp_path, capsys):
    f = tmp_path / "usage.yaml"
    f.write_bytes(NOT_UTF8)
    refused(["cost", "estimate", "--stack", STACK, "--usage", f], capsys, project, tmp_path, names="usage.yaml:1:4: not UTF-8")


@pytest.mark.parametrize(
    "text, names",
    [
        ("- match: x\n", "expected a mapping with a `discounts:` list, got a list"),
        ("discounts:\n  - match: instance/*\n    factr: 0.8\n", "did you mean 'factor'"),
        ("discount:\n  - match: instance/*\n    factor: 0.8\n", "did you mean 'discounts'"),
        ("discounts:\n  - match: instance/*\n    factor: .nan\n", "not a finite number"),
        ("discounts:\n  - [1]\n", "discounts.0: expected a mapping"),
        ("discounts: {a: 1}\n", "discounts: expected a list of discounts"),
        # an empty mapping (or "", 0, false) was read as no discounts
        ("discounts: {}\n", "discounts: expected a list of discounts, got a mapping"),
        ("discounts: 0\n", "discounts: expected a list of discounts, got a number"),
        # a rule that can never apply: an empty glob, or the same match and billing as an earlier rule (the first wins)
        ("discounts:\n  - {match: '', factor: 0.8}\n", "discounts.0.match: empty: give a glob such as instance/*"),
        (
            "discounts:\n  - {match: instance/*, billing: payg, factor: 0.8}\n  - {match: instance/*, billing: payg, factor: 0.5}\n",
            "discounts.1: repeats the match and billing of discounts.0, which applies; keep one",
        ),
    ],
)
def test_discounts_file(project, tmp_path, capsys, text, names):
    f = tmp_path / "d.yaml"
    f.write_text(text)
    refused(["cost", "estimate", "--stack", STACK, "--discounts", f], capsys, project, tmp_path, names=names)


@pytest.mark.parametrize("budget", ["nan", "inf", "-1", "abc", "sNaN"])
def test_budget(project, capsys, budget):
    refused(["cost", "estimate", "--stack", STACK, "--budget", budget], capsys, project, names="--budget")


# --- sizing: config.json, load-test files, capacity numbers -------------------------------------------

CONFIG = {"num_hidden_layers": 28, "hidden_size": 3584, "num_attention_heads": 28, "vocab_size": 152064}


@pytest.mark.parametrize(
    "change, names",
    [
        ({"num_attention_heads": "28"}, "num_attention_heads: must be a whole number"),
        ({"num_attention_heads": [28]}, "num_attention_heads: must be a whole number"),
        ({"num_attention_heads": 0}, "num_attention_heads: must be a whole number from 1"),
        ({"num_hidden_layers": -8}, "num_hidden_layers: must be a whole number from 1"),
        ({"num_attention_heads": 10**400}, "out of range"),
    ],
)
def test_config_json(tmp_path, capsys, change, names):
    f = tmp_path / "config.json"
    f.write_text(
        json.dumps({**CONFIG, **change}) if 10**400 not in change.values() else '{"num_attention_heads": 1' + "0" * 400 + "}"
    )
    refused(["plan", "fit", "--model", f, "--gpu", "A10"], capsys, tmp_path, names=names)


def test_config_json_nan_and_not_utf8(tmp_path, capsys):
    f = tmp_path / "config.json"
    f.write_text('{"num_hidden_layers": NaN}')
    refused(["plan", "fit", "--model", f, "--gpu", "A10"], capsys, tmp_path, names="not a finite number")
    f.write_bytes(b'{"a": "\xff"}')
    refused(["plan", "fit", "--model", f, "--gpu", "A10"], capsys, tmp_path, names="not UTF-8")


@pytest.mark.parametrize("peak, per_node", [("nan", "2"), ("inf", "2"), ("10", "inf"), ("10", "nan"), ("-1", "2")])
def test_capacity_numbers(tmp_path, capsys, peak, per_node):
    refused(["plan", "capacity", "--peak-qps", peak, "--qps-per-node", per_node], capsys, tmp_path, names="--")


def test_loadtest_file_not_utf8_and_nan(tmp_path, capsys):
    f = tmp_path / "lt.json"
    f.write_bytes(b"\xff")
    refused(["plan", "capacity", "--peak-qps", "10", "--from-loadtest", f], capsys, tmp_path, names="not UTF-8")
    f.write_text('{"levels": [{"concurrency": 1, "requests_per_s": NaN, "error_rate": 0}]}')
    refused(["plan", "capacity", "--peak-qps", "10", "--from-loadtest", f], capsys, tmp_path, names="not a finite number")


# --- region new ----------------------------------------------------------------------------------------

NEW = ["region", "new", "--cloud", "alicloud", "--region", "cn-beijing", "--env", "dev"]


@pytest.mark.parametrize("name", [".", "..", "a b", "../evil", "a/b", "x" * 300, "-x", "a\nb"])
def test_region_new_bad_name(project, capsys, name):
    refused([*NEW, "--name", name], capsys, project, names="--name")


@pytest.mark.parametrize("cidr", ["foo", "10.40.0.0/33", "10.40.0.0/", "::1/64", ""])
def test_region_new_bad_cidr(project, capsys, cidr):
    refused([*NEW, "--cidr", cidr], capsys, project, names="--cidr")


def test_region_new_survives_a_malformed_stack(project, capsys):
    (project / "stacks" / "Pulumi.broken.yaml").write_bytes(b"")
    (project / "stacks" / "Pulumi.broken2.yaml").write_bytes(b"config: [\n")
    r = run_cli(NEW, capsys)
    assert r.code == 0, r.text
    assert "skipped" in r.out and "Pulumi.broken2.yaml" in r.out
    assert (project / "stacks" / "Pulumi.alicloud-cn-beijing-dev.yaml").stat().st_size > 0


def test_region_new_exclusive(project, capsys):
    assert run_cli(NEW, capsys).code == 0
    refused(NEW, capsys, project, names="already exists")
    # no temp file is left behind
    assert not [p for p in (project / "stacks").iterdir() if p.name.startswith(".")]


def test_region_new_refuses_a_dangling_symlink(project, capsys):
    (project / "stacks" / "Pulumi.alicloud-cn-beijing-dev.yaml").symlink_to(project / "elsewhere")
    refused(NEW, capsys, project, names="already exists")
    assert not (project / "elsewhere").exists()


# --- outputs ------------------------------------------------------------------------------------------

COMPARE = ["cost", "compare", "--stack", STACK, "--clouds", "alicloud", "--billing", "payg"]


@pytest.mark.parametrize("fmt", ["table", "xlsx", "csv"])
def test_output_into_missing_folder_or_onto_folder(project, tmp_path, capsys, fmt):
    refused([*COMPARE, "--format", fmt, "-o", tmp_path / "nope" / "x"], capsys, project, tmp_path, names="does not exist")
    refused([*COMPARE, "--format", fmt, "-o", tmp_path], capsys, project, tmp_path, names="is a folder")


def test_output_onto_a_device_is_refused(project, capsys):
    st = os.stat("/dev/full")
    refused([*COMPARE, "--format", "csv", "-o", "/dev/full"], capsys, project, names="not a regular file")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode) and os.stat("/dev/full").st_ino == st.st_ino


def test_output_into_read_only_folder(project, tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    os.chmod(ro, 0o555)
    try:
        if os.access(ro, os.W_OK) and os.geteuid() == 0:
            pytest.skip("root writes into a read-only folder; the read-only file system case is test_full_disk_keeps_old_file")
        refused([*COMPARE, "--format", "csv", "-o", ro / "x.csv"], capsys, project, tmp_path, names="cannot write")
    finally:
        os.chmod(ro, 0o755)


def test_output_dash_is_stdout_and_symlink_is_followed(project, tmp_path, capsys):
    r = run_cli([*COMPARE, "--format", "csv", "-o", "-"], capsys)
    assert r.code == 0 and r.out.splitlines()[0].startswith("stack,cloud,region,"), r.text  # both: exit 0 and the CSV
    real = tmp_path / "real.csv"
    real.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    assert run_cli([*COMPARE, "--format", "csv", "-o", link], capsys).code == 0
    assert link.is_symlink() and real.read_text() != "old\n"


def test_full_disk_keeps_old_file(tmp_path):
    """A real write failure (RLIMIT_FSIZE: the kernel refuses to grow a file, like a full disk): old file stays."""
    target = tmp_path / "out.txt"
    target.write_text("old\n")
    code = (
        "import resource, signal, sys\n"
        "from pathlib import Path\n"
        "from gpufleet.files import write_atomic\n"
        "from gpufleet.errors import UserError\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))\n"
        "try:\n"
        f"    write_atomic(Path({str(target)!r}), 'x' * 100000)\n"
        "except UserError as e:\n"
        "    print(e); sys.exit(2)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 2 and "cannot write" in r.stdout and "old file is unchanged" in r.stdout, r.stdout + r.stderr
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]
    assert resource and signal  # used in the child


def test_a_file_no_option_gives_is_named_once(tmp_path, monkeypatch):
    """A stack file, a state file or a catalog (`shown`, no option gives it) was named twice in a write problem
    (`cost/data/x.yaml: /abs/cost/data/x.yaml: cannot write`, the flag being the file): now once."""
    import errno

    from gpufleet import files

    target = tmp_path / "x.yaml"
    target.write_text("old\n")

    def full_disk(folder, name, data, mode):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files, "_write_temp", full_disk)
    with pytest.raises(UserError) as exc:
        files.write_atomic(target, "new\n", shown="cost/data/x.yaml")
    assert str(exc.value) == "cost/data/x.yaml: cannot write: No space left on device; the old file is unchanged"
    assert target.read_text() == "old\n"
    assert [str(p) for p in files.output_problems(tmp_path, shown="cost/data")] == ["cost/data: is a folder: give a file name"]
    assert [str(p) for p in files.output_problems(tmp_path)] == [f"-o: {tmp_path}: is a folder: give a file name"]


def test_catalog_build_atomic_and_checked_first(tmp_path, monkeypatch):
    from gpufleet.cost import catalog as pricecat
    from gpufleet.cost import derive

    data = tmp_path / "data"
    import shutil

    shutil.copytree(pricecat.DATA, data)
    regions = sorted(p.name for p in data.glob("alicloud-*.yaml"))
    for p in data.glob("alicloud-*.yaml"):
        p.unlink()  # a build with unchanged prices writes nothing: start without the files so that every one is written
    paths = derive.build("alicloud", "2026-12-03", data)
    assert sorted(p.name for p in paths) == regions and not [p for p in data.iterdir() if p.name.startswith(".")]
    for p in paths:
        pricecat._read.cache_clear()
        assert pricecat.load("alicloud", p.stem[len("alicloud-") :], data).rows  # each was written whole


# --- catalogs and shipped data --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, names",
    [
        ("", "is empty"),
        ("rows: [\n", "not valid YAML"),
        ("cloud: alicloud\nregion: cn-hangzhou\ncurrency: CNY\nas_of: x\nbuilt: y\n", "rows: missing"),
        (None, "rows.0.key: missing"),
        ("abc", "rows.0.price"),
    ],
)
def test_bad_catalog(tmp_path, text, names):
    from gpufleet.cost import catalog as pricecat

    src = yaml.safe_load((pricecat.DATA / "alicloud-cn-hangzhou.yaml").read_text())
    if text is None:
        del src["rows"][0]["key"]
        text = yaml.safe_dump(src)
    elif text == "abc":
        src["rows"][0]["price"] = "abc"
        text = yaml.safe_dump(src)
    (tmp_path / "alicloud-cn-hangzhou.yaml").write_text(text)
    pricecat._read.cache_clear()
    with pytest.raises(UserError) as exc:
        pricecat.load("alicloud", "cn-hangzhou", tmp_path)
    assert names in str(exc.value) and "cost/data/alicloud-cn-hangzhou.yaml" in str(exc.value)


@pytest.mark.parametrize(
    "module, attr, shown",
    [
        ("gpufleet.sizing.models", "CATALOG", "sizing/data/models.yaml"),
    ],
)
@pytest.mark.parametrize("content", [None, "models: {a: [\n", "x: 1\n"])
def test_shipped_data_missing_or_truncated(tmp_path, monkeypatch, module, attr, shown, content):
    import importlib

    mod = importlib.import_module(module)
    p = tmp_path / "data.yaml"
    if content is not None:
        p.write_text(content)
    monkeypatch.setattr(mod, attr, p)
    for cached in ("_equiv", "catalog"):
        if hasattr(getattr(mod, cached, None), "cache_clear"):
            getattr(mod, cached).cache_clear()
    with pytest.raises(UserError) as exc:
        (mod._equiv if hasattr(mod, "_equiv") else mod.catalog)()
        if hasattr(mod, "_equiv"):
            mod.compare(STACK, ["tencentcloud"], ["payg"], None, [])
    assert shown in str(exc.value) or str(p) in str(exc.value)
    for cached in ("_equiv", "catalog"):
        if hasattr(getattr(mod, cached, None), "cache_clear"):
            getattr(mod, cached).cache_clear()


@pytest.mark.parametrize("content", ["", "regions: [\n", "regions: {cn-hangzhou: {zones: 1}}\n"])
def test_stacks_data_cloud_yaml_truncated(tmp_path, monkeypatch, content):
    from gpufleet.stacks import catalog

    (tmp_path / "alicloud.yaml").write_text(content)
    monkeypatch.setattr(catalog, "DATA", tmp_path)
    monkeypatch.setattr(catalog, "_catalog", lambda cloud: tmp_path / f"{cloud}.yaml")  # the profile's catalog path
    catalog._read.cache_clear()
    try:
        with pytest.raises(UserError) as exc:  # named by its path (a package file's: files.package_file)
            catalog.regions("alicloud")
        assert str(exc.value.problems[0]).startswith(f"{os.path.realpath(tmp_path / 'alicloud.yaml')}:"), exc.value
    finally:
        catalog._read.cache_clear()


@pytest.mark.parametrize("content", [b"", b"{", b'{"images": []}', b"\xff", b'{"images": {"r": {"regions": {"a": {"b": {}}}}}}'])
def test_lock_json_truncated(tmp_path, content):
    from gpufleet.stacks import lock

    p = tmp_path / "lock.json"
    p.write_bytes(content)
    with pytest.raises(UserError) as exc:
        lock.load(p)
    assert str(p) in str(exc.value)


@pytest.mark.parametrize("target", ["lock.json", "../moved/lock.json"], ids=["loop", "dangling"])
def test_a_lock_json_link_that_does_not_resolve_is_named_not_read_as_no_lock(project, tmp_path, capsys, target):
    """path.exists() took a link loop or a dangling link for no lock: `image lock show --lock` printed an empty lock
    (exit 0), and preview told the user to build an image rather than fix the link."""
    lock = project / "images" / "lock.json"
    lock.unlink()
    lock.symlink_to(target)
    r = refused(["preview", "--stack", STACK], capsys, project, names="images/lock.json: is a symbolic link that")
    assert "gpufleet image build" not in r.text, r.text
    link = tmp_path / "mine.json"
    link.symlink_to(lock)
    refused(["image", "lock", "show", "--lock", link, "--json"], capsys, project, tmp_path, names=f"{link}: is a symbolic link")


NO_LOCK = (
    "does not exist; build an image and lock it with `gpufleet image lock record` (docs/images.md); to preview and cost "
    "before any image is built, copy images/lock.json from a project `gpufleet init --placeholder-images` made"
)


def test_a_missing_project_lock_is_named_with_its_fix_not_read_as_an_empty_one(project, capsys):
    """A project without images/lock.json: preview said `no image of recipe 'cuda13-vllm' in lock.json (locked: none)`
    and `image lock show` printed an empty table (exit 0), where `image lock show --lock nope.json` was refused."""
    lock = project / "images" / "lock.json"
    lock.unlink()
    r = refused(["preview", "--stack", STACK], capsys, project)
    assert f"{STACK_FILE}: fleet.image.recipe: {lock} {NO_LOCK}" in r.err, r.err
    assert "locked: none" not in r.err and "no image of recipe" not in r.err
    for argv in (["image", "lock", "show"], ["image", "lock", "show", "--json"]):
        r = refused(argv, capsys, project)
        assert r.out == "" and r.err.strip().splitlines() == [f"error {lock}: {NO_LOCK}"], r.text
    r = refused(["image", "lock", "show", "--lock", project / "nope.json"], capsys, project)
    assert f"--lock: {project / 'nope.json'}: no such file: " in r.err  # as before: the lock the user named


def test_catalog_refresh_of_tencent_takes_no_placeholder_image(project):
    """The checkout's lock holds placeholders only: their ids are no image the price API knows, so --image-id is asked
    for; a built image of the region is taken."""
    import json

    from gpufleet.components.tencentcloud import prices

    with pytest.raises(UserError) as exc:
        prices._image_id("ap-guangzhou")
    assert "holds no built image for tencentcloud ap-guangzhou" in str(exc.value.problems[0])
    assert "give --image-id" in str(exc.value.problems[0])
    path = project / "images" / "lock.json"
    doc = json.loads(path.read_text())
    doc["images"]["cuda13-vllm"]["regions"]["tencentcloud"]["ap-guangzhou"].update(image_id="img-9qabwvbn", placeholder=False)
    path.write_text(json.dumps(doc))
    assert prices._image_id("ap-guangzhou") == "img-9qabwvbn"


def test_catalog_refresh_of_tencent_without_a_project_lock_says_the_lock_is_missing(project, monkeypatch):
    """Tencent's price inquiry takes an image of the region, looked up in the project's lock unless --image-id gives it:
    a missing lock read as one holding no image for the region."""
    from gpufleet.components.tencentcloud import prices

    (project / "images" / "lock.json").unlink()
    with pytest.raises(UserError) as exc:
        prices._image_id("ap-guangzhou")
    assert [str(p) for p in exc.value.problems] == [
        f"--image-id: needed: no image for tencentcloud ap-guangzhou: {project / 'images' / 'lock.json'} {NO_LOCK}"
    ]


def test_lock_json_keys_it_does_not_hold_are_named_with_the_key_meant(tmp_path):
    # a hand-edited key image lock record does not write (a typo: imageid, pin) was passed over
    from gpufleet.stacks import lock

    doc = json.loads((ROOT / "images" / "lock.json").read_text())
    entry = doc["images"]["cuda13-vllm"]
    entry["regions"]["alicloud"]["cn-hangzhou"]["imageid"] = "m-x"
    entry["pin"] = {}
    doc["image"] = {}
    p = tmp_path / "lock.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(UserError) as exc:
        lock.load(p)
    assert [(x.path, x.message.split(";")[0]) for x in exc.value.problems] == [
        ("image", "unknown key"),
        ("images.cuda13-vllm.pin", "unknown key"),
        ("images.cuda13-vllm.regions.alicloud.cn-hangzhou.imageid", "unknown key"),
    ]
    assert "(did you mean 'image_id'?)" in exc.value.problems[2].message
    assert lock.load(ROOT / "images" / "lock.json")  # the shipped lock holds only keys it writes


def test_lock_json_clouds_and_regions_no_stack_names_are_refused(tmp_path):
    """Review F11: regions.aws and regions.alicloud.mars-1 were read silently, where a key one level up was refused."""
    from gpufleet.stacks import lock

    doc = json.loads((ROOT / "images" / "lock.json").read_text())
    regions = doc["images"]["cuda13-vllm"]["regions"]
    regions["aws"] = {}
    regions["alicloud"]["cn-hangzhuo"] = regions["alicloud"]["cn-hangzhou"]
    p = tmp_path / "lock.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(UserError) as exc:
        lock.load(p)
    assert [(x.path, x.message.split(";")[0]) for x in exc.value.problems] == [
        (
            "images.cuda13-vllm.regions.alicloud.cn-hangzhuo",
            "'cn-hangzhuo' is not a region of stacks/data/alicloud.yaml (did you mean 'cn-hangzhou'?)",
        ),
        ("images.cuda13-vllm.regions.aws", "unknown cloud 'aws' (choose one of: alicloud, tencentcloud)"),
    ]
    assert all("`gpufleet image lock record` writes" in x.message for x in exc.value.problems)


@pytest.mark.parametrize("content", ["", "{", "[]"])
def test_a_lock_json_that_is_no_lock_says_how_to_restore_it(project, capsys, content):
    """Review F10: an empty lock.json read `images/lock.json:1:1: not valid JSON: Expecting value`, no fix."""
    (project / "images" / "lock.json").write_text(content)
    r = refused(["preview", "--stack", STACK], capsys, project, names="images/lock.json")
    assert "; restore images/lock.json from your copy of it (e.g. `git checkout -- images/lock.json`), or remove it" in r.err
    assert "lock each image again with `gpufleet image lock record`" in r.err  # a project need not be in git


def test_a_lock_given_that_is_no_lock_is_named_with_its_own_fix(project, capsys, tmp_path):
    """Review L6: `image lock show --lock examples` (a folder) said to restore images/lock.json with git: another file,
    and a project need not be in git."""
    (tmp_path / "empty.json").write_text("")
    for given in (tmp_path, tmp_path / "empty.json"):
        r = refused(["image", "lock", "show", "--lock", given], capsys, project, tmp_path, names=f"error {given}")
        assert r.err.rstrip().endswith("; give a lock file `gpufleet image lock record --lock` wrote"), r.err
        assert "images/lock.json" not in r.err and "git" not in r.err


@pytest.mark.parametrize("pins", [{}, {"vllm": "0.1.0"}], ids=["no pins", "other pins"])
def test_a_built_lock_entry_that_records_no_pins_is_refused_not_passed(project, capsys, pins):
    """A lock entry marked built (placeholder false) whose recipe records no pins passed `preview` without a word:
    the check of the recipe's pins against the image's was skipped (other pins were refused, as they are still)."""
    path = project / "images" / "lock.json"
    doc = json.loads(path.read_text())
    doc["images"]["cuda13-vllm"]["pins"] = pins
    doc["images"]["cuda13-vllm"]["regions"]["alicloud"]["cn-hangzhou"].update(image_id="m-abc123", placeholder=False)
    path.write_text(json.dumps(doc))
    r = refused(["preview", "--stack", "alicloud-cn-hangzhou-prod"], capsys, project)
    if pins:
        assert "the locked image m-abc123 was built with other pins" in r.err, r.err
    else:
        assert "images/lock.json: images.cuda13-vllm.regions.alicloud.cn-hangzhou: m-abc123 is not marked placeholder" in r.err
        assert "`gpufleet image lock record --recipe cuda13-vllm --manifest" in r.err, r.err
    refused(["check", "--cloud", "alicloud"], capsys, project, names="m-abc123")


# --- image ids, tags ----------------------------------------------------------------------------------


@pytest.mark.parametrize("image_id", ["m-", "m-1\nx", "m-ABC", "img-", "m-1 "])
def test_bad_image_ids_not_locked(tmp_path, capsys, image_id):
    from gpufleet.images.recipes import load_recipe
    from gpufleet.stacks import lock

    r = load_recipe("cuda13-vllm")
    images = {c: {reg: (image_id if c == "alicloud" else "img-abc123") for reg in rs} for c, rs in r.regions.items()}
    problems = lock.image_problems(r, images)
    assert any("is not an alicloud image id" in m for _, m in problems), problems


@pytest.mark.parametrize(
    "cloud_stack, count",
    [("alicloud-cn-hangzhou-dev", 19), ("tencentcloud-ap-guangzhou-dev", 49)],
)
def test_tags_beyond_the_clouds_limit(project, capsys, cloud_stack, count):
    doc = yaml.safe_load((project / f"stacks/Pulumi.{cloud_stack}.yaml").read_text())
    doc["config"]["gpufleet:fleet"]["tags"] = {f"k{i}": "v" for i in range(count)}
    (project / f"stacks/Pulumi.{cloud_stack}.yaml").write_text(yaml.safe_dump(doc))
    refused(["preview", "--stack", cloud_stack], capsys, project, names="fleet.tags")


@pytest.mark.parametrize("key", ["aliyun:x", "acs:x", "http://x"])
def test_alicloud_reserved_tag_keys(project, capsys, key):
    put_fleet(project, lambda f: f.update(tags={key: "v"}))
    refused(["preview", "--stack", STACK], capsys, project, names="fleet.tags")


# --- exit codes ---------------------------------------------------------------------------------------


def test_loadtest_all_failed_exits_1(tmp_path, capsys):
    from gpufleet.cli.loadtest import failed_levels

    assert failed_levels({"levels": [{"concurrency": 1, "requests": 5, "errors": 5}]}) == [1]
    assert failed_levels({"levels": [{"concurrency": 1, "requests": 5, "errors": 4}]}) == []


def test_loadtest_every_request_500_exits_1(tmp_path, capsys):
    """A real run against the fake OpenAI server answering HTTP 500 to every request: exit 1, result still written."""
    sys.path.insert(0, str(ROOT / "tests" / "sizing"))
    try:
        from fake_openai import Behaviour, FakeServer
    finally:
        sys.path.pop(0)
    out = tmp_path / "r.json"
    with FakeServer(Behaviour(fail_every=1)) as server:
        r = run_cli(
            [
                "loadtest",
                "--url",
                server.url,
                "--model",
                "fake-model",
                "--concurrency",
                "1,2",
                "--requests",
                "3",
                "--save-json",
                out,
            ],
            capsys,
        )
    assert r.code == 1 and "no successful request at concurrency 1, 2" in r.text, r.text
    assert [lv["errors"] for lv in json.loads(out.read_text())["levels"]] == [3, 3]


def test_loadtest_output_checked_before_the_run(tmp_path, capsys):
    refused(
        ["loadtest", "--url", "http://127.0.0.1:9", "--model", "m", "-o", "/dev/full"], capsys, tmp_path, names="regular file"
    )
    refused(["loadtest", "--url", "http://127.0.0.1:9", "--model", "m", "-o", tmp_path / "no" / "x"], capsys, tmp_path)
    same = ["-o", tmp_path / "lt.json", "--save-json", tmp_path / ".." / tmp_path.name / "lt.json", "--json"]
    refused(["loadtest", "--url", "http://127.0.0.1:9", "--model", "m", *same], capsys, tmp_path, names="is also --save-json")


@pytest.mark.parametrize("clouds", [",", " , ", ""])
def test_compare_clouds_empty(project, capsys, clouds):
    refused(["cost", "compare", "--stack", STACK, "--clouds", clouds], capsys, project, names="--clouds")


@pytest.mark.parametrize(
    "text, said",
    [
        ("config:\n", "config: is empty: a Pulumi stack file holds its settings under `config:`"),
        ("secretsprovider: passphrase\n", "config: missing: a Pulumi stack file holds its settings under `config:`"),
        ("config:\n  gpufleet:fleet:\n", "config.gpufleet:fleet: is empty: put the fleet spec under this key"),
        ("config:\n  alicloud:region: cn-hangzhou\n", "config.gpufleet:fleet: missing: put the fleet spec under this key"),
    ],
)
def test_an_empty_config_is_said_empty_not_missing(tmp_path, text, said):
    # `config:` with nothing under it (null) was reported as "config: missing"
    from gpufleet.stacks import loader

    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "Pulumi.x-dev.yaml").write_text(text)
    with pytest.raises(UserError) as exc:
        loader.load_fleet("x-dev", tmp_path)
    assert said in str(exc.value)


def test_write_folder_whose_rename_fails_names_what_was_replaced_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    """The renames of write_folder were unprotected: a failing os.replace was a traceback, one file new, the next old,
    and its temporary file left. Now a UserError (exit 2) says which files were replaced and which were not (renames
    one at a time cannot be atomic), and the temporary files not renamed are removed."""
    from gpufleet import files

    for name in ("a.yaml", "b.yaml", "c.yaml"):
        (tmp_path / name).write_text("old\n")
    asked = rename_fails_at(monkeypatch, 2)
    with pytest.raises(UserError) as exc:
        files.write_folder(tmp_path, {"a.yaml": "new\n", "b.yaml": "new\n", "c.yaml": "new\n"}, flag="catalog build")
    monkeypatch.undo()
    assert asked == ["a.yaml", "b.yaml"]
    (problem,) = exc.value.problems
    assert str(problem) == (
        f"catalog build: {tmp_path}: cannot rename b.yaml into place: Operation not permitted; replaced: a.yaml; "
        "not replaced (each as it was): b.yaml, c.yaml; the files are renamed into place one at a time, which cannot be "
        "atomic: write them again once that is fixed"
    )
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == {"a.yaml": "new\n", "b.yaml": "old\n", "c.yaml": "old\n"}


def test_a_failed_rename_is_exit_2_without_a_traceback_in_every_write_folder_user(tmp_path, monkeypatch, capsys):
    """image render --out-dir (and catalog build, monitoring --out-dir: the same write_folder) ended in a
    PermissionError traceback when a rename failed."""

    out = tmp_path / "scripts"
    rename_fails_at(monkeypatch, 3)
    r = run_cli(["image", "render", "--recipe", "cuda13-vllm", "--out-dir", str(out)], capsys)
    assert r.code == 2 and "Traceback" not in r.text, r.text
    assert f"--out-dir: {out}: cannot rename " in r.err and "replaced: 01-" in r.err, r.err
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == []
    assert len(list(out.iterdir())) == 2  # the two renamed before the failure; said so above
