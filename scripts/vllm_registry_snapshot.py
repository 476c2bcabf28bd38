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
- previously_supported: `_PREVIOUSLY_SUPPORTED_MODELS` (architecture -> the last release that served it);
- no_pipeline_parallel: the generation architectures whose class does not implement `SupportsPP`, which vLLM refuses
  with a pipeline-parallel size above 1 (`ModelRegistry.is_pp_supported_model`, checked in
  ModelConfig.verify_with_parallel_config): each registry value names (module, class) under
  vllm/model_executor/models/; the class's bases are followed through that module's classes and its imports of other
  model modules (`from .llama import LlamaForCausalLM`) until `SupportsPP` is found or the bases run out.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))  # checkout_write, beside this script
from checkout_write import write_atomic  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "src" / "gpufleet" / "sizing" / "data" / "vllm_architectures.json"


REGISTRY = "vllm/model_executor/models/registry.py"
QUANTIZATION = "vllm/model_executor/layers/quantization/__init__.py"
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


MODELS = "vllm.model_executor.models"


class Modules:
    """The wheel's Python modules by dotted name, parsed on demand: each as (class name -> base names, imported name ->
    the dotted module it comes from). A module the wheel does not have is None."""

    def __init__(self, z: zipfile.ZipFile) -> None:
        self.z, self.names, self.parsed = z, set(z.namelist()), {}

    def get(self, module: str) -> tuple[dict[str, list[str]], dict[str, str]] | None:
        if module not in self.parsed:
            self.parsed[module] = self._parse(module)
        return self.parsed[module]

    def _parse(self, module: str):
        path = module.replace(".", "/")
        file = next((f for f in (f"{path}.py", f"{path}/__init__.py") if f in self.names), None)
        if file is None:
            return None
        package = module if file.endswith("__init__.py") else module.rpartition(".")[0]
        classes, imported = {}, {}
        for node in ast.parse(self.z.read(file).decode("utf-8")).body:
            if isinstance(node, ast.ClassDef):
                classes[node.name] = [
                    b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else "" for b in node.bases
                ]
            elif isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("vllm.")):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                source = ".".join([*base, node.module] if node.module else base) if node.level else node.module
                for a in node.names:
                    imported[a.asname or a.name] = f"{source}.{a.name}" if self.get_is_module(source, a.name) else source
        return classes, imported

    def get_is_module(self, source: str, name: str) -> bool:
        """`from .pkg import mod` imports a module, not a class."""
        path = f"{source}.{name}".replace(".", "/")
        return f"{path}.py" in self.names or f"{path}/__init__.py" in self.names


def supports_pp(modules: Modules, module: str, cls: str, seen: frozenset = frozenset()) -> bool | None:
    """Whether the class, through its bases, implements SupportsPP; None where a class of vLLM's could not be found."""
    got = modules.get(module)
    if got is None or (module, cls) in seen:
        return None if got is None else False
    classes, imported = got
    if cls not in classes:
        return supports_pp(modules, imported[cls], cls, seen | {(module, cls)}) if cls in imported else None
    answers = []
    for base in classes[cls]:
        if base == "SupportsPP":
            return True
        where = module if base in classes else imported.get(base)
        if where:
            answers.append(supports_pp(modules, where, base, seen | {(module, cls)}))
    if any(answers):
        return True
    return None if None in answers else False


def _targets(d: ast.Dict) -> dict[str, tuple[str, str]]:
    """Architecture -> (module, class) of a registry dict literal."""
    out = {}
    for k, v in zip(d.keys, d.values, strict=True):
        if isinstance(k, ast.Constant) and isinstance(v, ast.Tuple) and len(v.elts) >= 2:
            first, second = v.elts[0], v.elts[1]
            if isinstance(first, ast.Constant) and isinstance(second, ast.Constant):
                out[k.value] = (first.value, second.value)
    return out


def release(wheel: Path) -> tuple[str, dict]:
    """(version, its entry) from one wheel."""
    m = re.match(r"vllm-([^-]+)-", wheel.name)
    if not m:
        raise SystemExit(f"{wheel}: not a vLLM wheel name (vllm-<version>-...whl)")
    with zipfile.ZipFile(wheel) as z:
        source = z.read(REGISTRY).decode("utf-8")
        modules = Modules(z)
        targets = {a: t for name in GENERATE[:2] if name in (d := dict_literals(source)) for a, t in _targets(d[name]).items()}
        no_pp = sorted(a for a, (m, c) in targets.items() if supports_pp(modules, m if "." in m else f"{MODELS}.{m}", c) is False)
    dicts = dict_literals(source)
    if "_TEXT_GENERATION_MODELS" not in dicts:
        raise SystemExit(f"{wheel}: {REGISTRY} has no _TEXT_GENERATION_MODELS literal")
    previously = {}
    if "_PREVIOUSLY_SUPPORTED_MODELS" in dicts:
        d = dicts["_PREVIOUSLY_SUPPORTED_MODELS"]
        previously = {k.value: v.value for k, v in zip(d.keys, d.values, strict=True) if isinstance(k, ast.Constant)}
    with zipfile.ZipFile(wheel) as z:
        methods = quantization_methods(z.read(QUANTIZATION).decode("utf-8"))
    if not methods:
        raise SystemExit(f"{wheel}: {QUANTIZATION} has no QUANTIZATION_METHODS (dict) or QuantizationMethods (Literal)")
    return m.group(1), {
        "source": f"https://pypi.org/project/vllm/{m.group(1)}/ ({wheel.name}, {REGISTRY}, {QUANTIZATION})",
        "registry_sha256": hashlib.sha256(source.encode("utf-8")).hexdigest(),
        "generate": sorted({a for name in GENERATE if name in dicts for a in string_keys(dicts[name])}),
        "transformers_fallback": any(name in dicts for name in FALLBACK),
        "previously_supported": dict(sorted(previously.items())),
        "no_pipeline_parallel": no_pp,
        "quantization_methods": methods,
    }


def quantization_methods(source: str) -> list[str]:
    """The --quantization / quant_method names the release takes (ModelConfig._verify_quantization refuses any other:
    "Unknown quantization method"): `QUANTIZATION_METHODS`, a dict literal (to 0.6.x) or a list literal (0.7.x), or
    the arguments of `QuantizationMethods = Literal[...]` (later releases build the list from it)."""
    for node in ast.parse(source).body:
        value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        names = {t.id for t in targets if isinstance(t, ast.Name)}
        if "QUANTIZATION_METHODS" in names and isinstance(value, ast.Dict):
            return sorted(string_keys(value))
        if "QUANTIZATION_METHODS" in names and isinstance(value, ast.List):
            return sorted(a.value for a in value.elts if isinstance(a, ast.Constant) and isinstance(a.value, str))
        if "QuantizationMethods" in names and isinstance(value, ast.Subscript):
            args = value.slice.elts if isinstance(value.slice, ast.Tuple) else [value.slice]
            return sorted(a.value for a in args if isinstance(a, ast.Constant) and isinstance(a.value, str))
    return []


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
    if code := write_atomic(OUT, text, shown=str(OUT)):  # plan fit reads it: never half a file
        return code
    print(f"wrote {OUT} ({len(args.wheels)} releases)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
