"""The vLLM flag snapshots in sizing/data/vllm_args/ (one per vLLM version an image recipe pins).

Default tier: only the committed files and the generator's pure functions, no vLLM needed.
`-m vllm` tier: regenerates the snapshot from the vLLM installed in the running interpreter and fails
on any difference (run it with a Python that has vLLM, e.g. /work/vllm-venv/bin/python -m pytest
tests/sizing/test_vllm_snapshot.py -m vllm). This module imports only the standard library and pytest
at import time, so that tier runs in a venv that has vLLM and pytest but not gpufleet's dependencies.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import re
import sys
from pathlib import Path

import msgspec
import pytest

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOTS = ROOT / "src" / "gpufleet" / "sizing" / "data" / "vllm_args"
SCRIPT = ROOT / "scripts" / "vllm_args_snapshot.py"
ENTRY_FIELDS = {"dest", "type", "choices", "nargs", "action", "aliases", "group"}
TOP_FIELDS = {"vllm_version", "source", "generated_at", "generator", "args"}


def _load_script():
    spec = importlib.util.spec_from_file_location("vllm_args_snapshot", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("vllm_args_snapshot", module)
    spec.loader.exec_module(module)
    return module


gen = _load_script()


def _snapshot_files() -> list[Path]:
    return sorted(SNAPSHOTS.glob("*.json"))


def _accepted(snapshot: dict) -> set[str]:
    """Every spelling the snapshot's vLLM accepts (canonical flags and aliases)."""
    args = snapshot["args"]
    return set(args) | {alias for entry in args.values() for alias in entry["aliases"]}


# ---- default tier: the committed snapshots ------------------------------------------------------


def test_there_are_snapshots():
    assert _snapshot_files(), f"no snapshot in {SNAPSHOTS}"


@pytest.mark.parametrize("path", _snapshot_files(), ids=lambda p: p.name)
def test_snapshot_follows_the_contract(path: Path):
    text = path.read_text()
    data = json.loads(text)
    assert set(data) == TOP_FIELDS
    version = data["vllm_version"]
    assert path.stem == version, f"{path.name} holds vllm {version}"
    assert data["source"].startswith(f"vllm=={version} from PyPI, parser of `vllm serve` (")
    assert "AsyncEngineArgs.add_cli_args" in data["source"]
    datetime.date.fromisoformat(data["generated_at"])
    assert data["generator"] == "scripts/vllm_args_snapshot.py" and (ROOT / data["generator"]).is_file()
    assert text == gen.dumps(data), f"{path.name} is not in the generator's canonical form (sorted keys, indent 2)"

    args = data["args"]
    assert len(args) > 100, f"only {len(args)} flags: not the whole `vllm serve` parser"
    seen: dict[str, str] = {}
    for flag, entry in args.items():
        where = f"{path.name}: {flag}"
        assert re.fullmatch(r"--[a-z0-9][a-z0-9-]*", flag), where
        assert set(entry) == ENTRY_FIELDS, where
        assert re.fullmatch(r"[a-z_][a-z0-9_]*", entry["dest"]), where
        assert entry["type"] in gen.TYPES, where
        assert entry["action"] in gen.ACTIONS, where
        assert entry["group"] in gen.GROUPS, where
        assert entry["choices"] is None or (isinstance(entry["choices"], list) and entry["choices"]), where
        nargs = entry["nargs"]
        assert nargs is None or nargs in ("?", "*", "+") or (isinstance(nargs, int) and nargs >= 0), where
        aliases = entry["aliases"]
        assert aliases == sorted(set(aliases)) and flag not in aliases, where
        for spelling in [flag, *aliases]:
            assert spelling not in seen, f"{where}: {spelling} also belongs to {seen.get(spelling)}"
            seen[spelling] = flag
        if entry["action"] == "boolean_optional":
            assert "--no-" + flag[2:] in aliases, f"{where}: the --no- form is not in aliases"
            assert entry["type"] == "bool" and entry["nargs"] == 0, where
        if entry["action"] in ("store_true", "store_false"):
            assert entry["type"] == "bool", where
    groups = {entry["group"] for entry in args.values()}
    assert groups == {"engine", "frontend"}, f"{path.name}: groups {groups}"
    # Spot checks that pin the group rule to real flags of every vLLM line we ship.
    assert args["--port"]["group"] == "frontend" and args["--port"]["type"] == "int"
    assert args["--max-model-len"]["group"] == "engine" and args["--max-model-len"]["type"] == "int"
    assert args["--gpu-memory-utilization"]["type"] == "float"


def _rendered_flags() -> dict[str, set[str]]:
    """stack -> every flag gpufleet's renderer can put on that stack's `vllm serve` line.

    The real renderer (components.userdata.vllm_args) on each shipped stack, with every unset
    (None / False) serving field given a value so that its flag is rendered too.
    """
    from gpufleet import validation
    from gpufleet.components import userdata
    from gpufleet.stacks import loader

    flags: dict[str, set[str]] = {}
    for stack in loader.stack_names(ROOT):
        fleet = validation.load_fleet(stack, ROOT)
        serving = fleet.spec.serving
        unset = {name: "x" for name, value in serving if value is None or value is False}
        full = serving.model_copy(update=unset)
        every = msgspec.structs.replace(fleet, spec=fleet.spec.model_copy(update={"serving": full}))
        for one in (fleet, every):
            flags.setdefault(stack, set()).update(a for a in userdata.vllm_args(one) if a.startswith("-"))
    return flags


def test_renderer_flags_include_the_spec_fields():
    """Guards the helper above: it must see the flags of optional fields, not only the set ones."""
    flags = set().union(*_rendered_flags().values())
    assert {"--port", "--host", "--served-model-name", "--max-model-len", "--quantization"} <= flags


@pytest.mark.parametrize("path", _snapshot_files(), ids=lambda p: p.name)
def test_every_flag_gpufleet_renders_is_known(path: Path):
    snapshot = json.loads(path.read_text())
    accepted = _accepted(snapshot)
    missing = {stack: sorted(f for f in flags if f not in accepted) for stack, flags in _rendered_flags().items()}
    missing = {stack: flags for stack, flags in missing.items() if flags}
    assert not missing, f"vllm {snapshot['vllm_version']} does not accept: {missing}"


def test_every_pinned_vllm_has_a_snapshot():
    from gpufleet.images.recipes import load_recipe, recipe_names

    pinned = {name: load_recipe(name).pins["vllm"] for name in recipe_names()}
    assert pinned, "no image recipe"
    missing = {name: v for name, v in pinned.items() if not (SNAPSHOTS / f"{v}.json").is_file()}
    assert not missing, f"no snapshot for {missing}: run `python scripts/vllm_args_snapshot.py` with that vLLM installed"


# ---- default tier: the generator's rules, on plain argparse -------------------------------------


def optional_type(return_type):  # same shape as vllm.engine.arg_utils.optional_type
    def _optional_type(val):
        return None if val in ("", "None") else return_type(val)

    return _optional_type


def parse_type(return_type):  # same shape as vllm.engine.arg_utils.parse_type
    def _parse_type(val):
        return return_type(val)

    return _parse_type


def human_readable_int(value):  # named like vLLM's helper
    return int(value)


@pytest.mark.parametrize(
    ("fn", "kind", "nargs", "expected"),
    [
        (int, "store", None, "int"),
        (float, "store", None, "float"),
        (None, "store", None, "str"),
        (json.loads, "store", None, "json"),
        (optional_type(int), "store", None, "int"),
        (optional_type(parse_type(json.loads)), "store", None, "json"),
        (parse_type(float), "store", None, "float"),
        (human_readable_int, "store", None, "int"),
        (lambda s: s.lower(), "store", None, "other"),
        (None, "store_true", 0, "bool"),
        (None, "boolean_optional", 0, "bool"),
        (None, "other", 0, "bool"),
        (None, "count", 0, "int"),
    ],
)
def test_type_rule(fn, kind, nargs, expected):
    assert gen.type_name(fn, kind, nargs) == expected


def _toy_parser(cls=argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser = cls(prog="toy")
    parser.add_argument("model_tag", nargs="?")
    parser.add_argument("--port", type=int)
    parser.add_argument("--tensor-parallel-size", "-tp", type=optional_type(int))
    parser.add_argument("--enable-prefix-caching", action=argparse.BooleanOptionalAction)
    parser.add_argument("--dtype", choices=["auto", "half", None])
    parser.add_argument("--middleware", action="append")
    parser.add_argument("--api-key", nargs="+")
    parser.add_argument("--optimization-level", type=int, default=2)
    return parser


def test_entries_walk_the_parser():
    args = gen.entries(_toy_parser(), engine_options={"--enable-prefix-caching", "-tp"})
    assert sorted(args) == sorted(args.keys()) == list(args)
    assert "model_tag" not in str(list(args))
    assert args["--enable-prefix-caching"] == {
        "dest": "enable_prefix_caching",
        "type": "bool",
        "choices": None,
        "nargs": 0,
        "action": "boolean_optional",
        "aliases": ["--no-enable-prefix-caching"],
        "group": "engine",
    }
    assert args["--tensor-parallel-size"]["aliases"] == ["-tp"]
    assert args["--tensor-parallel-size"]["group"] == "engine"  # matched through an alias
    assert args["--tensor-parallel-size"]["type"] == "int"
    assert args["--port"]["group"] == "frontend"
    assert args["--dtype"]["choices"] == ["auto", "half", None]
    assert args["--middleware"]["action"] == "append"
    assert args["--api-key"]["nargs"] == "+"
    assert args["--help"]["aliases"] == ["-h"] and args["--help"]["type"] == "bool"
    assert args["--optimization-level"]["aliases"] == []  # plain argparse does not rewrite -O


class _RewritingParser(argparse.ArgumentParser):
    """Rewrites `-O N` into `--optimization-level N`, the way vLLM's FlexibleArgumentParser does."""

    def parse_args(self, args=None, namespace=None):
        args = ["--optimization-level" if a == "-O" else a for a in (args or [])]
        return super().parse_args(args, namespace)


def test_rewritten_spellings_are_probed_into_aliases():
    args = gen.entries(_toy_parser(_RewritingParser), engine_options=set())
    assert args["--optimization-level"]["aliases"] == ["-O"]


def test_check_ignores_only_the_date():
    committed = json.loads(_snapshot_files()[-1].read_text())
    same_but_later = {**committed, "generated_at": "2099-01-01"}
    assert gen.diff(committed, same_but_later, "committed.json") == ""
    changed = json.loads(json.dumps(committed))
    flag = sorted(changed["args"])[0]
    changed["args"][flag]["type"] = "other"
    text = gen.diff(committed, changed, "committed.json")
    assert text.startswith("--- committed.json") and '"other"' in text


# ---- vllm tier: regenerate from the installed package -------------------------------------------


@pytest.mark.vllm
def test_snapshot_matches_the_installed_vllm():
    vllm = pytest.importorskip("vllm", reason="the vllm tier needs vLLM in this interpreter (pip install .[vllm])")
    path = SNAPSHOTS / f"{vllm.__version__}.json"
    assert path.is_file(), f"no snapshot for the installed vllm=={vllm.__version__}: run `python scripts/vllm_args_snapshot.py`"
    fresh = gen.build()
    assert fresh["vllm_version"] == vllm.__version__
    text = gen.diff(json.loads(path.read_text()), fresh, str(path.relative_to(ROOT)))
    assert not text, f"{path.relative_to(ROOT)} differs from the installed vLLM:\n{text}"
