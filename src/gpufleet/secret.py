"""A credential held as text: itself where it is used, hidden wherever it is shown.

- `Secret`: a key whose repr is masked;
- `masked_line`: text from a server (an error, an answer) as stored or printed: the key masked, then cut to length;
- `redact_url` / `has_credentials`: a URL as a message, the report or the state file shows it (no user:password@, no
  query string), and whether it carries a user:password@ at all.
"""

from __future__ import annotations

import re

MASK = "***"


class Secret(str):
    """An API key or token. As a str it is the value (headers, the environment of a child process); its repr is
    masked, so a record holding one can be printed, logged or shown in a traceback without it."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "Secret('***')"


def masked_line(text: object, secret: str | None, limit: int) -> str:
    """`text` as one line of at most `limit` characters (then "…"), with `secret` (a key a server echoed back) masked
    as *** BEFORE the cut: cut first, a key across the limit would be kept in part ('sk-3b5d…'), which no mask finds."""
    text = str(text)
    if secret:
        text = text.replace(secret, MASK)
    one = " ".join(text.split())
    return one if len(one) <= limit else one[:limit] + "…"


# scheme:// (or a bare //, or neither: "user:key@host" as an --endpoint); what follows up to the first / holds the
# user:password@ if any. A client's parser ends the authority at the first / ? or #, but a password with a bare ? or #
# in it (`http://u:p?ss@h/`) would then be shown up to it and read as a port: up to the first / is taken, so such a
# URL is one with credentials too.
_HEAD = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]*:)?//")


def _split(url: str) -> tuple[str, str, str]:
    """(scheme://, up to the first /, the rest from that /)."""
    head = m.group() if (m := _HEAD.match(url)) else ""
    first, slash, rest = url[len(head) :].partition("/")
    return head, first, slash + rest


def has_credentials(url: str) -> bool:
    """Whether `url` carries a user name or password (`user:password@host`)."""
    return "@" in _split(url)[1]


def redact_url(url: str) -> str:
    """`url` as it may be shown or stored: a user:password@ replaced by ***@ and a query string by ?*** (a token is
    often there: ?access_token=, a presigned URL's signature); the path and a #fragment (never sent) are kept. For any
    text, a URL or not, valid or not: a message about a bad URL shows it through this."""
    head, first, rest = _split(url)
    if "@" in first:
        first = MASK + "@" + first.rsplit("@", 1)[1]
    body = first + rest
    before, q, after = body.partition("?")
    if q and "#" not in before:  # a ? inside the fragment is the fragment's
        body = before + "?" + MASK + ("#" + after.split("#", 1)[1] if "#" in after else "")
    return head + body
