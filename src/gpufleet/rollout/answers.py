"""The answer-regression gate: the same prompts, greedy decoding, both groups; do the answers stay the same?

Prompts: the package's default set (data/prompts.yaml) plus the user's file: YAML (a list of strings or of
`{id, prompt}`, or a mapping with `prompts:`) or JSON Lines (`.jsonl`: one string or `{"id", "prompt"}` per line). Each is sent once to each endpoint as a non-streaming chat completion
with temperature 0, top_p 1, the set's max_tokens and seed, so a version that has not changed answers the same.

- exact match: the two answers are equal once leading and trailing whitespace is removed;
- similarity: difflib.SequenceMatcher ratio over the answers' whitespace-separated tokens (2 x matching tokens /
  all tokens, order-aware; 1.0 the same, 0.0 nothing in common; a prompt either side failed to answer: 0). The gate
  compares the mean over all prompts with `answers.min_similarity` (the spec's "least mean similarity").

The report lists every prompt whose answer changed, lowest similarity first, with both answers (the key masked,
then shortened).
"""

from __future__ import annotations

import asyncio
import difflib
from pathlib import Path

import httpx
import yaml
from msgspec import Struct

from gpufleet import inputs
from gpufleet.errors import Problem, UserError
from gpufleet.secret import masked_line

DEFAULT = Path(__file__).parent / "data" / "prompts.yaml"
SHOWN = 160  # characters of each answer kept in the report


class PromptSet(Struct, frozen=True):
    prompts: tuple[tuple[str, str], ...]  # (id, prompt)
    max_tokens: int
    seed: int


def _entries(raw: object, shown: str, settings: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """The (id, prompt) of a prompt file; a key it does not read is refused (a user's `max_tokens:` or `answer:` was
    passed over: the shipped set's `settings` decide the decoding, and the gate compares the groups' answers)."""
    items = raw.get("prompts") if isinstance(raw, dict) else raw
    if not isinstance(items, list) or not items:
        raise UserError([Problem(shown, "prompts", "must be a non-empty list of prompts (strings or {id, prompt})")])
    out, problems = [], []
    if isinstance(raw, dict):
        problems += [
            Problem(shown, str(k), "unknown key: a prompt file holds `prompts:` only (max_tokens and seed are the shipped set's)")
            for k in raw
            if k != "prompts" and k not in settings
        ]
    for i, item in enumerate(items):
        if isinstance(item, dict) and (extra := [str(k) for k in item if k not in ("id", "prompt")]):
            problems.append(Problem(shown, f"prompts[{i}].{extra[0]}", "unknown key: a prompt is {id: NAME, prompt: TEXT}"))
        elif isinstance(item, str) and item.strip():
            out.append((f"{Path(shown).stem}-{i + 1}", item))
        elif isinstance(item, dict) and isinstance(item.get("prompt"), str) and item["prompt"].strip():
            out.append((str(item.get("id") or f"{Path(shown).stem}-{i + 1}"), item["prompt"]))
        else:
            problems.append(
                Problem(shown, f"prompts[{i}]", "is not a prompt: give a non-empty string or {id: NAME, prompt: TEXT}")
            )
    if problems:
        raise UserError(problems)
    return out


def _jsonl(text: str, shown: str) -> list:
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:  # the shared reader: duplicate keys, NaN and nesting deeper than its cap refused (was a traceback)
                out.append(inputs.parse_json(line, shown))
            except UserError as exc:
                raise UserError(
                    [
                        Problem(
                            shown,
                            f"line {n}" + (f", column {p.column}" if p.column else "") + (f": {p.path}" if p.path else ""),
                            p.message,
                        )
                        for p in exc.problems
                    ]
                ) from None
    return out


def load(user_file: Path | None = None) -> PromptSet:
    """The default prompts plus the user's file (UserError `file: prompts[i]: message` for a bad one)."""
    default = yaml.safe_load(DEFAULT.read_text(encoding="utf-8"))
    prompts = _entries(default, "rollout/data/prompts.yaml", settings=("max_tokens", "seed"))
    if user_file is not None:
        shown = str(user_file)
        text = inputs.read_text(user_file, shown)  # a missing, unreadable, non-UTF-8 file or a folder: a UserError
        raw = _jsonl(text, shown) if shown.endswith(".jsonl") else inputs.parse_yaml(text, shown)
        prompts += _entries(raw, shown)
    seen: set[str] = set()
    dupes = [pid for pid, _ in prompts if pid in seen or seen.add(pid)]  # type: ignore[func-returns-value]
    if dupes:
        raise UserError(
            [Problem(str(user_file), "prompts", f"id {dupes[0]!r} is used twice: ids name the prompts in the report")]
        )
    return PromptSet(tuple(prompts), int(default["max_tokens"]), int(default["seed"]))


def body(model: str, prompt: str, ps: PromptSet) -> dict:
    """A greedy, non-streaming request: the same answer every time from an unchanged version."""
    return {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "temperature": 0,
        "top_p": 1,
        "max_tokens": ps.max_tokens,
        "seed": ps.seed,
        "stream": False,
    }


async def _ask(client: httpx.AsyncClient, endpoint: str, model: str, prompt: str, ps: PromptSet, headers: dict) -> str:
    resp = await client.post(endpoint, json=body(model, prompt, ps), headers=headers)
    if resp.status_code != 200:
        raise RuntimeError(f"HTTP {resp.status_code}")
    try:
        return str(resp.json()["choices"][0]["message"]["content"] or "")
    except (ValueError, KeyError, IndexError, TypeError):
        raise RuntimeError("the answer is not a chat completion") from None


async def collect(
    endpoint: str, model: str, ps: PromptSet, headers: dict, timeout_s: float, concurrency: int = 4
) -> dict[str, str | None]:
    """Each prompt's answer from one endpoint (None for a request that failed)."""
    sem = asyncio.Semaphore(concurrency)
    out: dict[str, str | None] = {}
    async with httpx.AsyncClient(timeout=timeout_s, trust_env=False) as client:

        async def one(pid: str, prompt: str) -> None:
            async with sem:
                try:
                    out[pid] = await _ask(client, endpoint, model, prompt, ps, headers)
                except (httpx.HTTPError, OSError, RuntimeError):
                    out[pid] = None

        await asyncio.gather(*(one(pid, p) for pid, p in ps.prompts))
    return out


def similarity(a: str, b: str) -> float:
    """difflib ratio over whitespace-separated tokens: 1.0 the same tokens in the same order."""
    ta, tb = a.split(), b.split()
    if not ta and not tb:
        return 1.0
    return difflib.SequenceMatcher(None, ta, tb, autojunk=False).ratio()


def _short(text: str | None, secret: str | None) -> str | None:
    return None if text is None else masked_line(text, secret, SHOWN)


def compare(ps: PromptSet, current: dict[str, str | None], candidate: dict[str, str | None], secret: str | None = None) -> dict:
    """Exact-match rate and the changed prompts (lowest similarity first). A prompt either side failed to answer
    counts as changed with similarity 0. The answers and prompts kept are shortened with `secret` (the key sent)
    masked first: they go to the state file, the report and `rollout status`, and a server may echo the key."""
    changed = []
    sims = []
    for pid, prompt in ps.prompts:
        a, b = current.get(pid), candidate.get(pid)
        if a is not None and b is not None and a.strip() == b.strip():
            sims.append(1.0)
            continue
        sim = 0.0 if a is None or b is None else similarity(a, b)
        sims.append(sim)
        changed.append(
            {
                "id": pid,
                "prompt": _short(prompt, secret),
                "similarity": round(sim, 4),
                "current": _short(a, secret),
                "candidate": _short(b, secret),
            }
        )
    changed.sort(key=lambda c: (c["similarity"], c["id"]))
    n = len(ps.prompts)
    return {
        "prompts": n,
        "exact_match_rate": round((n - len(changed)) / n, 4) if n else 0.0,
        "mean_similarity": round(sum(sims) / n, 4) if n else 0.0,
        "similarity_method": "difflib.SequenceMatcher ratio over whitespace tokens",
        "changed": changed,
    }
