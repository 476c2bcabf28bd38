"""Snapshot which model architectures each vLLM release can serve, from its wheel's model registry.

    python scripts/vllm_registry_snapshot.py WHEEL [WHEEL ...]     # rewrites sizing/data/vllm_architectures.json
    python scripts/vllm_registry_snapshot.py --check WHEEL [...]   # fails on any difference

WHEEL: a vLLM wheel as PyPI ships it (`pip download vllm==X --no-deps`). The file read is
`vllm/model_executor/models/registry.py`, parsed (never imported: it needs torch and a GPU platform). Per release:
- generate: the architectures vLLM serves for text generation: the keys of `_TEXT_GENERATION_MODELS`,
  `_MULTIMODAL_MODELS` and (from the releases that have it) `_TRANSFORMERS_SUPPORTED_MODELS`, which vLLM runs through
  its Transformers backend by name;
- transformers_fallback: whether the registry has the Transformers backend (`_TRANSFORMERS_MODELS` or
  `_TRANSFORMERS_BACKEND_MODELS`), which vLLM tries for an architecture it does not list when transformers has its
  class (`ModelRegistry.inspect_model_cls`, model_impl "auto");
- previously_supported: `_PREVIOUSLY_SUPPORTED_MODELS` (architecture -> the last release that served it).
Releases before the file existed in this form are not read. Keys built by a comprehension (the embedding models' copy
of Llama) are not generation models and are left out.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "src" / "gpufleet" / "sizing" / "data" / "vllm_architectures.json"
REGISTRY = "vllm/model_executor/models/registry.py"
GENERATE = ("_TEXT_GENERATION_MODELS", "_MULTIMODAL_MODELS", "_TRANSFORMERS_SUPPORTED_MODELS")
FALLBACK = ("_TRANSFORMERS_MODELS", "_TRANSFORMERS_BACKEND_MODELS")


def dict_literals(source: str) -> dict[str, ast.Dict]:
    """Module-level `NAME = {...}` / `NAME: T = {...}` dict literals of a source file."""
    out = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            name, value = node.target.id, node.value
        else:
            continue
        if isinstance(value, ast.Dict):
            out[name] = value
    return out


def string_keys(d: ast.Dict) -> list[str]:
    return [k.value for k in d.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]


def release(wheel: Path) -> tuple[str, dict]:
    """(version, its entry) from one wheel."""
    m = re.match(r"vllm-([^-]+)-", wheel.name)
    if not m:
        raise SystemExit(f"{wheel}: not a vLLM wheel name (vllm-<version>-...whl)")
    with zipfile.ZipFile(wheel) as z:
        source = z.read(REGISTRY).decode("utf-8")
    dicts = dict_literals(source)
    if "_TEXT_GENERATION_MODELS" not in dicts:
        raise SystemExit(f"{wheel}: {REGISTRY} has no _TEXT_GENERATION_MODELS literal")
    previously = {}
    if "_PREVIOUSLY_SUPPORTED_MODELS" in dicts:
        d = dicts["_PREVIOUSLY_SUPPORTED_MODELS"]
        previously = {k.value: v.value for k, v in zip(d.keys, d.values, strict=True) if isinstance(k, ast.Constant)}
    return m.group(1), {
        "source": f"https://pypi.org/project/vllm/{m.group(1)}/ ({wheel.name}, {REGISTRY})",
        "registry_sha256": hashlib.sha256(source.encode("utf-8")).hexdigest(),
        "generate": sorted({a for name in GENERATE if name in dicts for a in string_keys(dicts[name])}),
        "transformers_fallback": any(name in dicts for name in FALLBACK),
        "previously_supported": dict(sorted(previously.items())),
    }


def snapshot(wheels: list[Path]) -> dict:
    releases = dict(release(w) for w in wheels)
    order = sorted(releases, key=lambda v: tuple(int(p) for p in re.findall(r"\d+", v)[:3]))
    return {
        "generator": "scripts/vllm_registry_snapshot.py",
        "releases": {v: releases[v] for v in order},
    }


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("wheels", nargs="+", type=Path)
    ap.add_argument("--check", action="store_true", help="compare with the committed file instead of writing it")
    args = ap.parse_args(argv)
    text = json.dumps(snapshot(args.wheels), indent=1) + "\n"
    if args.check:
        if OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT}: differs from what the wheels give", file=sys.stderr)
            return 1
        print(f"{OUT}: matches")
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT} ({len(args.wheels)} releases)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
