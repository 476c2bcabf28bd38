"""A credential held as text: itself where it is used, hidden wherever it is shown.

- `Secret`: a key whose repr is masked;
- `masked_line`: text from a server (an error, an answer) as stored or printed: the key masked, then cut to length;
- `redact_url` / `has_credentials` / `holds_url_credentials`: a URL as a message, the report or the state file shows
  it (no user:password@, query string or fragment), and whether it (or a URL inside a text) carries a user:password@.
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


# A URL's user:password@, read as leniently as any client would: urllib's urlsplit (and a WHATWG parser, a browser's
# or curl's) drops a tab, CR or LF anywhere and leading spaces and control characters, where httpx refuses them; a
# WHATWG parser also takes `http:/h`, `http:\\h` and `http:///h` for `http://h`; all end the authority at the first
# / ? or # (httpx, urlsplit: `http://h:9090?x=a@b` is host h, query x=a@b). So the head skipped here is: leading
# spaces and control characters, a scheme: followed by / or \ (else `LTAI:key@host`, an --endpoint, would show LTAI),
# then every / \ and space; the authority runs from there to the first / ? or #.
_DROPPED = "\t\r\n"
_SCHEME = r"[A-Za-z][A-Za-z0-9+.-]*:"
_HEAD = re.compile(rf"(?:{_SCHEME}(?=[\s/\\]*[/\\]))?[\s/\\]*")
_IN_TEXT = re.compile(rf"{_SCHEME}[/\\]")  # where a URL starts inside a flag's value (`name=URL`, JSON)


def _spans(url: str) -> tuple[int, int]:
    """Indexes into `url`: where the head ends and where the authority ends (the first / ? or # after the head)."""
    keep = [i for i, ch in enumerate(url) if ch not in _DROPPED]
    clean = "".join(url[i] for i in keep)
    start = 0
    while start < len(clean) and (clean[start].isspace() or not clean[start].isprintable()):
        start += 1
    head = _HEAD.match(clean, start).end()  # type: ignore[union-attr]  # every part is optional: it always matches
    end = next((j for j in range(head, len(clean)) if clean[j] in "/?#"), len(clean))
    return (keep[head] if head < len(keep) else len(url)), (keep[end] if end < len(keep) else len(url))


# An authority a client reads: a host name or IP address and a port. When a URL's is not one (`u:p` of
# `http://u:p?ss@h/`, `u:pa` of `http://u:pa/ss@h/`: a password with a bare ? or / in it), what comes before an @
# further on may be a user:password: such a URL is one with credentials too (no client requests it as it is).
_AUTHORITY = re.compile(r"(\[[0-9A-Fa-f:.]*\]|[A-Za-z0-9._~%!$&'()*+,;=-]*)(:[0-9]{0,5})?")


def _userinfo(url: str) -> str:
    """How the URL `url` holds a user:password@: "authority" (in it), "unread" (an @ after an authority that is no
    host[:port]) or "" (none)."""
    head, authority = _spans(url)
    if "@" in url[head:authority]:
        return "authority"
    return "unread" if "@" in url[authority:] and not _AUTHORITY.fullmatch(url[head:authority]) else ""


def _inner(text: str, start: int = 0, end: int | None = None) -> int | None:
    """Where the first URL with a user:password@ starts in `text[start:end]` (`name=URL`, a JSON config, a URL in a
    path): each `scheme:/` up to the next space or quote, read by _userinfo."""
    for m in _IN_TEXT.finditer(text, start, len(text) if end is None else end):
        if _userinfo(re.split(r'[\s"]', text[m.start() :], maxsplit=1)[0]):
            return m.start()
    return None


def has_credentials(url: str) -> bool:
    """Whether `url` carries a user name or password (`user:password@host`): after leading spaces, `scheme:` and its
    slashes (one, two or more, or backslashes), up to the first / ? or #; or after an authority that is no host[:port]
    (`http://u:p?ss@h/`); or in a URL inside it (`/fetch/http://u:p@h`). `http://h:9090?x=a@b` has none (host h,
    query x=a@b). The one detector of gpufleet: the URL options, `fleet.model.source`, a recipe's URLs and, through
    holds_url_credentials, a serving.extra_args value."""
    return bool(_userinfo(url)) or _inner(url) is not None


def holds_url_credentials(text: str) -> bool:
    """Whether a URL inside `text` (a flag's value: `name=URL`, a JSON config) has a user or password: each
    `scheme:/` in it, up to the next space or quote, read as has_credentials reads a URL."""
    return _inner(text) is not None


def redact_url(url: str) -> str:
    """`url` as it may be shown or stored: a user:password@ as ***@ (in a URL whose authority is no host[:port],
    everything up to its last @), a query string as ?*** (a token is often there: ?access_token=, a presigned URL's
    signature) and a #fragment as #*** (never sent, so nothing is lost: a token pasted after # was stored and
    printed). For any text, a URL or not, valid or not: a message about a bad URL shows it through this."""
    head, authority = _spans(url)
    held = _userinfo(url)
    if held == "unread":
        return url[:head] + MASK + "@" + redact_url(url[url.rindex("@") + 1 :])
    shown = MASK + "@" + url[head:authority].rsplit("@", 1)[1] if held else url[head:authority]
    rest = url[authority:]
    cut = min((i for i in (rest.find("?"), rest.find("#")) if i >= 0), default=len(rest))
    if inner := _inner(url, authority, authority + cut):  # a URL in the path: /fetch/http://u:p@h/
        return redact_url(url[:inner]) + redact_url(url[inner:])
    tail = rest[cut:]
    if tail.startswith("?"):
        tail = "?" + MASK + ("#" + MASK if "#" in tail else "")
    elif tail:
        tail = "#" + MASK
    return url[:head] + shown + rest[:cut] + tail
