"""Read the vendors' own API reference text (pinned test dependencies) and extract the limits it states.

Two readers, one shape: `member(cloud, ref)` returns the document text of one API request member.
- Tencent: `tccli` ships `tccli/services/<service>/<version>/api.json`; a request member is
  `<service>/<version>/<Action>:<Member>[.<Nested>...]` (nested members walk into the member's structure).
- Alibaba: the generated SDKs `alibabacloud_<service><version>` carry each field's document as the comment
  above `self.<field> = <field>` in `models/_<action>_request.py`; a member is
  `<package>/<Action>:<Member>[.<Nested>...]` (nested: the field's class in the same file).

`extract(text)` finds the limits the text states: numeric ranges, enumerations, lengths, formats, uniqueness
scopes, mutual exclusions and billing-mode conditions. Pure functions over strings; the file readers are cached.
"""

from __future__ import annotations

import html
import importlib.metadata
import importlib.util
import json
import re
from functools import cache
from pathlib import Path

from msgspec import Struct

KINDS = ("range", "enum", "length", "count", "format", "unique", "exclusion", "billing")


class Limit(Struct, frozen=True):
    kind: str  # one of KINDS
    low: float | None = None
    high: float | None = None
    values: tuple[str, ...] = ()
    scope: str = ""  # for `unique`: account | region | vpc | group | load_balancer | other
    text: str = ""  # the words it was read from

    def __str__(self) -> str:
        if self.kind in ("range", "length", "count"):
            return f"{self.kind} {_n(self.low)}-{_n(self.high)}"
        if self.kind == "enum":
            return f"enum {', '.join(self.values)}"
        if self.kind == "unique":
            return f"unique in {self.scope}"
        return f"{self.kind}: {self.text[:80]}"


def _n(x: float | None) -> str:
    return "" if x is None else str(int(x)) if float(x).is_integer() else str(x)


# --- text cleaning


def clean(text: str) -> str:
    text = html.unescape(text)
    text = re.sub(r"<br\s*/?>|</?p>|</li>|</?ul>", "\n", text)
    text = re.sub(r"<li>", "\n<li>", text)
    text = re.sub(r"<(?!li>)[^>]+>", "", text)
    text = re.sub(r"\[([^\]]*)\]\((https?://[^)]*)\)", r"\1", text)  # markdown links: keep the words
    text = re.sub(r"\*\*([^*\n]+)\*\*", r"\1", text)  # markdown bold (the Alibaba SDKs' **2** to **10**)
    return re.sub(r"(\d),(\d{3})(?=\s|\.|$)", r"\1\2", text)  # 4,096 characters


_NUM = r"-?\d+(?:\.\d+)?"
_SEP = r"\s*(?:~|～|-|－|到|至|to|and)\s*"

# --- ranges
_RANGE_PATTERNS = (
    # [1, 100], (0, 100], [0,3600]
    re.compile(rf"[\[\(（]\s*({_NUM})\s*[,，~]\s*({_NUM})\s*[\]\)）]"),
    # 取值范围：1~100 / 取值范围为1-100 / 范围：0-3600 / 1~100之间
    re.compile(rf"(?:取值范围|范围|取值)\s*(?:是|为|：|:)?\s*({_NUM})\s*(?:~|～|-|－|到|至)\s*({_NUM})"),
    re.compile(rf"({_NUM})\s*(?:~|～|-|－|到|至)\s*({_NUM})\s*(?:之间|以内|，单位|秒|分钟|小时|Mbps|GB|MB|%)"),
    # Valid values: 30 to 21600. / Value range: 1 to 65535 / from 1 to 50 / between 1 and 300
    re.compile(rf"(?:[Vv]alid values?|[Vv]alue range|[Rr]ange|[Vv]alues?)\s*(?:is|are)?\s*:?\s*({_NUM})\s*(?:to|-|~)\s*({_NUM})"),
    re.compile(rf"\b(?:from|between)\s+({_NUM})\s+(?:to|and)\s+({_NUM})\b(?!\s*characters)"),
    re.compile(rf"(?<![\w.])({_NUM})\s+to\s+({_NUM})\b(?!\s*(?:characters|letters|digits|Chinese))"),
    re.compile(rf"({_NUM})\s*(?:Mbps|GB|GiB|MB|秒|s)\s*(?:~|至|到|-)\s*({_NUM})\s*(?:Mbps|GB|GiB|MB|秒|s)"),
)
_MIN_MAX = (
    re.compile(rf"(?:最小值|最小)\s*(?:为|是|：|:)?\s*({_NUM})[^。；;]*?(?:最大值|最大)\s*(?:为|是|：|:)?\s*({_NUM})"),
    re.compile(rf"minimum (?:value )?(?:is )?({_NUM})[^.]*?maximum (?:value )?(?:is )?({_NUM})", re.I),
)
# a range term that is a length ("1-60个字符"): not a numeric range
_LENGTHY = re.compile(r"^\s*(?:个字符|个汉字|characters|字符|位|bytes|字节|个|letters)")
_DATEISH = re.compile(r"\d{4}-\d{2}")


def _ranges(text: str) -> list[Limit]:
    out = []
    for pat in _RANGE_PATTERNS + _MIN_MAX:
        for m in pat.finditer(text):
            tail = text[m.end() : m.end() + 8]
            head = text[max(0, m.start() - 12) : m.start()]
            if _LENGTHY.match(tail) or "长度" in head or "length" in head.lower() or _DATEISH.search(m.group(0)):
                continue
            if re.search(r"\bN\b[^.]{0,40}$|N 的取值", text[max(0, m.start() - 45) : m.start()]):
                continue  # the count of a repeated parameter (Tag.N), not its value
            low, high = float(m.group(1)), float(m.group(2))
            if low > high:
                continue
            out.append(Limit("range", low=low, high=high, text=m.group(0)))
    return out


# --- lengths
_LENGTH_PATTERNS = (
    re.compile(rf"(?:长度|length)[^。；;\n]{{0,20}}?({_NUM})\s*(?:~|～|-|－|到|至|to)\s*({_NUM})", re.I),
    re.compile(rf"({_NUM})\s*(?:~|～|-|－|到|至|to)\s*({_NUM})\s*(?:个字符|个汉字|字符|characters|个中文|位)", re.I),
    re.compile(rf"must be\s+({_NUM})\s+to\s+({_NUM})\s+characters", re.I),
)
_UNIT = r"\s*(?P<unit>KB|K|Byte|bytes|字节|个字符|个汉字|字符|个中文字符|characters|位)?"
_LENGTH_MAX = (
    re.compile(
        rf"(?:长度|名称|描述|字符)[^。；;\n]{{0,16}}?(?:不能超过|不超过|不可超过|最多|最大|最长|上限为?|限制为?|小于等于|不得超过|须小于)\s*(?:支持)?\s*({_NUM}){_UNIT}"
    ),
    re.compile(
        rf"(?:不能超过|不超过|最多|最大|最长|上限|不得超过)\s*(?:支持)?\s*({_NUM})\s*(?P<unit>个字符|个汉字|字符|个中文字符|字节|位|KB|Byte)"
    ),
    re.compile(rf"(?:最大|上限)[^。；;\n，,\d]{{0,8}}?(?:为|是)\s*({_NUM})\s*(?P<unit>KB|字节|Byte|个字符|字符)"),
    re.compile(
        rf"(?:up to|cannot exceed|can be at most|at most|maximum of|maximum length (?:of|is))\s+({_NUM})\s+(?P<unit>characters|bytes|KB)",
        re.I,
    ),
    re.compile(rf"({_NUM})\s+(?P<unit>characters) (?:or fewer|or less|in length at most)", re.I),
)


def _lengths(text: str) -> list[Limit]:
    out, spans = [], []
    for pat in _LENGTH_PATTERNS:
        for m in pat.finditer(text):
            spans.append(m.span())
            out.append(Limit("length", low=float(m.group(1)), high=float(m.group(2)), text=m.group(0)))
    for pat in _LENGTH_MAX:
        for m in pat.finditer(text):
            if any(a <= m.start(1) < b for a, b in spans):
                continue
            scale = 1024 if (m.groupdict().get("unit") or "").upper() in ("KB", "K") else 1
            out.append(Limit("length", low=None, high=float(m.group(1)) * scale, text=m.group(0)))
    return out


# --- counts: how many items a list or map member takes ("最多支持指定10个标签", "You can specify up to 20 tags")
_COUNT_PATTERNS = (
    re.compile(
        rf"(?:最多|最大)(?:支持|可)?(?:指定|绑定|设置|传入|添加)?\s*({_NUM})\s*(?:个|种|条)(?!\s*(?:字符|汉字|中文|字节|英文|字母))"
    ),
    re.compile(rf"(?:up to|at most|a maximum of)\s+({_NUM})\s+(?:tags|items|entries|instance types|security groups)", re.I),
)


def _counts(text: str) -> list[Limit]:
    return [Limit("count", high=float(m.group(1)), text=m.group(0)) for pat in _COUNT_PATTERNS for m in pat.finditer(text)]


# --- enumerations: a list of identifier-like values after "取值范围/可选值/Valid values", or <li>X：... items
_ID = r"[A-Za-z][A-Za-z0-9_./\-]*|-?\d+"
_LI = re.compile(rf"<li>\s*`?({_ID})`?\s*(?:[：:（(]|$|\s*</li>|\n)")
_BULLET = re.compile(rf"^\s*[*\-]\s+`?({_ID})`?\s*(?:[:：(（]|$)", re.M)
_ENUM_LIST = re.compile(
    rf"(?:(?:取值范围|可选值|可选项|支持参数值|取值|枚举值)\s*(?:为|是|包括|有)?\s*[：:]?|(?:[Vv]alid values?|Options)\s*:)\s*((?:`?(?:{_ID})`?\s*(?:,\s*(?:and|or)\s|、|,|，|\||和|或|or|and)\s*)+`?(?:{_ID})`?)"
)


# one value only, defined after a colon ("Valid values: **Enhanced**: enhanced NAT gateway.", CreateNatGateway NatType)
_ONE_VALUE = re.compile(rf"[Vv]alid values?\s*:\s*`?({_ID})`?\s*[:：]\s*\S")


def _enums(text: str, raw: str) -> list[Limit]:
    out = []
    items = _LI.findall(raw.replace("<li> ", "<li>")) or _LI.findall(text)
    if len(items) >= 2:
        out.append(Limit("enum", values=tuple(dict.fromkeys(items)), text="<li> items"))
    bullets = [b.rstrip(".") for b in _BULLET.findall(text)]
    if len(bullets) >= 2 and re.search(r"[Vv]alid values|取值|可选", text):
        out.append(Limit("enum", values=tuple(dict.fromkeys(bullets)), text="bulleted values"))
    if not out and not _ENUM_LIST.search(text) and (one := _ONE_VALUE.search(text)):
        out.append(Limit("enum", values=(one.group(1),), text=one.group(0)))
    for m in _ENUM_LIST.finditer(text):
        values = [v.strip("` ").rstrip(".") for v in re.split(r"、|,|，|\||和|或|\bor\b|\band\b", m.group(1)) if v.strip("` .")]
        if len(values) >= 2 and not all(re.fullmatch(r"-?\d+", v) for v in values[:1]) or len(values) >= 2:
            out.append(Limit("enum", values=tuple(dict.fromkeys(values)), text=m.group(0)))
    return out


# --- words that state a limit without numbers
_UNIQUE = re.compile(
    r"唯一|must be unique|is unique|unique within|unique in|不能重复|不可重复|不允许重复|cannot be duplicated", re.I
)
_SCOPES = (
    ("account", r"账号|帐号|账户|帐户|account|Alibaba Cloud account|用户下"),
    ("region", r"地域|region"),
    ("vpc", r"VPC|私有网络"),
    ("group", r"伸缩组|scaling group|安全组|security group|同一组"),
    ("load_balancer", r"负载均衡|load balancer|监听器|listener"),
)
_NARROWEST = ("group", "load_balancer", "vpc", "region")
_EXCLUSION = re.compile(
    r"不能同时|不可同时|不允许同时|互斥|二选一|只能选择其一|只能指定其一|mutually exclusive|cannot be specified at the same time|cannot specify both|"
    r"not both|cannot be used together|cannot be set together|You can specify only one of",
    re.I,
)
_BILLING = re.compile(
    r"(?:仅|只|当|若|如果|only|valid when|takes effect when|required when)[^。.;；\n]{0,60}?"
    r"(?:PREPAID|POSTPAID|SPOTPAID|包年包月|预付费|后付费|按量计费|按量付费|竞价|[Ss]ubscription|[Pp]ay-as-you-go|PrePaid|PostPaid|preemptible)",
    re.I,
)
_FORMAT = re.compile(
    r"ISO\s?8601|YYYY-MM-DD|yyyy-MM-dd|hh:mm:ss|Base64|base64|Recurrence|Cron|cron|JSON|RFC\s?3339|UTC|格式为|格式：|in the .{1,40} format"
    r"|(?:仅能在|只能在|only (?:with)?in)\s?(?:\d{1,3}\.){3}\d{1,3}/\d{1,2}",  # the ranges a network must lie in (CreateVpc)
)


# The characters a value may hold ("can contain letters, digits, and ...", "仅支持中英文、数字、下划线、-", "支持 ...
# 英文字母、数字 ..."): not a limit `extract` returns (most names state one; gpufleet's names are [a-z0-9-] by the spec's
# name rule), read by the coverage check for a `pattern` rule that cites the member.
_CHARSET = re.compile(
    r"(?:can|may) (?:only )?contain (?:only )?(?:letters|digits|[^.]{0,30}characters)[^.]*"
    r"|(?:仅|只)(?:支持|能包含|可包含)[^。；;]{0,40}(?:字母|英文|数字|中文)[^。；;]*"
    r"|支持[^。；;]{0,20}(?:英文字母|字母|数字)[^。；;]*",
    re.I,
)


def charset(document: str) -> str | None:
    """The words in which the document states the characters a value may hold, or None."""
    m = _CHARSET.search(clean(document))
    return m.group(0) if m else None


NUMERIC = ("int", "integer", "uint64", "int64", "float", "long", "double", "number")


def extract(document: str, type_: str = "") -> list[Limit]:
    """Every limit the document text states (duplicates folded). `type_`, the member's type: a boolean's TRUE/FALSE
    is its type, not a limit; a number's list of names (e.g. the metric each stated range is for) is not its values."""
    text = clean(document)
    found: list[Limit] = []
    found += _ranges(text)
    found += _lengths(text)
    found += _counts(text)
    kind = type_.lower().split("[")[0].strip()
    for lim in _enums(text, document):
        if kind in ("bool", "boolean"):
            continue
        if kind in NUMERIC and not all(re.fullmatch(r"-?\d+(?:\.\d+)?", v) for v in lim.values):
            continue
        if {v.lower() for v in lim.values} == {"true", "false"}:
            continue  # a boolean's two values: its type, not a limit
        found.append(lim)
    m = _UNIQUE.search(text)
    if m:
        window = text[max(0, m.start() - 60) : m.end() + 30]
        scope = next((s for s, p in _SCOPES if re.search(p, window, re.I)), "other")
        if scope == "account":
            # "unique under the same account within a region": every name lives in an account, so a narrower scope
            # named after "unique" in the same sentence is the one (ESS CreateScalingRule ScalingRuleName: review C2)
            tail = re.split(r"[。；;\n]|\.(?:\s|$)", text[m.end() :], maxsplit=1)[0]
            scope = next((s for s in _NARROWEST if re.search(dict(_SCOPES)[s], tail, re.I)), scope)
        found.append(Limit("unique", scope=scope, text=window.strip()))
    for kind, pat in (("exclusion", _EXCLUSION), ("billing", _BILLING), ("format", _FORMAT)):
        m = next((m for m in pat.finditer(text) if ".N." not in m.group(0)), None)  # "in the Tag.N.Key format": naming
        if m:
            found.append(Limit(kind, text=text[max(0, m.start() - 30) : m.end() + 30].strip()))
    out: list[Limit] = []
    for lim in found:
        if not any(
            o.kind == lim.kind and (o.low, o.high, o.values, o.scope) == (lim.low, lim.high, lim.values, lim.scope) for o in out
        ):
            out.append(lim)
    return out


# --- the pinned packages


def version(package: str) -> str:
    return importlib.metadata.version(package)


def _package_dir(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise LookupError(f"{module} is not installed (pip install -c requirements-dev.lock -e '.[test]')")
    return Path(spec.origin).parent


@cache
def tccli_api(service_version: str) -> dict:
    return json.loads((_package_dir("tccli") / "services" / service_version / "api.json").read_text())


class Member(Struct, frozen=True):
    ref: str
    document: str
    type: str  # the API's type name (string, int, object, list, ...)
    structure: bool  # an object (or list of objects) with members of its own


def _split(ref: str) -> tuple[str, str, list[str]]:
    where, _, path = ref.partition(":")
    base, _, action = where.rpartition("/")
    return base, action, path.split(".")


def tencent_member(ref: str) -> Member:
    """`autoscaling/v20180419/CreateScalingPolicy:MetricAlarm.Threshold` -> the member's document."""
    base, action, path = _split(ref)
    api = tccli_api(base)
    if action not in api["actions"]:
        raise LookupError(f"{ref}: no action {action} in tccli {base}")
    obj = api["actions"][action]["input"]
    member = None
    for part in path:
        members = {m["name"]: m for m in api["objects"][obj]["members"]}
        if part not in members:
            raise LookupError(f"{ref}: {obj} has no member {part}")
        member = members[part]
        obj = member["member"]
    assert member is not None
    kind = member["member"] if member["type"] == "list" else member["type"]  # a list's element type
    return Member(ref, member["document"], kind, obj in api["objects"] and member["type"] in ("object", "list"))


_FIELD = re.compile(r"^\s*self\.(\w+) = (\w+)\s*$")
_CLASS = re.compile(r"^class (\w+)\(")
_TYPE = re.compile(r"^\s*(\w+): (.+?) = None,\s*$")


@cache
def alibaba_models(package: str, action: str) -> dict[str, dict[str, tuple[str, str]]]:
    """{class name: {field (snake): (comment text, annotation)}} of `models/_<action>_request.py`."""
    want = f"{action}request.py".lower()
    found = [p for p in (_package_dir(package) / "models").glob("_*_request.py") if p.name.replace("_", "").lower() == want]
    if not found:
        raise LookupError(f"{package}: no request model for {action}")
    path = found[0]
    classes: dict[str, dict[str, tuple[str, str]]] = {}
    current, comment, types = "", [], {}
    for line in path.read_text().splitlines():
        if m := _CLASS.match(line):
            current, comment, types = m.group(1), [], {}
            classes[current] = {}
        elif m := _TYPE.match(line):
            types[m.group(1)] = m.group(2)
        elif line.strip().startswith("#"):
            comment.append(line.strip()[1:].strip())
        elif m := _FIELD.match(line):
            classes[current][m.group(1)] = ("\n".join(comment).strip(), types.get(m.group(1), ""))
            comment = []
        elif line.strip():
            comment = []
    return classes


def alibaba_member(ref: str) -> Member:
    """`alibabacloud_ess20220222/CreateLifecycleHook:HeartbeatTimeout` -> the field's comment."""
    package, action, path = _split(ref)
    classes = alibaba_models(package, action)
    cls = f"{action}Request"
    doc, annotation = "", ""
    for part in path:
        fields = {f.replace("_", ""): v for f, v in classes.get(cls, {}).items()}
        if part.lower() not in fields:
            raise LookupError(f"{ref}: {cls} has no field {part}")
        doc, annotation = fields[part.lower()]
        inner = re.sub(r"List\[|Dict\[str, |\]|main_models\.", "", annotation).strip()
        cls = inner.split(".")[-1]
    structure = cls in classes
    return Member(ref, doc, annotation, structure)


READERS = {"tccli": tencent_member, "alibaba-sdk": alibaba_member}


def member(reader: str, ref: str) -> Member:
    """The member `ref` as the named reader (an api_map.yaml's `spec.reader`) finds it."""
    return READERS[reader](ref)
