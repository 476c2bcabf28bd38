"""The "Valid values" the installed SDKs document for an argument (pulumi_alicloud, tencentcloud_iac_pulumi docstrings).

The SDKs are generated from the providers' docs; their `:param <type> <arg>: ...` lines often end in "Valid values:
a, b" or "Valid range: 0-7200". This reads them from the module that defines the resource class.
"""

from __future__ import annotations

import importlib
import inspect
import re
from functools import cache

PACKAGES = {"alicloud": "pulumi_alicloud", "tencentcloud": "tencentcloud_iac_pulumi"}
KEYWORDS = {"as": "as_", "lambda": "lambda_"}


def resource_class(token: str):
    """The SDK class of a type token, e.g. alicloud:slb/listener:Listener -> pulumi_alicloud.slb.Listener."""
    provider, module, cls = token.split(":")
    mod = module.split("/")[0].lower()
    package = importlib.import_module(f"{PACKAGES[provider]}.{KEYWORDS.get(mod, mod)}")
    return getattr(package, cls)


@cache
def param_docs(token: str) -> dict[str, str]:
    source = inspect.getsource(inspect.getmodule(resource_class(token)))
    out: dict[str, str] = {}
    for m in re.finditer(r":param [^\n:]*? (\w+): (.*)", source):
        out.setdefault(m.group(1), m.group(2))
    return out


_SENTENCE = re.compile(
    r"(?:Valid values|Valid value|Value range|Valid range|Available values|Optional values|Supported values?)(?::| are| is)\s*(.*?)(?:\.\s|\.$|<br>|$)",
    re.I,
)
_RANGE = re.compile(r"^\[?\s*(-?\d+)\s*(?:to|-|~|,)\s*(-?\d+)\s*\]?")


def documented(token: str, arg: str) -> tuple[str, object] | None:
    """('values', [...]) or ('range', (low, high)) as the SDK documents them, or None."""
    text = param_docs(token).get(arg)
    if not text:
        return None
    m = _SENTENCE.search(text)
    if not m:
        return None
    body = re.sub(r"(\d),(\d{3})\b", r"\1\2", m.group(1).strip())  # 86,400 -> 86400
    r = _RANGE.match(body)
    if r:
        return ("range", (int(r.group(1)), int(r.group(2))))
    ticks = re.findall(r"`([^`]+)`", body)
    if ticks:
        return ("values", ticks)
    words = [w.strip(" \"'") for w in re.split(r",|\band\b|\bor\b", body) if w.strip(" \"'")]
    if words and all(re.fullmatch(r"[\w./+-]+", w) for w in words):
        return ("values", words)
    return None


def conforms(value, doc: tuple[str, object]) -> bool:
    kind, data = doc
    values = value if isinstance(value, list) else [value]
    for v in values:
        if isinstance(v, (dict, list)) or (isinstance(v, str) and v.startswith("<")):
            continue
        if kind == "range":
            try:
                if not data[0] <= float(v) <= data[1]:
                    return False
            except (TypeError, ValueError):
                return False
        else:
            shown = str(int(v)) if isinstance(v, float) and v.is_integer() else str(v).lower() if isinstance(v, bool) else str(v)
            if shown not in data:
                return False
    return True
