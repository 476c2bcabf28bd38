"""The one reader for every input file (YAML and JSON): stack files, usage, discounts, catalogs, lock, manifests.

bytes -> UTF-8 text -> parsed document, with caps so that no input can crash or hang a command:

- at most MAX_BYTES (10 MiB) per file (a caller may pass a smaller cap: stack files, MAX_STACK_BYTES), nesting at
  most MAX_DEPTH (64) mappings/lists deep, at most MAX_ALIASES YAML aliases whose expansion adds at most
  MAX_ALIAS_NODES nodes (an alias bomb ends at the event stream, before anything is built), integers within +-2**63;
- duplicate keys are refused (the Pulumi CLI refuses them in stack files too), in YAML and JSON;
- non-finite numbers are refused (.nan, .inf, 1e999999999, NaN, Infinity): none is a price, size or count;
- gpufleet's own data files inside the package (`shipped`), YAML and JSON, are read without the caps and the strict
  constructor or decoder: a test reads each of them strictly;
- every failure is a UserError of one line, `file:line:column: message` where the text has a place
  (never a traceback, never an offset into an internal string).

Shape helpers (`mapping`, `sequence`, `text`, `number`) report a wrong type as a problem on the field.
YAML is parsed with libyaml's CSafeLoader when PyYAML was built with it (about 10x faster), else SafeLoader.
"""

from __future__ import annotations

import datetime
import errno
import ipaddress
import json
import math
import os
import re
import stat
from collections.abc import Callable, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from gpufleet.errors import Problem, UserError

# The fix said of a file that does not exist: text, or a function that makes it, called only then (a fix that reads
# other modules or files, as a bill's, is not built on every read that succeeds).
Missing = str | Callable[[], str]

MAX_BYTES = 10 * 1024 * 1024
MAX_DEPTH = 64
MAX_ALIASES = 100
# Nodes that aliases add when expanded (each `*name` counts the nodes of what it names). A stack file that shares a
# block with an anchor adds tens; the issue-27 bomb (10 aliases of 10 aliases, 9 deep) adds 10**9.
MAX_ALIAS_NODES = 10_000
MAX_INT = 2**63

_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Refused(yaml.constructor.ConstructorError):
    pass


class StrictLoader(_BaseLoader):  # type: ignore[misc, valid-type]
    """SafeLoader that refuses duplicate keys, non-finite floats, integers beyond +-2**63 and impossible dates."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            self.flatten_mapping(node)
            seen: dict = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                try:
                    hash(key)
                except TypeError:
                    raise _Refused(None, None, "a list or mapping cannot be a key", key_node.start_mark) from None
                if key in seen:
                    line = seen[key].line + 1
                    raise _Refused(
                        None,
                        None,
                        f"duplicate key {key!r} (first at line {line}); keep one (the Pulumi CLI refuses duplicates too)",
                        key_node.start_mark,
                    )
                seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_float(self, node):
        value = super().construct_yaml_float(node)
        if not math.isfinite(value):
            raise _Refused(None, None, f"{node.value!r} is not a finite number", node.start_mark)
        return value

    def construct_yaml_int(self, node):
        value = super().construct_yaml_int(node)
        if abs(value) >= MAX_INT:
            raise _Refused(None, None, f"{node.value!r} is out of range (integers stay within +-2**63)", node.start_mark)
        return value

    def construct_yaml_timestamp(self, node):
        try:
            return super().construct_yaml_timestamp(node)
        except (ValueError, OverflowError) as exc:  # 2026-13-01: PyYAML's own ValueError, a traceback
            raise _Refused(
                None,
                None,
                f"{node.value!r} is not a date or time ({exc}): correct it, or quote it if it is text",
                node.start_mark,
            ) from None


StrictLoader.add_constructor("tag:yaml.org,2002:float", StrictLoader.construct_yaml_float)
StrictLoader.add_constructor("tag:yaml.org,2002:int", StrictLoader.construct_yaml_int)
StrictLoader.add_constructor("tag:yaml.org,2002:timestamp", StrictLoader.construct_yaml_timestamp)


def _at(shown: str, mark, message: str) -> Problem:
    """A problem at a place in the text (a yaml Mark: 0-based line and column), shown as `file:line:column: message`."""
    message = " ".join(message.split())  # one line: a message never carries the parser's own line breaks
    if mark is None:
        return Problem(shown, "", message)
    return Problem(shown, "", message, line=mark.line + 1, column=mark.column + 1)


def read_text(path: Path | str, shown: str | None = None, missing: Missing = "", max_bytes: int = MAX_BYTES) -> str:
    """The file as UTF-8 text (a BOM is dropped); a missing, oversized (> max_bytes), non-UTF-8 or unreadable file is a
    UserError. The size is checked before anything is parsed."""
    shown = shown or str(path)
    return decode(read_bytes(path, shown, missing, max_bytes), shown)


def read_bytes(path: Path | str, shown: str | None = None, missing: Missing = "", max_bytes: int = MAX_BYTES) -> bytes:
    """The file's bytes; a missing, oversized (> max_bytes), folder, device or socket, or unreadable file, or a symbolic
    link that leads nowhere, is a UserError (read_text's reading, for a file in another encoding than UTF-8: a bill in
    GB18030).

    Opened without blocking and checked on what was opened before a byte is read: a FIFO with no writer (in stacks/, or
    given as --usage) waited forever in open(). A pipe or FIFO is then read as a file, blocking again: what its writer
    sends up to its end (`--api-key-file <(pass show key)`: a secret never written to disk), and nothing (EOF at once)
    where no process writes it."""
    path = Path(path)
    shown = shown or str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except FileNotFoundError:
        if os.path.islink(path):  # a dangling link: "no such file" sent the user to a file that is not the problem
            raise UserError([_bad_link(path, shown, "leads to no file")]) from None
        fix = missing() if callable(missing) else missing
        raise UserError([Problem(shown, "", "no such file" + (f": {fix}" if fix else ""))]) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP and os.path.islink(path):
            raise UserError([_bad_link(path, shown, "is a loop of links")]) from None
        raise UserError([Problem(shown, "", f"cannot read: {exc.strerror or exc}")]) from None
    mode = os.fstat(fd).st_mode
    if stat.S_ISFIFO(mode):
        os.set_blocking(fd, True)
    elif not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise UserError([Problem(shown, "", "is a folder, not a file")])
        raise UserError(
            [Problem(shown, "", "is not a regular file (a device or socket): give a file (save what it holds to one)")]
        )
    with os.fdopen(fd, "rb") as fh:
        try:
            data = fh.read(max_bytes + 1)
        except OSError as exc:
            raise UserError([Problem(shown, "", f"cannot read: {exc.strerror or exc}")]) from None
    if len(data) > max_bytes:
        raise UserError([Problem(shown, "", f"larger than {_size(max_bytes)}: not an input file of gpufleet")])
    return data


def link_problem(path: Path | str, shown: str | None = None) -> Problem | None:
    """The problem of a symbolic link that does not resolve (it leads to no file, or is a loop of links), as read_bytes
    names it; None for a link that resolves, a file or no file at all. For a caller that looks before reading: a test
    such as os.path.exists() is False for such a link, which was then named "no such file" (review F4)."""
    if not os.path.islink(path):
        return None
    try:
        os.stat(path)
    except FileNotFoundError:
        return _bad_link(Path(path), shown or str(path), "leads to no file")
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return _bad_link(Path(path), shown or str(path), "is a loop of links")
    return None


def _bad_link(path: Path, shown: str, what: str) -> Problem:
    """A symbolic link that does not resolve (dangling or a loop), named with where it points."""
    try:
        to = f" (to {os.readlink(path)})"
    except OSError:
        to = ""
    return Problem(shown, "", f"is a symbolic link that {what}{to}: fix the link, or give the file itself")


def _size(n: int) -> str:
    return f"{n // (1024 * 1024)} MiB" if n % (1024 * 1024) == 0 else f"{n // 1024} KiB"


def decode(data: bytes, shown: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        column = exc.start - data.rfind(b"\n", 0, exc.start)  # in bytes: the text before it is not known to be UTF-8
        raise UserError(
            [Problem(shown, "", f"not UTF-8 text: byte 0x{data[exc.start]:02x}; save the file as UTF-8", line, column)]
        ) from None


def csv_rows(reader: Any, shown: str, fix: str) -> list:
    """Every row of a csv reader (csv.reader or csv.DictReader over a file's text); a row the csv module cannot read (a
    cell longer than csv.field_size_limit(), was a traceback) is a UserError naming the row, counted as the reader counts
    them, and the file's line, with `fix`."""
    import csv  # here: most commands read no CSV

    rows: list = []
    try:
        for r in reader:
            rows.append(r)
    except csv.Error as exc:
        named = isinstance(reader, csv.DictReader)
        line = reader.reader.line_num if named else reader.line_num  # a DictReader's own lags by the row that failed
        raise UserError(
            [
                Problem(
                    shown,
                    "header" if named and not rows and line <= 1 else f"row {len(rows) + 1}",
                    f"not CSV this reads ({exc}; line {line} of the file): {fix} (a cell holds at most "
                    f"{csv.field_size_limit()} characters)",
                )
            ]
        ) from None
    return rows


def _yaml_events_ok(text: str, shown: str) -> None:
    """Depth, alias and alias-expansion caps on the event stream, before anything is built (no recursion, no alias
    bomb): each collection's node count is known at its end event, so an alias adds the count of what it names."""
    depth = aliases = added = 0
    sizes: list[int] = []  # node counts of the open collections, innermost last
    anchors: dict[str, int] = {}  # anchor -> nodes of what it names
    opened: list[str | None] = []  # the anchor of each open collection
    try:
        for event in yaml.parse(text, Loader=_BaseLoader):
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    raise UserError([_at(shown, event.start_mark, f"nested deeper than {MAX_DEPTH} levels")])
                sizes.append(1)
                opened.append(event.anchor)
                continue
            if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
                size, anchor = sizes.pop(), opened.pop()
                if anchor is not None:
                    anchors[anchor] = size
            elif isinstance(event, yaml.AliasEvent):
                aliases += 1
                if aliases > MAX_ALIASES:
                    raise UserError([_at(shown, event.start_mark, f"more than {MAX_ALIASES} aliases (*name)")])
                size = anchors.get(event.anchor, 1)  # an undefined alias is the parser's error, reported below
                added += size
                if added > MAX_ALIAS_NODES:
                    raise UserError(
                        [
                            _at(
                                shown,
                                event.start_mark,
                                f"aliases expand to more than {MAX_ALIAS_NODES} nodes (an alias bomb?); write the "
                                "values out or use fewer *aliases",
                            )
                        ]
                    )
            elif isinstance(event, yaml.ScalarEvent):
                size = 1
                if event.anchor is not None:
                    anchors[event.anchor] = 1
            else:
                continue
            if sizes:
                sizes[-1] += size
    except yaml.YAMLError as exc:
        raise UserError([_yaml_problem(exc, text, shown)]) from None


def _yaml_problem(exc: yaml.YAMLError, text: str, shown: str) -> Problem:
    """One line `file:line:column: not valid YAML: problem (context)`, also for a reader error (a control character),
    whose place PyYAML gives as an offset into the decoded text."""
    if isinstance(exc, yaml.reader.ReaderError):
        before = text[: exc.position]
        mark = yaml.Mark(shown, exc.position, before.count("\n"), exc.position - (before.rfind("\n") + 1), None, None)
        char = f"U+{exc.character:04X}" if isinstance(exc.character, int) else repr(exc.character)
        return _at(
            shown,
            mark,
            f"not valid YAML: {exc.reason} ({char} here); delete it, or write it as an escape in a double-quoted string",
        )
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    return _at(shown, mark, "not valid YAML: " + (f"{problem} ({context})" if context else problem))


def parse_yaml(text: str, shown: str, strict: bool = True) -> Any:
    """One YAML document, strictly (see the module docstring). An empty document is None. strict=False is for
    gpufleet's own data files (load_yaml decides, `shipped`): no caps (a second pass over the text) and the plain safe
    constructor, the file being one a test reads strictly."""
    if strict:
        _yaml_events_ok(text, shown)
    try:
        return yaml.load(text, Loader=StrictLoader if strict else _BaseLoader)  # noqa: S506 -- both are SafeLoaders
    except _Refused as exc:
        raise UserError([_at(shown, exc.problem_mark, str(exc.problem))]) from None
    except yaml.YAMLError as exc:
        raise UserError([_yaml_problem(exc, text, shown)]) from None
    except RecursionError:  # cannot happen after the depth cap; kept so that no input is a traceback
        raise UserError([Problem(shown, "", f"nested deeper than {MAX_DEPTH} levels")]) from None


class _JsonRefused(ValueError):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict:
    out: dict = {}
    for k, v in pairs:
        if k in out:
            raise _JsonRefused(f"duplicate key {k!r}; keep one")
        out[k] = v
    return out


def _constant(name: str):
    raise _JsonRefused(f"{name} is not a finite number (JSON has no NaN or Infinity)")


def _float(s: str) -> float:
    v = float(s)
    if not math.isfinite(v):
        raise _JsonRefused(f"{s} is not a finite number")
    return v


def _int(s: str) -> int:
    if len(s.lstrip("-")) > 19 or abs(int(s)) >= MAX_INT:
        raise _JsonRefused(f"{s[:30]} is out of range (integers stay within +-2**63)")
    return int(s)


_JSON_TOKEN = re.compile(
    r'[ \t\n\r]*(?:(?P<s>"(?:[^"\\]|\\.)*")|(?P<n>-?(?:0|[1-9]\d*)(?P<f>(?:\.\d+)?(?:[eE][-+]?\d+)?))'
    r"|(?P<c>NaN|-?Infinity)|(?P<l>true|false|null)|(?P<p>[{}\[\]:,]))"
)


def _json_refusal_at(text: str) -> tuple[int, int, str] | None:
    """(line, column, field) of what the strict JSON hooks refused: the decoder calls a number's hook as it reads the
    number and the pairs hook when an object ends, so the text is walked in that order to the first refusal (the field
    as `levels.0.requests_per_s`); None when none is found."""
    # one frame per open object or list: [is an object, its key or index now, keys seen, first repeated key, a key next]
    frames: list[list] = []

    def at(offset: int, last: object = None) -> tuple[int, int, str]:
        parts = [str(f[1]) for f in frames if f[1] is not None] + ([str(last)] if last is not None else [])
        return text.count("\n", 0, offset) + 1, offset - text.rfind("\n", 0, offset), ".".join(parts)

    pos = 0
    while m := _JSON_TOKEN.match(text, pos):
        pos, start, top = m.end(), m.start(m.lastgroup or 0), frames[-1] if frames else None
        if p := m.group("p"):
            if p in "{[":
                frames.append([p == "{", None if p == "{" else 0, set(), None, True])
            elif p in "}]" and frames:
                if (repeated := frames.pop()[3]) is not None:  # the pairs hook refuses it as the object ends
                    return at(*repeated)
            elif p == "," and top is not None:
                if top[0]:
                    top[4] = True
                else:
                    top[1] += 1
        elif top is not None and top[0] and top[4] and m.group("s"):  # a key
            key = json.loads(m.group("s"))
            if key in top[2] and top[3] is None:
                top[3] = (start, key)
            top[2].add(key)
            top[1], top[4] = key, False
        elif m.group("c"):
            return at(start)
        elif m.group("n"):
            try:
                (_float if m.group("f") else _int)(m.group("n"))
            except _JsonRefused:
                return at(start)
    return None


def parse_json(text: str, shown: str, strict: bool = True) -> Any:
    """One JSON document, strictly (see the module docstring). strict=False is for gpufleet's own data files, as for
    YAML (`shipped`): the plain decoder, without a Python call for each key and number or the depth walk (a preview
    reads an 80 KB vLLM argument list: 22M instructions strictly, 5M plainly)."""
    if not strict:
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise UserError([Problem(shown, "", f"not valid JSON: {exc.msg}", line=exc.lineno, column=exc.colno)]) from None
    try:
        doc = json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant, parse_float=_float, parse_int=_int)
    except _JsonRefused as exc:
        at = _json_refusal_at(text)  # the hooks are given no position (review F8: no line, no field)
        if at is None:
            raise UserError([Problem(shown, "", str(exc))]) from None
        line, column, field = at
        raise UserError([Problem(shown, field, str(exc), line=line, column=column)]) from None
    except json.JSONDecodeError as exc:
        raise UserError([Problem(shown, "", f"not valid JSON: {exc.msg}", line=exc.lineno, column=exc.colno)]) from None
    except RecursionError:
        raise UserError([Problem(shown, "", f"nested deeper than {MAX_DEPTH} levels")]) from None
    if depth(doc) > MAX_DEPTH:
        raise UserError([Problem(shown, "", f"nested deeper than {MAX_DEPTH} levels")])
    return doc


def depth(doc: Any) -> int:
    """Nesting depth of lists/mappings (iterative: no recursion on hostile input)."""
    deepest, stack = 0, [(doc, 0)]
    while stack:
        node, d = stack.pop()
        if isinstance(node, dict):
            node = list(node.values())
        if isinstance(node, list):
            d += 1
            deepest = max(deepest, d)
            if d <= MAX_DEPTH:
                stack.extend((x, d) for x in node)
    return deepest


def load_yaml(path: Path | str, shown: str | None = None, missing: Missing = "", max_bytes: int = MAX_BYTES) -> Any:
    shown = shown or str(path)
    return parse_yaml(read_text(path, shown, missing, max_bytes), shown, strict=not shipped(path))


PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def shipped(path: Path | str) -> bool:
    """A data file inside the installed gpufleet package: written with gpufleet and read strictly by a test
    (tests/inputs/test_cases.py), so the caps on hostile input and the strict constructor are not run on it when a
    command reads it: the caps are a second parse, about a third of the time of reading YAML (`plan fit` reads six
    such files, a preview ten)."""
    return os.path.normpath(os.path.abspath(path)).startswith(PACKAGE)


def load_json(path: Path | str, shown: str | None = None, missing: Missing = "") -> Any:
    shown = shown or str(path)
    return parse_json(read_text(path, shown, missing), shown, strict=not shipped(path))


# --- shapes: a wrong type is a problem on its field -------------------------------------------------


def model_error(error: Mapping[str, Any], suggestion: str = "", yaml_hints: bool = True) -> str:
    """The message of one error of a gpufleet pydantic model (ErrorDetails: type, msg, input): an unknown field with
    the suggestion given, a wrong type with what was given and how to write it in YAML (yaml_hints; the models are
    strict: YAML `true`, "8000" or 32.0 for a count is refused, not read as 1, 8000 or 32), a mapping expected (not
    pydantic's "instance of <class>"; what was given named by its kind, never quoted), a validator's message without
    pydantic's prefix. A value is quoted only where a number, true/false or text was wanted: a count, port or flag
    holds no secret, and the quote shows how YAML read it."""
    if error["type"] == "extra_forbidden":
        return "unknown field; remove it or check its spelling" + suggestion
    if error["type"] == "invalid_key":  # a YAML key read as a number, true/false or a date (`1: x`, `yes: 2`)
        return f"the key {_given(error['input'])} is not text: field names are text; remove it or check its spelling"
    if error["type"] in ("model_type", "dict_type"):
        under = " (its fields indented under the key)" if yaml_hints else ""
        # text is named, not quoted: where a mapping was wanted it is a block written on one line, which may hold
        # anything (`extra_args: '--hf-token hf_…'`); the quote is the fix only for a scalar ("8000" for a port)
        value = error["input"]
        return f"Input should be a mapping{under}, got {kind(value) if isinstance(value, str) else _given(value)}"
    if error["type"] == "list_type":  # `ssh_cidrs: 198.51.100.0/24`: a list wanted, the fix is how to write one
        under = " (its items under the key, one `- item` a line, or [a, b])" if yaml_hints else ""
        value = error["input"]
        return f"Input should be a list{under}, got {kind(value) if isinstance(value, str) else _given(value)}"
    if error["type"] == "too_short" and not error["input"]:  # `zones: []`: "List should have at least 1 item ..."
        least = (error.get("ctx") or {}).get("min_length", 1)
        return f"is empty: give at least {least} item{'s' if least != 1 else ''}"
    msg = str(error["msg"])
    if error["type"] == "value_error" and (fix := _library_fix(msg, error["input"])):
        return f"{msg.removeprefix('Value error, ')}: {fix}"
    if error["type"] in _WRONG_TYPE:
        hint = _WRONG_TYPE[error["type"]]
        if error["type"] in ("int_type", "float_type") and (plain := _number_read_as_text(error["input"])):
            hint = plain  # not quoted at all: "without quotes" was no fix
        return f"{msg}, got {_given(error['input'])}" + (f"; {hint}" if yaml_hints else "")
    return msg.removeprefix("Value error, ")


def _library_fix(msg: str, value: Any) -> str | None:
    """The fix for a library's message a validator passed on as it was (ipaddress's, for a CIDR field), None for any
    other message: a validator's own message says its fix itself."""
    if msg.endswith("does not appear to be an IPv4 or IPv6 network"):
        return "write a network as address/prefix, the prefix 0 to 32 for IPv4 (e.g. 10.20.0.0/16)"
    if msg.endswith("has host bits set"):
        import ipaddress

        try:
            return f"write the network's first address ({ipaddress.ip_network(str(value), strict=False)})"
        except ValueError:
            return "write the network's first address"
    return None


def _number_read_as_text(value: Any) -> str | None:
    """How to write a number that YAML read as text even unquoted (1e6, 1.0e6: a YAML 1.1 float needs a dot and a
    signed exponent); None for any other value."""
    if not isinstance(value, str) or not re.fullmatch(r"[-+]?[\d.]+[eE][-+]?\d+", value):
        return None
    try:
        n = float(value)
    except ValueError:
        return None
    if not math.isfinite(n) or not isinstance(yaml.safe_load(value), str):
        return None
    candidates = [str(int(n))] if n.is_integer() and abs(n) < 1e15 else []
    written = next(w for w in [*candidates, f"{n:g}", f"{n:e}"] if not isinstance(yaml.safe_load(w), str))
    return f"YAML reads {value} as text, not a number (its floats need a dot and a signed exponent): write {written}"


_WRONG_TYPE = {
    "int_type": 'write a whole number without quotes (2, not 2.0, "2" or true)',
    "float_type": "write a number without quotes",
    "string_type": "write text (quote it if YAML reads it as a number, a date or true/false)",
    "bool_type": "write true or false without quotes",
}


def _given(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return repr(value)
    return f"text {value!r}" if isinstance(value, str) else kind(value)


def kind(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "text"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, (datetime.date, datetime.datetime)):  # YAML reads 2026-01-01 unquoted as a date
        return f"a date ({value.isoformat()})"
    return type(value).__name__


def given(value: Any) -> str:
    """A value a user wrote, as a message shows it: text and numbers as written (repr), anything else by its kind (a
    date was shown as `datetime.date(2026, 1, 1)`)."""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return repr(value)
    return kind(value)


def mapping(value: Any, shown: str, field: str = "", what: str = "a mapping of keys to values") -> dict:
    if not isinstance(value, dict):
        raise UserError([Problem(shown, field, f"expected {what}, got {kind(value)}")])
    return value


def sequence(value: Any, shown: str, field: str = "", what: str = "a list") -> list:
    if not isinstance(value, list):
        raise UserError([Problem(shown, field, f"expected {what}, got {kind(value)}")])
    return value


def load_mapping(
    path: Path | str, shown: str | None = None, missing: Missing = "", what: str = "a mapping of keys to values"
) -> dict:
    """A YAML or JSON file (by suffix) whose top level must be a mapping; an empty YAML file is {}."""
    shown = shown or str(path)
    loader = load_json if str(path).endswith(".json") else load_yaml
    doc = loader(path, shown, missing)
    if doc is None and loader is load_yaml:
        return {}
    return mapping(doc, shown, "", what)


def number_problems(
    value: Any, shown: str, field: str, minimum: float | None = None, maximum: float | None = None, above: bool = False
) -> list[Problem]:
    """Problems of a number given by a user: a real finite number within [minimum, maximum] (above: > minimum)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return [Problem(shown, field, f"must be a number, got {kind(value)}")]
    if not math.isfinite(value):
        return [Problem(shown, field, f"must be a finite number, not {value}")]
    if minimum is not None and (value <= minimum if above else value < minimum):
        return [Problem(shown, field, f"must be {'above' if above else 'at least'} {minimum:g}, not {value:g}")]
    if maximum is not None and value > maximum:
        return [Problem(shown, field, f"must be at most {maximum:g}, not {value:g}")]
    return []


def check_number(
    value: Any, shown: str, field: str, minimum: float | None = None, maximum: float | None = None, above: bool = False
) -> Any:
    if problems := number_problems(value, shown, field, minimum, maximum, above):
        raise UserError(problems)
    return value


SHA256_HEX = r"[0-9a-f]{64}"  # a sha256 as sha256sum prints it; use with fullmatch (`$` also takes a trailing newline)

# A host name: dot-separated labels of letters, digits, '-' and '_' (which Docker and some internal DNS use), at most 63
# characters each, 253 in all, the last not all digits (so that 999.1.1.1 is no name either); ASCII only (an
# international name in its xn-- form).
HOST_LABEL = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?")


def host_problem(host: str) -> str | None:
    """Why `host` (an SSH builder's address, a URL's host) is neither an IP address (IPv6 with its zone too) nor a host
    name, as `is not ...` to follow the host; None when it is one."""

    try:
        ipaddress.ip_address(host)
        return None
    except ValueError:
        pass
    labels = host.removesuffix(".").split(".")
    if len(host) <= 253 and not labels[-1].isdigit() and all(HOST_LABEL.fullmatch(label) for label in labels):
        return None
    return (
        "is not an IP address or a host name (dot-separated labels of letters, digits, '-' and '_', at most 63 characters "
        "each and 253 in all)"
    )


@contextmanager
def shaped(shown: str, fix: str = ""):
    """Turn a lookup into data of the wrong shape (a missing key, a list for a mapping, text for a number) into
    a UserError on `shown` -- for the shipped data files (catalog facts, models) that a truncated
    checkout or a hand edit can break. `fix` says how to repair it."""
    fix = fix or f"restore it (git checkout -- {shown})"
    try:
        yield
    except KeyError as exc:
        key = exc.args[0] if exc.args else ""
        raise UserError([Problem(shown, str(key), f"missing; {fix}")]) from None
    except (TypeError, ValueError, AttributeError, ArithmeticError) as exc:
        raise UserError([Problem(shown, "", f"malformed ({exc}); {fix}")]) from None


def read_json_object(path, missing: Missing) -> dict:
    """A user-given JSON file as a dict; a missing file, bad JSON or a non-object is a UserError (missing: the fix)."""
    shown = str(path)
    return mapping(load_json(path, shown, missing), shown, "", "a JSON object")
