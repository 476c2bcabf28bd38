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
