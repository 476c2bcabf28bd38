"""A credential held as text: itself where it is used, hidden wherever it is shown."""

from __future__ import annotations


class Secret(str):
    """An API key or token. As a str it is the value (headers, the environment of a child process); its repr is
    masked, so a record holding one can be printed, logged or shown in a traceback without it."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "Secret('***')"
