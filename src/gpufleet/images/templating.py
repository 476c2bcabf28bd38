"""The Jinja2 environment every image template renders in (step scripts and the node's files): strict, no escaping,
the recipe's own template folder first, then the shipped templates."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import jinja2

from gpufleet.images.recipes import Recipe

TEMPLATES = Path(__file__).parent / "templates"


def _shell_quote(value) -> str:
    return shlex.quote(str(value))


HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?")


def _shell_indent(text: str, width: int) -> str:
    """A shell snippet (e.g. a cloud profile's fetch_command) indented by `width` spaces to sit inside a block of the
    template; a here-document's body and end word stay as written (indenting them would change the document)."""
    out, end = [], None
    for line in text.strip("\n").splitlines():
        if end is not None:
            out.append(line)
            end = None if line == end else end
            continue
        out.append(" " * width + line if line else line)
        m = HEREDOC.search(line)
        end = m.group(1) if m else None
    return "\n".join(out)


def _heredoc_end(text: str, word: str) -> str:
    """The end word of a here-document holding `text` (a file's content, written with `<<'END'`): `word`, or word_2,
    word_3, ... while a line of the text is that word. A line equal to the end word would end the document there and run
    the lines after it as commands (review F2: a lock file's line GPUFLEET_LOCK did). The text must end with a newline:
    the end word goes on a line of its own."""
    if text and not text.endswith("\n"):
        raise jinja2.TemplateRuntimeError("a here-document's text must end with a newline (its end word follows it)")
    lines = set(text.split("\n"))
    end, n = word, 1
    while end in lines:
        n += 1
        end = f"{word}_{n}"
    return end


def environment(recipe: Recipe) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(f) for f in recipe.template_folders()]),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["q"] = _shell_quote
    env.filters["shell_indent"] = _shell_indent
    env.filters["heredoc_end"] = _heredoc_end
    return env
