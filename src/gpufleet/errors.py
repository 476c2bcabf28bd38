"""Problems found in user input, collected and reported together (never as a traceback)."""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Iterable

from msgspec import Struct


class Problem(Struct, frozen=True):
    """One thing wrong with one field of one file: `file: path: message`, or `file:line:column: message` for a
    place in the file's text (a YAML syntax error); line and column count from 1, 0 = not known."""

    file: str
    path: str
    message: str
    line: int = 0
    column: int = 0

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.column}" if self.line else self.file
        where = f"{where}: {self.path}" if self.path else where
        return one_line(f"{where}: {self.message}")


# C0 and C1 control characters and DEL, written as escapes: a problem is one line whatever the input held (a key or a
# value with a newline, a terminal escape), so that nothing a user wrote can break or forge the error output. A
# problem longer than MAX_SHOWN (a 200 KB value quoted in its message) is cut, saying how much was left out.
_CONTROLS = {c: repr(chr(c))[1:-1] for c in (*range(0x20), *range(0x7F, 0xA0))}
MAX_SHOWN = 2000


def one_line(text: str) -> str:
    text = text.translate(_CONTROLS)
    if len(text) > MAX_SHOWN:
        text = f"{text[:MAX_SHOWN]}… ({len(text) - MAX_SHOWN} more characters)"
    return text


class UserError(Exception):
    """Bad input. Carries every problem found; the CLI prints them and exits 2."""

    def __init__(self, problems: Iterable[Problem]):
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


def some(items: Iterable[str], limit: int = 3) -> str:
    """The first `limit` items joined by ', ', then ' and N more' for the rest: a list a message names without
    repeating a whole file (every line of a file that is not what was asked for)."""
    items = list(items)
    shown = ", ".join(items[:limit])
    return f"{shown} and {len(items) - limit} more" if len(items) > limit else shown


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """' (did you mean X?)' for a near miss, else the list of valid choices; '' when there is none to list."""
    choices = sorted(set(choices))
    if not choices:
        return ""
    close = difflib.get_close_matches(str(word), choices, n=1, cutoff=0.6)
    if close:
        return f" (did you mean {close[0]!r}?)"
    shown = ", ".join(choices[:12]) + (", …" if len(choices) > 12 else "")
    return f" (choose one of: {shown})"


# --- printing: user text is never rich markup ---------------------------------------------------------
# Every rich Console of gpufleet is made here with markup off, so that `[bold]x`, `[/x]` or `http://[/x]` in
# a stack file, a server's error or a path print as they are (and never raise rich.errors.MarkupError).
# Colour is given with style= or Text, never with markup inside a string that may hold user text.


# Without a terminal (a pipe, a file, CI) tables are laid out this wide unless COLUMNS says otherwise, so that no
# column (money above all) is cut to fit 80 columns nobody is looking at.
WIDE = 200


def console(stderr: bool = False, **kwargs):
    """A rich Console that prints text literally (markup and automatic highlighting off), made when needed.

    - NO_COLOR in the environment (any value, https://no-color.org) or an output that is not a terminal: no colour
      and no styling at all (no ANSI escape), unless FORCE_COLOR asks for it.
    - An output that is not a terminal: COLUMNS wide if set, else WIDE (rich would use 80 or the terminal of stdin).
    """

    # deferred: rich: only a drawn table or styled text needs it, not --json or a preview
    from rich.console import Console

    stream = kwargs.get("file") or (sys.stderr if stderr else sys.stdout)
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # a closed or a fake stream
        tty = False
    if "NO_COLOR" in os.environ or (not tty and not os.environ.get("FORCE_COLOR")):
        kwargs.setdefault("color_system", None)
    if not tty:
        columns = os.environ.get("COLUMNS", "")
        kwargs.setdefault("width", int(columns) if columns.isdigit() and int(columns) > 0 else WIDE)
    return Console(stderr=stderr, markup=False, highlight=False, **kwargs)


def print_problems(problems: Iterable[Problem], out=None) -> None:
    """`error file: path: message`, each literally (the word `error` in red)."""
    # deferred: rich: only a drawn table or styled text needs it, not --json or a preview
    from rich.text import Text

    out = out or console(stderr=True)
    for problem in problems:
        out.print(Text.assemble(("error", "red"), " ", str(problem)), soft_wrap=True)
