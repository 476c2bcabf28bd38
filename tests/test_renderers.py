"""One table of output renderers (issue 25 item 4): every command prints its --format result through
gpufleet/cli/renderers.py, none dispatches on the format name itself."""

from __future__ import annotations

import json
import re
from pathlib import Path

from gpufleet.cli import renderers

CLI = Path(renderers.__file__).parent


def test_no_command_dispatches_on_the_format_name():
    for path in sorted(CLI.glob("*.py")):
        text = path.read_text()
        assert not re.search(r"\bchosen\s*[!=]=|render\[chosen\]|if as_json:", text), f"{path.name}: use renderers.render"
        if "chosen = options.chosen_format" in text:
            assert "renderers.render(" in text, f"{path.name} chooses a format but does not render through renderers"


def test_json_keeps_each_commands_bytes():
    doc = {"b": float("nan"), "a": "元"}
    assert renderers.Json(lambda: doc).text() == json.dumps(doc, indent=2) + "\n"
    assert renderers.Json(lambda: doc, sort_keys=True, ensure_ascii=False, indent=1).text() == (
        json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    )


def test_json_writes_c1_controls_as_escapes_even_when_not_ascii():
    """json escapes C0 controls (ESC, newline) but writes U+0080-U+009F as they are with ensure_ascii=False: U+009B is
    a terminal's one-byte CSI. Escaped, the document reads back the same."""
    doc = {"reason": "a\x1b[2J\x9b2J元"}
    text = renderers.Json(lambda: doc, ensure_ascii=False).text()
    assert "\x9b" not in text and "\\u009b" in text and "元" in text and json.loads(text) == doc


def test_only_the_chosen_view_is_computed(capsys):
    asked = []
    renderers.render(
        "json",
        None,
        json=renderers.Json(lambda: asked.append("json") or {"x": 1}),
        table=renderers.Text(lambda: asked.append("table") or "t"),
    )
    assert asked == ["json"] and json.loads(capsys.readouterr().out) == {"x": 1}


def test_json_escapes_every_c1_control_even_when_not_ascii():
    """Every control character above ASCII (Unicode category Cc, taken from unicodedata: the C1 block) is written as
    an escape with ensure_ascii=False, not only U+009B: U+009F (APC) opens a string a terminal swallows."""
    import sys
    import unicodedata

    c1 = [chr(c) for c in range(0x80, sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cc"]
    assert c1[0] == "\x80" and c1[-1] == "\x9f"  # the block's two ends: the loop below checks both
    doc = {"reason": "".join(c1)}
    text = renderers.Json(lambda: doc, ensure_ascii=False).text()
    for c in c1:
        assert c not in text and f"\\u{ord(c):04x}" in text, hex(ord(c))
    assert json.loads(text) == doc


def test_written_is_said_on_standard_error_only_for_a_file_a_view_does_not_silence(capsys, tmp_path):
    """`wrote FILE` after -o FILE (stderr), none after `-o -` (standard output: docs/cli.md) and none for a Text view
    made with say_written=False (gpufleet check: its one line is the result)."""
    quiet, loud = tmp_path / "quiet.txt", tmp_path / "loud.txt"
    renderers.render("table", quiet, table=renderers.Text(lambda: "x", say_written=False))
    assert capsys.readouterr().err == "" and quiet.read_text() == "x\n"
    renderers.render("table", loud, table=renderers.Text(lambda: "x"))
    assert capsys.readouterr().err == f"wrote {loud}\n" and loud.read_text() == "x\n"
    renderers.render("json", Path("-"), json=renderers.Json(lambda: {"x": 1}))
    printed = capsys.readouterr()
    assert json.loads(printed.out) == {"x": 1} and printed.err == "" and not Path("-").exists()


def test_a_table_drawn_for_a_file_is_the_same_whatever_the_terminal_and_stdout_follows_columns(capsys, monkeypatch, tmp_path):
    """cost commit's table (a Draw with a file width): on standard output that is not a terminal it is laid out COLUMNS
    wide (docs/cli.md), in -o FILE at the fixed width cost.py gives it (100 columns), so the file does not depend on
    the terminal it was written from."""
    from gpufleet.cli import main

    def run(argv):
        capsys.readouterr()
        try:
            main([str(a) for a in argv])
        except SystemExit as exc:
            assert not exc.code, capsys.readouterr()
        return capsys.readouterr().out

    args = ["cost", "commit", "-s", "alicloud-cn-hangzhou-dev"]
    widest = {}
    for columns in ("60", "160"):
        monkeypatch.setenv("COLUMNS", columns)
        widest[columns] = max(len(line) for line in run(args).splitlines())
        run([*args, "-o", tmp_path / f"commit-{columns}.txt"])
    assert widest["60"] <= 60 and 100 < widest["160"] <= 160, widest  # the table's notes are wider than 100 columns
    narrow, wide = (tmp_path / "commit-60.txt").read_text(), (tmp_path / "commit-160.txt").read_text()
    assert narrow == wide and max(len(line) for line in narrow.splitlines()) <= 100
