"""The CLI conventions over every command (issue 20 item 3; docs/cli.md): exit codes, option descriptions, examples in
each help that parse and run, shell completion, NO_COLOR and output without a terminal."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .inputs_helpers import ROOT, run_cli

GF = str(Path(sys.executable).parent / "gpufleet")
DEV = "alicloud-cn-hangzhou-dev"
FIT_OK = ["plan", "fit", "--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "A10"]


def commands(groups: bool = False):
    """(path, click command) of every leaf command of `gpufleet` (or of every group, the root's path ""), all
    modules registered."""
    import typer.main

    from gpufleet.cli import _register, app

    _register([])
    found = []

    def walk(cmd, path):
        subs = getattr(cmd, "commands", None)
        if subs:
            if groups:
                found.append((path, cmd))
            for name, sub in subs.items():
                walk(sub, [*path, name])
        elif not groups:
            found.append((path, cmd))

    walk(typer.main.get_command(app), [])
    return found


COMMANDS = {" ".join(p): c for p, c in commands()}
GROUPS = {" ".join(p): c for p, c in commands(groups=True)}


# --- exit codes: 0 done, 1 a check failed, 2 bad input ------------------------------------------------------

FAILURES = [  # (argv, code, what the output names)
    (["nope"], 2, "No such command"),
    (["init", "--name", "a b", "/nonexistent-folder/p"], 2, "not a Pulumi project name"),
    (["preview", "--stack", "alicloud-cn-hangzho-dev"], 2, "did you mean"),
    (["preview", "--stack", DEV, "--format", "yaml"], 2, "unknown format"),
    (["preview", "--stack", DEV, "--json", "-o", "/nonexistent-folder/x.json"], 2, "-o"),
    (["plan", "fit", "--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "T4"], 1, "does not fit"),
    (["plan", "fit", "--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "T5"], 2, "unknown 'T5'"),
    (["plan", "fit", "--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "A10", "--gpus", "0"], 2, "--gpus"),
    (["plan", "capacity", "--peak-qps", "40", "--qps-per-node", "6", "--stack", DEV], 1, "fleet.replicas.max"),
    (["plan", "capacity", "--peak-qps", "40"], 2, "give exactly one"),
    (
        ["plan", "scaling", "--stack", DEV, "--qps-per-node", "1", "--profile", "step", "--slo-ttft-ms", "1"],
        1,
        "over the TTFT SLO",
    ),
    (["plan", "scaling", "--stack", DEV, "--qps-per-node", "1", "--profile", "weekly"], 2, "unknown 'weekly'"),
    (["image", "check", "--recipe", "cuda13-vllm", "--gpu", "V100-16G"], 1, "does not serve V100-16G"),
    (["image", "check", "--recipe", "cuda14-vllm"], 2, "no such image recipe"),
    (["image", "check", "--gpu", "V100-1"], 2, "unknown GPU kind"),
    (["image", "build", "--recipe", "cuda13-vllm"], 2, "--host"),
    (["image", "render", "--recipe", "cuda13-vllm"], 2, "--out-dir"),
    (["image", "pipeline", "--stack", "no-such-images-stack"], 2, "Pulumi.no-such-images-stack.yaml"),
    # a near-miss of an images stack gets the did-you-mean `preview --stack` gives (issue 27)
    (["image", "pipeline", "--stack", "example-cuda13-vllm-alicloudd"], 2, "did you mean 'example-cuda13-vllm-alicloud'"),
    (["image", "check", "--format", "csv"], 2, "unknown format"),
    (["image", "lock", "show", "--format", "csv"], 2, "unknown format"),
    (["image", "lock", "record", "-r", "cuda13-vllm", "-m", "/nonexistent/manifest.json"], 2, "manifest"),
    (["region", "new", "--cloud", "alicloud", "--region", "cn-hangzhou", "--env", "dev", "--dry-run"], 2, "already exists"),
    (["region", "new", "--cloud", "alicloud", "--region", "cn-hangzho", "--env", "dev"], 2, "did you mean"),
    (["check", "--cloud", "alicloud", "--format", "xml"], 2, "xml"),
    (["cost", "estimate", "--stack", DEV, "--budget", "1", "--allow-unpriced"], 1, "over budget"),
    # dev's total has unpriced lines (≥): --budget fails it whatever the amount, unless --allow-unpriced (issue 16 item 2)
    (["cost", "estimate", "--stack", DEV, "--budget", "1000000"], 1, "--allow-unpriced"),
    (["cost", "estimate", "--stack", DEV, "--budget", "lots"], 2, "--budget"),
    (["cost", "compare", "--stack", DEV, "--format", "xlsx"], 2, "-o FILE.xlsx"),
    (["cost", "diff", "--stack", DEV], 2, "give --stack twice"),
    (["cost", "diff", "--stack", DEV, "--baseline", "/nonexistent/before.json"], 2, "cost estimate --stack S --format json"),
    (["cost", "commit", "--stack", DEV, "--format", "csv"], 2, "unknown format"),
    (["cost", "budget", "--budgets", "/nonexistent/budgets.yaml"], 2, "no such file: write one: YAML `budgets:"),
    (
        ["cost", "reconcile", "--stack", DEV, "--bill", "/nonexistent/bill.csv"],
        2,
        "no such file: give the billing-detail CSV of the month to reconcile, exported on Alibaba from the Expenses",
    ),
    (["cost", "tokens", "--stack", DEV, "--from-loadtest", "/nonexistent/lt.json"], 2, "--save-json"),
    (
        ["cost", "tokens", "--stack", DEV, "--from-loadtest", "examples/loadtest-example.json", "--utilization", "1.5"],
        2,
        "--utilization",
    ),
    (["cost", "report"], 2, "give --all"),
    (["cost", "report", "--all", "--by", "owner"], 2, "cost-center"),
    (["catalog", "build", "--cloud", "aws"], 2, "unknown cloud"),
    (["catalog", "refresh", "--cloud", "alicloud", "--region", "cn-hangzhou"], 2, "ALIBABA_CLOUD_ACCESS_KEY_ID"),
    (["loadtest", "--url", "ftp://x", "--model", "m"], 2, "--url"),
    # nothing listening: the URL is wrong (2); a server that answers every request with an error is exit 1
    # (tests/sizing/test_loadtest.py)
    (["loadtest", "--url", "http://127.0.0.1:9", "--model", "m", "--concurrency", "1", "--requests", "1"], 2, "--url"),
    (["completion", "tcsh"], 2, "unknown shell"),
    (["monitoring", "--stack", DEV, "--out-dir", "-"], 2, "give a folder"),
    # a stack without a rollout section, or no rollout started (tests/rollout/ runs them against live servers)
    (["rollout", "start", "--stack", DEV], 2, "gpufleet:fleet.rollout: missing"),
    (["rollout", "status", "--stack", DEV], 2, "no rollout recorded"),
    (
        ["rollout", "step", "--stack", DEV, "--current-url", "ftp://x", "--candidate-url", "http://127.0.0.1:9"],
        2,
        "--current-url",
    ),
    (["rollout", "promote", "--stack", DEV, "--current-url", "http://a:1", "--candidate-url", "http://b:1"], 2, "rollout"),
    (["rollout", "abort", "--stack", DEV], 2, "no rollout in progress"),
    (["rollout", "finish", "--stack", DEV], 2, "no rollout in progress"),
]


@pytest.mark.parametrize(("argv", "code", "names"), FAILURES, ids=[" ".join(a[:3]) + f" -> {c}" for a, c, _ in FAILURES])
def test_exit_codes(argv, code, names, capsys, project, monkeypatch):
    for var in ("ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET"):
        monkeypatch.delenv(var, raising=False)
    r = run_cli(argv, capsys)
    assert r.code == code, r.text
    assert names in r.text, r.text
    assert "Traceback" not in r.text


def test_a_ctrl_c_exits_130_without_a_traceback(capsys, monkeypatch):
    """docs/cli.md: 130 is "interrupted (Ctrl-C)". In a command typer turns the KeyboardInterrupt into 130 itself;
    one that comes before typer's handler (here in the argument check every run starts with) is ended the same way by
    gpufleet, which says "aborted" instead of the traceback Python would print."""
    from gpufleet import cli
    from gpufleet.stacks import lock

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(lock, "lock_path", interrupted)
    r = run_cli(["image", "lock", "show"], capsys)
    assert r.code == 130 and r.out == "" and "Traceback" not in r.err, r.text
    monkeypatch.setattr(cli, "argv_problems", interrupted)
    r = run_cli(["image", "lock", "show"], capsys)
    assert r.code == 130 and r.out == "" and r.err == "aborted\n", r.text


def test_every_command_has_a_failure_in_the_table():
    covered = {p for p in COMMANDS for argv, _, _ in FAILURES if argv[: len(p.split())] == p.split()}
    assert sorted(set(COMMANDS) - covered) == []


# --- help: every option described, boolean flags shown as flags, an Examples paragraph ----------------------

# Commands left out of the help checks below (none: cost, catalog and loadtest joined them).
OTHERS: tuple[str, ...] = ()


def _own(path: str) -> bool:
    return not (path + " ").startswith(OTHERS)


def _leaf(line: str) -> str:
    """The command an example line runs (the longest command path its words start with)."""
    words = shlex.split(line)[1:]
    return max((p for p in COMMANDS if words[: len(p.split())] == p.split()), key=len)


@pytest.mark.parametrize("path", [p for p in COMMANDS if _own(p)])
def test_every_option_is_described_and_flags_take_no_value(path):
    cmd = COMMANDS[path]
    undescribed = [p.opts for p in cmd.params if p.param_type_name == "option" and not p.hidden and not (p.help or "").strip()]
    assert undescribed == [], f"gpufleet {path}: options without a description"
    for p in cmd.params:
        if p.param_type_name == "option" and p.type.name == "boolean":
            assert p.is_flag, f"gpufleet {path} {p.opts}: a boolean shown as taking a value"


FLOAT_OPTIONS = [
    (path, p.opts[0])
    for path, cmd in COMMANDS.items()
    for p in cmd.params
    if p.param_type_name == "option" and p.type.name in ("float", "float range")
]


def test_there_are_float_options_to_check():
    assert ("plan fit", "--cpu-offload-gb") in FLOAT_OPTIONS and ("plan scaling", "--reclaim-per-hour") in FLOAT_OPTIONS


@pytest.mark.parametrize(("path", "flag"), FLOAT_OPTIONS)
@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_every_float_option_refuses_non_finite_numbers(path, flag, value, capsys):
    # given first, the option is checked before anything the command still lacks (options.real: click lets nan pass)
    r = run_cli([*path.split(), flag, value], capsys)
    assert r.code == 2 and f"'{flag}'" in r.text and "Traceback" not in r.text, r.text
    assert "not a finite number" in r.text or "not in the range" in r.text, r.text


TEXT_OPTIONS = [
    (path, p.opts[0])
    for path, cmd in COMMANDS.items()
    for p in cmd.params
    if p.param_type_name == "option" and not getattr(p, "is_flag", False) and p.opts[0].startswith("--")
]


def test_there_are_text_options_to_check():
    assert ("loadtest", "--model") in TEXT_OPTIONS and ("rollout abort", "--reason") in TEXT_OPTIONS


@pytest.mark.parametrize(("path", "flag"), TEXT_OPTIONS)
def test_every_option_refuses_bytes_that_are_not_utf8(path, flag, capsys):
    # the byte 0xff of a non-UTF-8 terminal, as Python keeps it (a lone surrogate): it reached files, tables and
    # requests, which cannot carry it (loadtest --model printed a UnicodeEncodeError traceback)
    for argv in ([*path.split(), flag, "caf\udcff"], [*path.split(), f"{flag}=caf\udcff"]):
        r = run_cli(argv, capsys)
        assert r.code == 2 and f"error {flag}: holds bytes that are not UTF-8 text" in r.err, r.text
        assert "Traceback" not in r.text


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["caf\udce9", "--json"], "argument 1"),  # nothing before it: no option it could be the value of
        (["preview", "--stack", DEV, "caf\udce9"], "argument 4"),  # after a value, not after an option
        (["preview", "--stack", "caf\udce9"], "--stack"),
    ],
)
def test_an_argument_that_is_not_utf8_is_named_by_its_option_or_its_place(capsys, argv, name):
    r = run_cli(argv, capsys)
    assert r.code == 2 and r.out == "" and "Traceback" not in r.text, r.text
    assert r.err == f"error {name}: holds bytes that are not UTF-8 text: write it in UTF-8\n", r.err


def examples(cmd) -> list[str]:
    """The `gpufleet ...` lines of the Examples paragraph of a command's help (comments after '  #' dropped)."""
    text = cmd.help or ""
    assert "\b\n    Examples:" in text or "\b\nExamples:" in text, "no \\b Examples paragraph"
    block = text.split("Examples:", 1)[1]
    lines = []
    for line in block.splitlines()[1:]:
        if not line.strip():
            break
        line = re.split(r"\s{2,}#| [>|] ", line.strip())[0].strip()  # the command, without a comment or redirection
        if line.startswith("gpufleet "):
            lines.append(line)
    return lines


# Examples that cannot run here, and why (each must still parse against its command's options).
NOT_RUN = {
    "gpufleet image build -r cuda13-vllm -H 203.0.113.7 -k ~/.ssh/builder --accept-new-host-key": "needs a builder host",
    "gpufleet plan capacity --peak-qps 40 --from-loadtest lt.json --json": "needs a load test result",
    "gpufleet image lock record -r cuda13-vllm -m build/images/cuda13-vllm-203.0.113.7.manifest.json --outputs images.json": (
        "needs a build manifest"
    ),
    "gpufleet image lock record -r cuda13-vllm -m manifest.json --image alicloud/cn-hangzhou=m-bp1abc": "needs a build manifest",
    "gpufleet loadtest --url http://10.0.0.5:8000 --model Qwen/Qwen2.5-7B-Instruct --slo-p95-ms 8000": "needs a serving node",
    "gpufleet loadtest --url http://10.0.0.5:8000 --model Qwen/Qwen2.5-7B-Instruct -s alicloud-cn-hangzhou-prod --save-json lt.json": (
        "needs a serving node"
    ),
    "gpufleet cost tokens -s alicloud-cn-hangzhou-prod --from-loadtest lt.json --utilization 0.2,0.6 --json": (
        "needs a load test result (the loadtest --save-json lt.json example)"
    ),
    "gpufleet cost diff --stack alicloud-cn-hangzhou-prod --baseline before.json --format markdown": (
        "needs an estimate saved before a change (the comment line above it)"
    ),
    "gpufleet catalog refresh --cloud alicloud --region cn-hangzhou": "needs Alibaba Cloud credentials and the network",
    "gpufleet catalog refresh --cloud tencentcloud --region ap-guangzhou": "needs Tencent Cloud credentials and the network",
    "gpufleet rollout step --stack examples/Pulumi.alicloud-cn-hangzhou-prod-rollout.yaml --current-url http://10.20.1.11:8000 --candidate-url http://10.20.2.7:8000 "
    "--api-key-env VLLM_API_KEY": "needs both groups serving",
    "gpufleet rollout promote --stack examples/Pulumi.alicloud-cn-hangzhou-prod-rollout.yaml --current-url http://10.20.1.11:8000 --candidate-url http://10.20.2.7:8000 "
    "--api-key-file ~/.gpufleet/prod-key": "needs both groups serving",
    "gpufleet rollout status --stack examples/Pulumi.alicloud-cn-hangzhou-prod-rollout.yaml --format json": "needs a rollout started (the start example)",
    'gpufleet rollout abort --stack examples/Pulumi.alicloud-cn-hangzhou-prod-rollout.yaml --reason "p99 up in the dashboard"': "needs a rollout started",
    "gpufleet rollout finish --stack examples/Pulumi.alicloud-cn-hangzhou-prod-rollout.yaml": "needs a promoted rollout",
}
OWN_EXAMPLES = list(
    dict.fromkeys((_leaf(line), line) for p, c in [*COMMANDS.items(), *GROUPS.items()] if _own(p) for line in examples(c))
)


@pytest.mark.parametrize("path", [p for p in [*COMMANDS, *GROUPS] if _own(p)])
def test_every_command_and_group_shows_examples(path):
    lines = examples({**GROUPS, **COMMANDS}[path])
    assert lines, f"gpufleet {path}: no example"
    assert all(f"{line} ".startswith(f"gpufleet {path} ".replace("  ", " ")) for line in lines), lines


@pytest.mark.parametrize(("path", "line"), OWN_EXAMPLES, ids=[line for _, line in OWN_EXAMPLES])
def test_examples_parse_against_the_options(path, line, monkeypatch):
    """The command's own (click) parser accepts every example: option names, typed values, required options, and
    --stack's check of a name or a file (from the project root, as the examples are written)."""
    monkeypatch.chdir(ROOT)
    cmd = COMMANDS[path]
    ctx = cmd.make_context(cmd.name, shlex.split(line)[1 + len(path.split()) :])
    assert ctx.params


def test_the_not_run_list_names_real_examples():
    assert set(NOT_RUN) <= {line for _, line in OWN_EXAMPLES}


RUN = [line for _, line in OWN_EXAMPLES if line not in NOT_RUN]


@pytest.mark.parametrize("line", RUN)
def test_examples_run(line, project, tmp_path):
    """Each offline example, as printed, in a copy of the project (region new writes a stack there): exit 0."""
    shutil.copytree(ROOT / "examples", project / "examples")  # as `init --examples` writes them
    env = {**os.environ, "GPUFLEET_PROJECT": str(project), "COLUMNS": "120"}
    done = subprocess.run([GF, *shlex.split(line)[1:]], cwd=project, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{line}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    assert "Traceback" not in done.stderr


# --- -o writes the --format output; other written files have their own names --------------------------------


def test_o_writes_the_format_output(capsys, project, tmp_path):
    as_json, table = tmp_path / "fit.json", tmp_path / "fit.txt"
    assert run_cli([*FIT_OK, "--json", "-o", as_json], capsys).code == 0
    printed = run_cli([*FIT_OK, "--format", "json"], capsys)
    assert json.loads(as_json.read_text()) == json.loads(printed.out)
    assert run_cli([*FIT_OK, "-o", table], capsys).code == 0
    text = table.read_text()
    assert "fits" in text and "\x1b[" not in text
    odd = tmp_path / "a\nb\x1b[2J.json"  # a name a shell can give: written as named, shown escaped on one line
    r = run_cli([*FIT_OK, "--json", "-o", odd], capsys)
    assert r.code == 0 and odd.exists() and "\x1b" not in r.err and "wrote " + str(tmp_path) + "/a\\nb\\x1b[2J.json" in r.err


def test_render_writes_a_folder_under_its_own_name(capsys, tmp_path):
    assert run_cli(["image", "render", "-r", "cuda13-vllm", "--out-dir", tmp_path / "new"], capsys).code == 0
    assert run_cli(["image", "render", "-r", "cuda13-vllm", "--out", tmp_path / "old"], capsys).code == 0  # old spelling
    assert sorted(p.name for p in (tmp_path / "new").iterdir()) == sorted(p.name for p in (tmp_path / "old").iterdir())
    r = run_cli(["image", "render", "-r", "cuda13-vllm", "-o", tmp_path / "x"], capsys)
    assert r.code == 2  # -o is the --format output; render has none


def test_images_stack_by_name_or_path(capsys):
    by_name = run_cli(["image", "pipeline", "--stack", "example-cuda13-vllm-alicloud", "--json"], capsys)
    path = ROOT / "src" / "gpufleet" / "examples" / "images" / "Pulumi.example-cuda13-vllm-alicloud.yaml"
    by_path = run_cli(["image", "pipeline", "--stack-file", path, "--format", "json"], capsys)
    assert by_name.code == by_path.code == 0
    assert json.loads(by_name.out)["resources"] == json.loads(by_path.out)["resources"]


# --- shell completion, answered by the real bash ---------------------------------------------------------------


def _bash_complete(words: list[str]) -> list[str]:
    script = (
        'eval "$(gpufleet completion bash)"\n'
        f"COMP_WORDS=({' '.join(shlex.quote(w) for w in words)}); COMP_CWORD={len(words) - 1}\n"
        '_gpufleet_completion gpufleet; printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    env = {**os.environ, "PATH": f"{Path(GF).parent}:{os.environ['PATH']}", "GPUFLEET_PROJECT": str(ROOT)}
    done = subprocess.run(["bash", "--norc", "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [w for w in done.stdout.splitlines() if w]


def test_bash_completes_commands_options_formats_and_stack_names():
    assert _bash_complete(["gpufleet", "pre"]) == ["preview"]
    assert "--format" in _bash_complete(["gpufleet", "plan", "fit", "--for"])
    assert _bash_complete(["gpufleet", "preview", "--format", ""]) == ["table", "json"]
    stacks = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in (ROOT / "stacks").glob("Pulumi.alicloud-*.yaml"))
    assert sorted(_bash_complete(["gpufleet", "cost", "estimate", "--stack", "alicloud-"])) == stacks
    assert sorted(_bash_complete(["gpufleet", "preview", "--stack", "alicloud-"])) == stacks
    # a prefix, as bash's own completion (compgen -W) completes words: not every name that holds the text
    assert _bash_complete(["gpufleet", "preview", "--stack", "alicloud-cn-hangzhou-p"]) == ["alicloud-cn-hangzhou-prod"]
    assert _bash_complete(["gpufleet", "preview", "--stack", "prod"]) == []
    recipes = sorted(p.stem for p in (ROOT / "src" / "gpufleet" / "images" / "recipes").glob("*.yaml"))
    assert sorted(_bash_complete(["gpufleet", "image", "build", "--recipe", ""])) == recipes
    assert sorted(_bash_complete(["gpufleet", "plan", "fit", "--gpu", "V100"])) == ["V100-16G", "V100-32G"]


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_completion_scripts_for_other_shells(shell, capsys):
    r = run_cli(["completion", shell], capsys)
    assert r.code == 0 and "_GPUFLEET_COMPLETE=complete_" + shell in r.out


# --- NO_COLOR, terminals and pipes ------------------------------------------------------------------------------


def _on_pty(argv: list[str], env: dict[str, str]) -> str:
    """What `gpufleet argv` prints to a pseudo-terminal (stdout and stderr both the terminal)."""
    main, child = pty.openpty()
    proc = subprocess.Popen([GF, *argv], stdin=child, stdout=child, stderr=child, env=env, cwd=ROOT, close_fds=True)
    os.close(child)
    chunks = []
    while True:
        ready, _, _ = select.select([main], [], [], 120)
        if not ready:
            proc.kill()
            break
        try:
            data = os.read(main, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(main)
    return b"".join(chunks).decode()


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "TERM")}
    return {**env, "GPUFLEET_PROJECT": str(ROOT), "TERM": "xterm-256color", **extra}


@pytest.mark.parametrize("argv", [FIT_OK, ["preview", "--stack", DEV], ["plan", "fit", "--gpu", "T5", "--model", "x"]])
def test_no_color_means_no_escape_on_a_terminal(argv):
    coloured = _on_pty(argv, _env())
    assert "\x1b[" in coloured  # the same command on a terminal without NO_COLOR is styled: the check can fail
    plain = _on_pty(argv, _env(NO_COLOR="1"))
    assert "\x1b" not in plain, repr(plain[:400])
    assert _on_pty(argv, _env(NO_COLOR="")) == plain  # any value, even empty


def _gib_column(table: str) -> list[str]:
    return [cells[2].strip() for line in table.splitlines() if len(cells := line.split("│")) > 3 and cells[2].strip()]


def test_numbers_are_never_cut_on_a_narrow_terminal():
    narrow = _gib_column(_on_pty(FIT_OK, _env(COLUMNS="50", NO_COLOR="1")))
    wide = subprocess.run([GF, *FIT_OK], cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=120)
    assert len(narrow) >= 8 and narrow == _gib_column(wide.stdout)
    assert all(re.fullmatch(r"\d+\.\d\d", n) for n in narrow), narrow


def test_a_pipe_gets_no_escapes_and_wide_tables():
    env = _env()
    done = subprocess.run([GF, "image", "lock", "show"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "\x1b" not in done.stdout
    widths = {len(line) for line in done.stdout.splitlines()}
    assert max(widths) > 100 and "…" not in done.stdout  # laid out wider than 80 columns, nothing cut
    narrow = subprocess.run(
        [GF, "image", "lock", "show"], cwd=ROOT, env={**env, "COLUMNS": "90"}, capture_output=True, text=True, timeout=60
    )
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 90  # COLUMNS is obeyed


# --- help with -h, bare groups, --format wherever a result is printed (issue 27 item 6) ---------------------------


@pytest.mark.parametrize("path", [*GROUPS, *COMMANDS])
def test_h_is_help_everywhere(path, capsys):
    words = path.split()
    short, long = run_cli([*words, "-h"], capsys), run_cli([*words, "--help"], capsys)
    assert short.code == long.code == 0, short.text
    assert short.out == long.out and re.match(rf"Usage: \S+ {re.escape(path + ' ' if path else '')}\[OPTIONS\]", short.out)


@pytest.mark.parametrize("path", list(GROUPS))
def test_a_group_without_a_command_prints_its_help_and_exits_0(path, capsys):
    """Bare `gpufleet` (path "") and every bare group: the help on standard output, exit 0, as with --help."""
    bare, helped = run_cli(path.split(), capsys), run_cli([*path.split(), "--help"], capsys)
    assert bare.code == 0, bare.text
    assert bare.out == helped.out and bare.err == ""


def test_bare_gpufleet_exits_0_as_a_program():
    done = subprocess.run([GF], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("Usage: gpufleet ") and "Commands:" in done.stdout


# Commands that print no result, only what they did (they write files or act): no --format. Every other has one.
NO_RESULT = {
    "completion": "prints a shell script, which is its only form",
    "image build": "runs a build over SSH; its result is the manifest written with --manifest-out",
    "image render": "writes scripts into --out-dir",
    "image lock record": "writes images/lock.json (see `image lock show --format json`)",
    "catalog build": "rewrites the shipped cost/data/ catalogs of a checkout",
    "catalog refresh": "writes vendor API rows into the project's cost/catalog/",
    "region new": "writes a stack file (its text with --dry-run)",
    "init": "writes a new project's files",
    "monitoring": "writes a rule file and a dashboard into --out-dir",
}


def test_every_command_that_prints_a_result_takes_format_and_json():
    missing = [
        p
        for p, c in COMMANDS.items()
        if p not in NO_RESULT and not {"--format", "--json"} <= {o for prm in c.params for o in getattr(prm, "opts", [])}
    ]
    assert missing == []
    assert set(NO_RESULT) <= set(COMMANDS)  # the list names real commands
    no_o = [p for p, c in COMMANDS.items() if p not in NO_RESULT and "-o" not in {o for prm in c.params for o in prm.opts}]
    assert no_o == []  # and -o FILE writes that result


def test_image_check_prints_json_that_says_what_the_table_says(capsys):
    table = run_cli(["image", "check"], capsys)
    as_json = run_cli(["image", "check", "--json"], capsys)
    assert table.code == as_json.code == 0
    doc = json.loads(as_json.out)
    assert doc["ok"] and doc["recipes"]
    for r in doc["recipes"]:
        assert f"ok  {r['recipe']}: " in table.out
        for b in r["before_a_real_build"]:
            assert f"before a real build: {b['field']}: {b['message']}" in table.out
    failed = run_cli(["image", "check", "-r", "cuda13-vllm", "--gpu", "V100-16G", "--json"], capsys)
    doc = json.loads(failed.out)
    assert failed.code == 1 and not doc["ok"] and doc["recipes"][0]["problems"][0]["field"] == "recipe.gpus"


def test_image_pipeline_examples_run_from_the_project_root(capsys, monkeypatch):
    """The example images stack ships in the package with the other examples, src/gpufleet/examples/images/ (the
    checkout's examples/ links there; `init --examples` copies it): an example that names its stack file by path runs as
    printed from the checkout's root, where the other examples are written (test_examples_run runs them in a copy of the
    project)."""
    monkeypatch.chdir(ROOT)
    lines = examples(COMMANDS["image pipeline"])
    assert any("/" in line for line in lines), "no example by path"
    for line in lines:
        r = run_cli(shlex.split(line)[1:], capsys)
        assert r.code == 0, f"{line}\n{r.err}"
