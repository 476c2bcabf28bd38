"""The `vllm serve` flags a stack renders, checked against the engine arguments of the vLLM its image pins.

Snapshots in data/vllm_args/<version>.json are written by scripts/vllm_args_snapshot.py from the real package.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from gpufleet import inputs
from gpufleet.errors import did_you_mean

SNAPSHOTS = Path(__file__).parent / "data" / "vllm_args"


@cache
def snapshot(version: str) -> dict | None:
    path = SNAPSHOTS / f"{version}.json"

    if not path.exists():
        return None
    shown = f"sizing/data/vllm_args/{path.name}"
    with inputs.shaped(shown):
        return inputs.load_mapping(path, shown)["args"]


def _accepted(args: dict) -> dict[str, dict]:
    """Every spelling vLLM accepts (aliases, and `_` for `-` in long flags) -> the flag's facts."""
    out = {}
    for flag, facts in args.items():
        for name in [flag, *facts.get("aliases", [])]:
            out[name] = facts
            out[name.replace("_", "-")] = facts
    return out


def argv_problems(argv: list[str], version: str) -> list[str]:
    """Unknown flags and values outside a flag's choices, for `vllm serve` argv under vLLM `version`."""
    args = snapshot(version)
    if args is None:
        have = ", ".join(sorted(p.stem for p in SNAPSHOTS.glob("*.json")))
        return [
            f"no flag snapshot for vLLM {version} (have {have}); write one with `python scripts/vllm_args_snapshot.py` "
            f"(a script of a gpufleet checkout, the repository; an installed gpufleet has none) in a venv with vllm=={version}"
        ]
    accepted = _accepted(args)
    out = []
    for i, token in enumerate(argv):
        if not token.startswith("--"):
            continue
        name = token.split("=", 1)[0]
        facts = accepted.get(name) or accepted.get(name.replace("_", "-"))
        if facts is None:
            out.append(f"{name} is not a vLLM {version} engine argument" + did_you_mean(name, list(args)))
            continue
        value = token.split("=", 1)[1] if "=" in token else (argv[i + 1] if i + 1 < len(argv) else None)
        choices = facts.get("choices")
        if choices and value is not None and not value.startswith("--") and value not in [str(c) for c in choices]:
            out.append(f"{name} {value}: vLLM {version} accepts {', '.join(map(str, choices))}")
    return out
