"""Problems found in user input, collected and reported together (never as a traceback)."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one field of one file: `file: path: message`."""

    file: str
    path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}: {self.path}" if self.path else self.file
        return f"{where}: {self.message}"


class UserError(Exception):
    """Bad input. Carries every problem found; the CLI prints them and exits 2."""

    def __init__(self, problems: Iterable[Problem]):
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """' (did you mean X?)' for a near miss, else the list of valid choices."""
    choices = sorted(set(choices))
    close = difflib.get_close_matches(str(word), choices, n=1, cutoff=0.6)
    if close:
        return f" (did you mean {close[0]!r}?)"
    shown = ", ".join(choices[:12]) + (", …" if len(choices) > 12 else "")
    return f" (choose one of: {shown})"


def read_json_object(path, missing: str) -> dict:
    """A user-given JSON file as a dict; a missing file, bad JSON or a non-object is a UserError (missing: the fix)."""
    shown = str(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise UserError([Problem(shown, "", f"no such file: {missing}")]) from None
    except json.JSONDecodeError as exc:
        raise UserError([Problem(shown, "", f"not JSON: {exc}")]) from None
    if not isinstance(data, dict):
        raise UserError([Problem(shown, "", "expected a JSON object")])
    return data
