"""Snapshot the flags `vllm serve` accepts, from the installed vLLM package.

Run with a Python that has vLLM installed (it needs nothing from gpufleet but its file writer, src/gpufleet/files.py
of this checkout, which needs msgspec: a vLLM dependency):

    /work/vllm-venv/bin/python scripts/vllm_args_snapshot.py            # writes sizing/data/vllm_args/<version>.json
    /work/vllm-venv/bin/python scripts/vllm_args_snapshot.py --check sizing/data/vllm_args/0.33.0.json

The parser is the one `vllm serve` builds: vLLM's own `make_arg_parser` (the frontend flags of the
OpenAI-compatible server, then `AsyncEngineArgs.add_cli_args`) on a `FlexibleArgumentParser`.
Every optional action of that parser becomes one entry of "args", keyed by its canonical flag:

    {"dest", "type", "choices", "nargs", "action", "aliases", "group"}

- canonical flag: the first `--long` option string the action was declared with (for a
  BooleanOptionalAction that is the positive form, e.g. --enable-prefix-caching);
- aliases: every other option string the parser accepts for the same action, sorted
  (-tp, --no-enable-prefix-caching, vLLM's hidden --disable-x twin of an --enable-x flag, ...).
  vLLM also accepts `_` for `-` in any long flag (FlexibleArgumentParser rewrites them before
  parsing); those spellings are not listed;
- group: "engine" when `AsyncEngineArgs.add_cli_args` adds the flag (checked by building that part
  alone on a fresh parser), otherwise "frontend";
- action: store | store_true | store_false | boolean_optional | append | count | other;
- type: the value the flag accepts, in a small vocabulary (see `type_name` for the rule);
- choices: the allowed values in vLLM's order (null stays null: an optional flag accepts "None"), or null;
- nargs: argparse's nargs as declared (null, "?", "*", "+" or an int; 0 for flags that take no value).

Defaults and help texts are left out on purpose: some depend on the machine (CPU count, memory,
platform) or on sys.argv, and the snapshot must be the same wherever it is generated.
"generated_at" is ignored by --check, everything else must match.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import difflib
import io
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # checkout_write, beside this script
from checkout_write import write_atomic  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "src" / "gpufleet" / "sizing" / "data" / "vllm_args"


GENERATOR = "scripts/vllm_args_snapshot.py"
TYPES = ("int", "float", "str", "bool", "json", "other")
ACTIONS = ("store", "store_true", "store_false", "boolean_optional", "append", "count", "other")
GROUPS = ("engine", "frontend")
IGNORED_ON_CHECK = ("generated_at",)
# (spelling, a value) pairs that FlexibleArgumentParser may rewrite into a long flag; see rewritten_aliases.
REWRITE_PROBES = (("-O", "3"),)
# vLLM resolves its platform (CUDA, ROCm, CPU, ...) on first use; without a GPU it finds none and the
# parser cannot be built (VllmConfig's DeviceConfig refuses). The CPU platform is set before anything
# resolves it, on every machine, so the snapshot does not depend on where it is generated. The one
# known platform-dependent detail: vLLM adds the device type to --mm-processor-device's choices on a
# GPU platform ("cuda"), so those choices read ["auto", "cpu"] here.
PLATFORM = "cpu"

# Type callables vLLM uses, by qualified name -> vocabulary word. Wrappers whose closure holds the real
# parser (parse_type(X), optional_type(X)) are unwrapped first, see `type_name`.
_NAMED_TYPES = {
    "int": "int",
    "float": "float",
    "str": "str",
    "bool": "bool",
    "human_readable_int": "int",  # "1k", "2M", "25.6k" or a plain integer
    "human_readable_int_or_auto": "int",  # the same, plus "auto" / -1
    "loads": "json",  # json.loads
    "_compute_kwargs.<locals>.parse_dataclass": "json",  # JSON validated against a vLLM config dataclass
    "union_dict_and_str": "str",  # any string; one that looks like {...} must be JSON
    "parse_reasoning_parser": "str",  # a name; "none" means unset
}
_WRAPPERS = ("parse_type.<locals>._parse_type", "optional_type.<locals>._optional_type")


def type_name(fn: Callable[[str], Any] | None, action_kind: str, nargs: Any = None) -> str:
    """The vocabulary word (int, float, str, bool, json, other) for an argparse `type` callable.

    Rule:
    1. a count flag is "int"; any other flag that takes no value (nargs 0: store_true, store_false,
       boolean_optional, --help) is "bool";
    2. no `type` on a value flag means argparse passes the string through: "str";
    3. vLLM's wrappers `parse_type(X)` and `optional_type(X)` (error message / "None" handling) are
       unwrapped to X through their closure;
    4. X is looked up by qualified name: int, float, str, bool as themselves; human_readable_int and
       human_readable_int_or_auto -> int; json.loads and vLLM's per-dataclass JSON parser -> json;
       union_dict_and_str and parse_reasoning_parser (accept any string) -> str;
    5. anything else (e.g. a lambda that normalises case) is "other": the checker can only test
       membership in choices, if there are any.
    """
    if action_kind == "count":
        return "int"
    if nargs == 0 or action_kind in ("store_true", "store_false", "boolean_optional"):
        return "bool"
    if fn is None:
        return "str"
    seen = 0
    while getattr(fn, "__qualname__", "") in _WRAPPERS and seen < 5:
        cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
        inner = cells.get("return_type")
        if inner is None:
            break
        fn = inner.cell_contents
        seen += 1
    qualname = getattr(fn, "__qualname__", "")
    if fn is json.loads:
        return "json"
    if qualname in _NAMED_TYPES and (qualname != "loads" or getattr(fn, "__module__", "") == "json"):
        return _NAMED_TYPES[qualname]
    return "other"


def action_kind(action: argparse.Action) -> str:
    # BooleanOptionalAction first: vLLM registers a subclass of it (EnableDisableAction).
    if isinstance(action, argparse.BooleanOptionalAction):
        return "boolean_optional"
    exact = {
        argparse._StoreAction: "store",
        argparse._StoreTrueAction: "store_true",
        argparse._StoreFalseAction: "store_false",
        argparse._AppendAction: "append",
        argparse._CountAction: "count",
    }
    return exact.get(type(action), "other")


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _choices(action: argparse.Action) -> list | None:
    if action.choices is None:
        return None
    values = [_jsonable(c) for c in action.choices]
    if isinstance(action.choices, (set, frozenset)):  # no order of its own: make one
        values.sort(key=lambda v: (v is None, str(v)))
    return values


def _canonical(action: argparse.Action) -> str:
    return next((o for o in action.option_strings if o.startswith("--")), action.option_strings[0])


def accepted_option_strings(parser: argparse.ArgumentParser) -> dict[int, list[str]]:
    """id(action) -> every option string the parser maps to it.

    The parser's own table, not `action.option_strings`: vLLM hides some spellings from help by
    shortening `option_strings` after registration, but still accepts them.
    """
    accepted: dict[int, list[str]] = {}
    for option, action in parser._option_string_actions.items():
        accepted.setdefault(id(action), []).append(option)
    return accepted


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> dict | None:
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            return vars(parser.parse_args(argv))
    except SystemExit:
        return None


def rewritten_aliases(parser: argparse.ArgumentParser) -> dict[str, list[str]]:
    """canonical flag -> spellings FlexibleArgumentParser rewrites into it before argparse parses.

    Such spellings (e.g. `-O 3` for `--optimization-level 3`) are not in the parser's table. Each
    candidate in REWRITE_PROBES is probed, not assumed: it becomes an alias of a flag only when
    `parse_args([spelling, value])` gives exactly what `parse_args([flag, value])` gives.
    """
    found: dict[str, list[str]] = {}
    base = _parse(parser, [])
    if base is None:
        return found
    for spelling, value in REWRITE_PROBES:
        if spelling in parser._option_string_actions:
            continue  # a registered option string: already an alias
        probed = _parse(parser, [spelling, value])
        if probed is None:
            continue
        changed = {d for d in probed if probed[d] != base.get(d)}
        for action in parser._actions:
            if action.option_strings and action.dest in changed:
                if _parse(parser, [_canonical(action), value]) == probed:
                    found.setdefault(_canonical(action), []).append(spelling)
    return found


def entries(parser: argparse.ArgumentParser, engine_options: set[str]) -> dict[str, dict]:
    accepted = accepted_option_strings(parser)
    for flag, spellings in rewritten_aliases(parser).items():
        accepted.setdefault(id(parser._option_string_actions[flag]), []).extend(spellings)
    args: dict[str, dict] = {}
    for action in parser._actions:
        if not action.option_strings:  # positionals (the model tag)
            continue
        flag = _canonical(action)
        kind = action_kind(action)
        options = set(accepted.get(id(action), [])) | set(action.option_strings)
        if flag in args:
            raise SystemExit(f"{flag} is declared twice in the vllm serve parser")
        args[flag] = {
            "dest": action.dest,
            "type": type_name(action.type, kind, action.nargs),
            "choices": _choices(action),
            "nargs": action.nargs,
            "action": kind,
            "aliases": sorted(options - {flag}),
            "group": "engine" if options & engine_options else "frontend",
        }
    return dict(sorted(args.items()))


def _import_first(candidates: list[tuple[str, str]]):
    errors = []
    for module, name in candidates:
        try:
            mod = __import__(module, fromlist=[name])
            return getattr(mod, name), module
        except (ImportError, AttributeError) as exc:
            errors.append(f"{module}.{name}: {exc}")
    raise SystemExit("cannot import from the installed vllm:\n  " + "\n  ".join(errors))


def use_cpu_platform() -> None:
    """Make vLLM's current platform the CPU platform (vllm.platforms keeps it in _current_platform)."""
    import vllm.platforms as platforms
    from vllm.platforms.cpu import CpuPlatform

    current = platforms._current_platform
    if current is None:
        platforms._current_platform = CpuPlatform()
    elif not isinstance(current, CpuPlatform):
        raise SystemExit(
            f"vLLM already resolved its platform to {type(current).__name__}; run the snapshot in a fresh "
            "process (it builds the parser on the CPU platform so that it is the same everywhere)"
        )


def build() -> dict:
    """The snapshot of the installed vLLM, as a dict (generated_at = today)."""
    import vllm

    use_cpu_platform()
    from vllm.engine.arg_utils import AsyncEngineArgs

    parser_cls, _ = _import_first(
        [
            ("vllm.utils.argparse_utils", "FlexibleArgumentParser"),  # 0.11 and later
            ("vllm.utils", "FlexibleArgumentParser"),  # 0.10 and earlier
        ]
    )
    make_arg_parser, frontend_module = _import_first(
        [
            ("vllm.entrypoints.common.cli_args", "make_arg_parser"),  # 0.2x and later
            ("vllm.entrypoints.openai.cli_args", "make_arg_parser"),  # 0.10
        ]
    )
    serve = make_arg_parser(parser_cls(prog="vllm serve"))
    engine_only = AsyncEngineArgs.add_cli_args(parser_cls(prog="engine", add_help=False))
    engine_options = set(engine_only._option_string_actions)
    version = vllm.__version__
    return {
        "vllm_version": version,
        "source": (
            f"vllm=={version} from PyPI, parser of `vllm serve` ({frontend_module}.make_arg_parser"
            f" + vllm.engine.arg_utils.AsyncEngineArgs.add_cli_args), on vLLM's {PLATFORM} platform"
        ),
        "generated_at": _dt.date.today().isoformat(),
        "generator": GENERATOR,
        "args": entries(serve, engine_options),
    }


def dumps(snapshot: dict) -> str:
    return json.dumps(snapshot, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def diff(committed: dict, fresh: dict, committed_name: str) -> str:
    """A unified diff of the two snapshots ("" when equal), ignoring IGNORED_ON_CHECK."""
    a = {k: v for k, v in committed.items() if k not in IGNORED_ON_CHECK}
    b = {k: v for k, v in fresh.items() if k not in IGNORED_ON_CHECK}
    if a == b:
        return ""
    lines = difflib.unified_diff(
        dumps(a).splitlines(keepends=True),
        dumps(b).splitlines(keepends=True),
        fromfile=committed_name,
        tofile=f"vllm=={fresh.get('vllm_version')} (installed)",
    )
    return "".join(lines)


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cli.add_argument(
        "--check",
        metavar="FILE",
        type=Path,
        help="regenerate in memory and exit 1 with a diff if FILE differs (generated_at ignored)",
    )
    cli.add_argument("-o", "--output", type=Path, help=f"where to write (default {OUT_DIR.relative_to(ROOT)}/<version>.json)")
    opts = cli.parse_args(argv)
    fresh = build()
    if opts.check:
        try:
            committed = json.loads(opts.check.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            print(f"{opts.check}: cannot read the snapshot: {exc}", file=sys.stderr)
            return 2
        text = diff(committed, fresh, str(opts.check))
        if text:
            sys.stdout.write(text)
            print(
                f"{opts.check}: differs from vllm=={fresh['vllm_version']}; regenerate with python {GENERATOR}", file=sys.stderr
            )
            return 1
        print(f"{opts.check}: matches vllm=={fresh['vllm_version']} ({len(fresh['args'])} flags)")
        return 0
    out = opts.output or OUT_DIR / f"{fresh['vllm_version']}.json"
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        print(f"{out.parent}: cannot create it: {exc.strerror}", file=sys.stderr)
        return 2
    # every preview reads the snapshot: never half of one
    if code := write_atomic(out, dumps(fresh), **({"flag": "-o"} if opts.output else {"shown": str(out)})):
        return code
    print(f"wrote {out} ({len(fresh['args'])} flags)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
