"""One table of output renderers: how every command's `--format` result reaches standard output or `-o FILE`.

A command validates `--format` with `options.chosen_format`, then hands `render(chosen, out, **views)` one view per
format it offers (lazy: only the chosen one is computed). RENDERERS says, per kind of view, how it is printed:

- `Json(doc)`: the document as JSON text, with the command's own dump options (indent, key order, ASCII, NaN), so the
  bytes each command printed before stay the same; C1 control characters (U+0080-U+009F: the one-byte CSI a terminal
  may act on) are written as escapes even with ensure_ascii=False, as json writes the C0 ones;
- `Draw(draw)`: a rich drawing, on standard output with colour, or into `-o FILE` as plain text (`options.show`);
- `Text(content)`: text, bytes (xlsx) or a function writing text to a buffer, printed or written as it is
  (`options.emit`): csv, markdown, html, xlsx, and tables a command renders to text itself.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from msgspec import Struct

from gpufleet.cli import options

# Engines (and costly standard modules such as importlib.metadata) are imported inside the functions that use them,
# not at the top (issue 25's rule, measured): `gpufleet` imports every command module to parse its arguments and build
# its help, and importing every engine there (pulumi and the providers, jinja2, the cost, image, rollout and simulation
# pipelines) took about 215 ms against 33 ms for the command modules alone (`python -X importtime`, 2026-12-06), on
# every command, `--help` included.

Content = str | bytes | Callable[[io.StringIO], None]  # what options.emit prints or writes


class Json(Struct, frozen=True):
    """A JSON document (computed when the format is chosen) and how the command writes it."""

    doc: Callable[[], Any]
    indent: int = 2
    sort_keys: bool = False
    ensure_ascii: bool = True
    allow_nan: bool = True

    def text(self) -> str:
        dumped = json.dumps(
            self.doc(), indent=self.indent, sort_keys=self.sort_keys, ensure_ascii=self.ensure_ascii, allow_nan=self.allow_nan
        )
        return dumped.translate(_C1) + "\n"  # C1 appears only inside strings: escaped, the document is the same


_C1 = {c: f"\\u{c:04x}" for c in range(0x80, 0xA0)}


class Draw(Struct, frozen=True):
    """A rich drawing on a console: standard output with colour when it is a terminal, or -o FILE as plain text."""

    draw: Callable[[Any], None]
    file_width: int | None = None  # the columns of the text in -o FILE (None: the console's default)


class Text(Struct, frozen=True):
    """Text, bytes or a function writing text to a buffer, printed or written as it is."""

    content: Callable[[], Content]
    say_written: bool = True  # "wrote FILE" on standard error after -o FILE


View = Json | Draw | Text


def _json(view: Json, out: Path | None) -> None:
    options.emit(view.text(), out)


def _draw(view: Draw, out: Path | None) -> None:
    if out is None or view.file_width is None:
        options.show(view.draw, out)
        return
    from gpufleet.errors import console

    width = view.file_width
    options.emit(lambda buf: view.draw(console(file=buf, width=width)), out)


def _text(view: Text, out: Path | None) -> None:
    options.emit(view.content(), out, say_written=view.say_written)


RENDERERS: dict[type, Callable[[Any, Path | None], None]] = {Json: _json, Draw: _draw, Text: _text}


def render(chosen: str, out: Path | None, **views: View) -> None:
    """Print the view of the chosen format (a name options.chosen_format returned) with its renderer."""
    view = views[chosen]
    RENDERERS[type(view)](view, out)
