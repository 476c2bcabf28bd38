"""The Jinja2 environment every image template renders in (step scripts and the node's files): strict, no escaping,
the recipe's own template folder first, then the shipped templates."""

from __future__ import annotations

import shlex
from pathlib import Path

import jinja2

from gpufleet.images.recipes import RECIPES, Recipe

TEMPLATES = Path(__file__).parent / "templates"


def _shell_quote(value) -> str:
    return shlex.quote(str(value))


def environment(recipe: Recipe) -> jinja2.Environment:
    folders = []
    if recipe.templates:
        base = Path(recipe.file).parent if Path(recipe.file).is_absolute() else (RECIPES.parent.parent / recipe.file).parent
        folders.append(str((base / recipe.templates).resolve()))
    folders.append(str(TEMPLATES))
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(folders),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["q"] = _shell_quote
    return env
