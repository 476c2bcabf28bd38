"""A rollout's two serving groups, from the spec alone (issue 31, docs/spec.md#rollout).

Pure functions: which spec each group serves, how many nodes each holds and the backend weight each node carries at
the load balancer, and `rollout_step_spec`, the stack file text of the next step (what `gpufleet rollout` writes).

Per-node weights. Both clouds weigh each backend node, not each group: a group of n nodes with weight w receives
n * w / (sum over groups of n * w) of the requests (weighted round robin at the CLB, which ESS and AS register the
nodes in with the weight of their group; Alibaba AttachVServerGroups VServerGroupAttributes.Weight 0-100, Tencent AS
ForwardLoadBalancers.TargetAttributes.Weight 0-100). While rolling, the serving group keeps the weight it serves with
(DEFAULT_WEIGHT) and only the candidate's weight moves: on Alibaba a changed weight detaches the group's nodes from
the VServer group and attaches them again (terraform-provider-alicloud resource_alicloud_ess_scalinggroup_vserver_
groups.go: the weight is part of the attachment's key; the docs' NOTE "Modifing weight attribute means detach vserver
group first and then, attach with new weight parameter"), so a step never takes the group serving the traffic out
of the load balancer. The candidate's weight is the integer 1-100 whose share at the groups' *desired* sizes is
nearest p (ties: the smaller weight). 0 % and 100 % give the other group weight 0 (no requests; its nodes stay
registered and health-checked); 100 % is the one step that moves the current group's weight, while the candidate
serves. The shares weights 1-100 reach beside the current group's 10 lie between n_cand / (10 n_cur + n_cand) and
100 n_cand / (10 n_cur + 100 n_cand) (4.8 % to 83 % for 1 canary node beside 2).
Autoscaling changes the node counts, not the weights: when the candidate group scales out from 1 to 2 nodes at 5 %,
its share roughly doubles. `share(...)` of the live counts is what the load balancer applies.
"""

from __future__ import annotations

import copy
import re
from datetime import datetime, timedelta
from fractions import Fraction
from functools import cache
from typing import Literal

from gpufleet import inputs
from gpufleet.errors import UserError
from gpufleet.naming import group_prefix
from gpufleet.stacks.spec import FleetSpec, Replicas

WEIGHT_MAX = 100  # the highest backend weight both vendors take (module docstring)
DEFAULT_WEIGHT = 10  # the weight of every node without a rollout (Tencent's target_attributes since before issue 31)

Step = int | Literal["promoted", "finished", "rolled_back"]
# what `rollout finish` moves from rollout.candidate into the fleet (candidate.replicas is the rollout's size only)
FINISH_KEYS = ("label", "model", "image", "serving", "gpu")


def candidate_replicas(spec: FleetSpec) -> Replicas:
    """The candidate group's size. While rolling: its own replicas, else canary min 1 / max fleet max / desired 1,
    blue_green the fleet's (a rolled-back candidate: {min: 0, max: 1, desired: 0}). From phase promoted on it serves
    everything at the fleet's replicas, which `rollout finish` keeps: candidate.replicas are the rollout's size only
    (a canary's size would be refused as the fleet's in prod, and the fleet would shrink to it)."""
    r = spec.rollout
    assert r is not None
    if r.phase == "promoted":
        return spec.replicas
    if r.candidate.replicas is not None:
        return r.candidate.replicas
    if r.strategy == "blue_green":
        return spec.replicas
    return Replicas(min=1, max=spec.replicas.max, desired=1)


def current_replicas(spec: FleetSpec) -> Replicas:
    """The current group's size: the fleet's replicas while rolling, held at its minimum once promoted."""
    r = spec.rollout
    if r is None or r.phase == "rolling":
        return spec.replicas
    low = spec.replicas.min
    return Replicas(min=low, max=max(low, 1), desired=low)


def candidate_percent(spec: FleetSpec) -> int:
    r = spec.rollout
    assert r is not None
    return 100 if r.phase == "promoted" else r.candidate_weight


def share(current: tuple[int, int], candidate: tuple[int, int]) -> Fraction:
    """The candidate's share of requests for (nodes, weight) of each group; 0 when no node has weight."""
    total = current[0] * current[1] + candidate[0] * candidate[1]
    return Fraction(candidate[0] * candidate[1], total) if total else Fraction(0)


@cache
def node_weights(percent: int, current_nodes: int, candidate_nodes: int) -> tuple[int, int]:
    """(current, candidate) per-node backend weights that send `percent` % of requests to the candidate group, for the
    groups' node counts (module docstring: the current group keeps DEFAULT_WEIGHT, the candidate's weight 1-100 is the
    nearest share, ties to the smaller; 0 = no requests)."""
    if not 0 <= percent <= 100:
        raise ValueError(f"percent {percent} is outside 0-100")
    if percent == 0 or candidate_nodes == 0:
        return DEFAULT_WEIGHT, 0
    if percent == 100 or current_nodes == 0:
        return 0, DEFAULT_WEIGHT
    want = Fraction(percent, 100)
    best = min(
        range(1, WEIGHT_MAX + 1),
        key=lambda wn: (abs(share((current_nodes, DEFAULT_WEIGHT), (candidate_nodes, wn)) - want), wn),
    )
    return DEFAULT_WEIGHT, best


def weights(spec: FleetSpec) -> tuple[int, int]:
    """The (current, candidate) per-node weights the program declares for the spec's rollout, from the desired sizes."""
    return node_weights(candidate_percent(spec), current_replicas(spec).desired_or_min, candidate_replicas(spec).desired_or_min)


def notes(spec: FleetSpec) -> list[str]:
    """What `gpufleet preview` says about a rollout: each group's nodes and per-node weight, the share they give."""
    r = spec.rollout
    if r is None:
        return []

    current, candidate = current_replicas(spec), candidate_replicas(spec)
    wc, wn = weights(spec)
    n_c, n_n = current.desired_or_min, candidate.desired_or_min
    got = float(share((n_c, wc), (n_n, wn))) * 100
    old, new = group_prefix(spec), group_prefix(spec.model_copy(update={"label": r.candidate.label}))
    phase = f"{r.strategy} {r.phase}" + (f" until {r.retire_after.isoformat()}" if r.retire_after else "")
    return [
        f"rollout ({phase}, {candidate_percent(spec)} % planned): {old} {n_c} node(s) x weight {wc}, {new} {n_n} node(s) x "
        f"weight {wn}: {got:.1f} % of requests to {new} at these sizes; autoscaling changes the node counts, not the "
        "weights (docs/spec.md#rollout)"
    ] + _model_name_note(spec)


def _model_name_note(spec: FleetSpec) -> list[str]:
    """Clients send the current model's name through the one load balancer: a candidate that does not serve it answers
    them 404 (vLLM refuses an unknown `model`)."""
    r = spec.rollout
    assert r is not None
    current, cand = spec.model.name, r.candidate.model
    if current == cand.name or current in cand.aliases:
        return []
    return [
        f"rollout: the candidate serves {cand.name} only: requests naming {current} that reach its nodes get 404; add "
        f"`aliases: [{current}]` to rollout.candidate.model (docs/rollout.md)"
    ]


def finished(spec: FleetSpec) -> FleetSpec:
    """The spec after `rollout finish`: the fleet takes the candidate's label, model, image, serving and GPU (its
    replicas stay the fleet's: candidate_replicas) and the rollout section goes. Its main group is the candidate
    group, under the same names."""
    r = spec.rollout
    assert r is not None
    c = r.candidate
    data = spec.model_dump(mode="json", exclude_unset=True, exclude={"rollout"})
    data["label"] = c.label
    data["model"] = c.model.model_dump(mode="json", exclude_unset=True)
    for key in FINISH_KEYS[2:]:
        value = getattr(c, key)
        if value is not None:
            data[key] = value.model_dump(mode="json", exclude_unset=True)
    return FleetSpec.model_validate(data)


def candidate_spec(spec: FleetSpec) -> FleetSpec:
    """The spec the candidate group is declared from: the finished spec at the candidate's present size. A canary
    still rolling carries none of the fleet's schedules (they would size it like the fleet) and buys no subscription
    (monthly / yearly: its nodes are pay-as-you-go until it is promoted); a spot canary keeps at most its minimum on
    demand."""
    r = spec.rollout
    assert r is not None
    done = finished(spec)
    replicas = candidate_replicas(spec)
    update: dict = {"replicas": replicas}
    if r.phase == "rolling" and r.strategy == "canary":
        update["autoscaling"] = done.autoscaling.model_copy(update={"schedules": []})
        billing = done.billing
        if billing.model in ("monthly", "yearly"):
            update["billing"] = billing.model_copy(update={"model": "payg", "period_months": None})
        elif billing.model == "spot" and billing.on_demand_base is not None:
            update["billing"] = billing.model_copy(update={"on_demand_base": min(billing.base, replicas.min)})
    return done.model_copy(update=update)


def current_spec(spec: FleetSpec) -> FleetSpec:
    """The spec the current group is declared from: the fleet at its present size; once promoted held at its minimum,
    without the schedules (they would resize it)."""
    r = spec.rollout
    update: dict = {"replicas": current_replicas(spec)}
    if r is not None and r.phase == "promoted":
        update["autoscaling"] = spec.autoscaling.model_copy(update={"schedules": []})
    return spec.model_copy(update=update)


# --- the stack file of each step ---------------------------------------------------------------------------------

_KEY = re.compile(r"^(?P<indent>[ ]*)(?P<key>[A-Za-z_][A-Za-z0-9_]*):(?P<rest>.*)$")
_ANY_KEY = re.compile(r"""^[ ]*(?P<q>['"]?)(?P<key>[^'"#\s][^'"#]*?)(?P=q):(\s|$)""")  # also gpufleet:fleet


class StepError(ValueError):
    """The stack text cannot be moved to the step (no rollout section, a flow-style section, a step out of order)."""


def rollout_step_spec(stack_yaml_text: str, step: Step, now: datetime | None = None) -> str:
    """The stack file text at `step`, comments and layout kept: an int sets `rollout.candidate_weight` (phase rolling);
    "promoted" sets phase promoted, candidate_weight 100 and retire_after = now + keep_previous_hours (now: required);
    "finished" replaces fleet.model / image / serving / gpu by the candidate's, sets fleet.label and removes the rollout
    section (fleet.replicas stay); "rolled_back" sets candidate_weight 0 (phase rolling) and the candidate group to 0
    nodes (candidate.replicas {min: 0, max: its max or the fleet's, desired: 0}). Only the lines of the changed keys are rewritten; the result is checked to parse to exactly
    the intended data (StepError otherwise)."""
    doc = _parse(stack_yaml_text)
    fleet = (doc or {}).get("config", {}).get("gpufleet:fleet")
    if not isinstance(fleet, dict) or not isinstance(fleet.get("rollout"), dict):
        raise StepError("the stack has no gpufleet:fleet rollout section")
    lines = stack_yaml_text.splitlines(keepends=True)
    fleet_at = _find_block(lines, ["config", "gpufleet:fleet"])
    rollout_at = _find_block(lines, ["rollout"], start=fleet_at)
    want = _expected(doc, step, now)
    if step == "finished":
        out = _finish(lines, fleet_at, rollout_at, fleet["rollout"])
    elif step == "rolled_back":
        out = lines
        for key, value in {"phase": "rolling", "candidate_weight": "0", "retire_after": "null"}.items():
            out = _set_key(out, _find_block(out, ["rollout"], start=_find_block(out, ["config", "gpufleet:fleet"])), key, value)
        out = _zero_candidate(out, _rolled_back_max(fleet))
    else:
        if step == "promoted":
            keep = int(fleet["rollout"].get("keep_previous_hours", 24))
            if now is None or now.tzinfo is None:
                raise StepError("promoted needs the time of the promotion, with a zone")
            retire = (now + timedelta(hours=keep)).isoformat()
            values = {"phase": "promoted", "candidate_weight": "100", "retire_after": f"'{retire}'"}
        else:
            if not isinstance(step, int) or isinstance(step, bool) or not 0 <= step <= 100:
                raise StepError(f"{step!r} is not a step: a percentage 0-100, 'promoted', 'finished' or 'rolled_back'")
            values = {"phase": "rolling", "candidate_weight": str(step), "retire_after": "null"}
        out = lines
        for key, value in values.items():
            out = _set_key(out, rollout_at, key, value)
    text = "".join(out)
    if _parse(text) != want:
        raise StepError("the stack file could not be rewritten line by line (flow-style or multi-line rollout keys)")
    return text


def _parse(text: str):
    """The stack file's text as data, read as the loader reads it (inputs.parse_yaml: libyaml, which takes a tab after
    `key:`; PyYAML's own scanner refused it, a ScannerError traceback in rollout start)."""

    try:
        return inputs.parse_yaml(text, "the stack file")
    except UserError as exc:
        raise StepError("; ".join(p.message for p in exc.problems)) from None


def _expected(doc: dict, step: Step, now: datetime | None) -> dict:
    doc = copy.deepcopy(doc)
    fleet = doc["config"]["gpufleet:fleet"]
    r = fleet["rollout"]
    if step not in ("finished", "promoted") and "retire_after" in r:
        r["retire_after"] = None  # an absent key stays absent (null)
    if step == "rolled_back":
        r.update(phase="rolling", candidate_weight=0)
        r["candidate"]["replicas"] = {"min": 0, "max": _rolled_back_max(fleet), "desired": 0}
    elif step == "finished":
        c = r["candidate"]
        fleet["label"] = c["label"]
        for key in FINISH_KEYS[1:]:
            if key in c:
                fleet[key] = c[key]
        del fleet["rollout"]
    elif step == "promoted":
        assert now is not None
        r.update(phase="promoted", candidate_weight=100)
        r["retire_after"] = (now + timedelta(hours=int(r.get("keep_previous_hours", 24)))).isoformat()
    else:
        r.update(phase="rolling", candidate_weight=step)
    return doc


def _rolled_back_max(fleet: dict) -> int:
    """A rolled-back candidate keeps its max (or the fleet's): the group stays, at 0 nodes (min 0, desired 0)."""
    old = fleet["rollout"]["candidate"].get("replicas") or {}
    return int(old.get("max") or (fleet.get("replicas") or {}).get("max") or 1)


def _zero_candidate(lines: list[str], high: int) -> list[str]:
    """The lines with rollout.candidate.replicas at {min: 0, max: high, desired: 0} (one line, replacing a one-line or
    nested block)."""

    def candidate() -> tuple[int, int]:
        fleet_at = _find_block(lines, ["config", "gpufleet:fleet"])
        return _find_block(lines, ["candidate"], start=_find_block(lines, ["rollout"], start=fleet_at))

    try:
        at, end = _find_block(lines, ["replicas"], start=candidate())
        lines = lines[:at] + lines[end:]
    except StepError:
        pass  # none yet: the default size
    return _set_key(lines, candidate(), "replicas", f"{{min: 0, max: {high}, desired: 0}}")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _blank(line: str) -> bool:
    s = line.strip()
    return not s or s.startswith("#")


def _find_block(lines: list[str], path: list[str], start: tuple[int, int] | None = None) -> tuple[int, int]:
    """(index of the key's line, end index of its block) of the nested mapping key `path`, within `start`'s block."""
    lo, hi = (start[0] + 1, start[1]) if start else (0, len(lines))
    at = None
    for key in path:
        at = None
        level = None
        for i in range(lo, hi):
            if _blank(lines[i]):
                continue
            ind = _indent(lines[i])
            level = ind if level is None else level
            if ind < level:
                break
            m = _ANY_KEY.match(lines[i]) if ind == level else None
            if m and m["key"] == key:
                at = i
                break
        if at is None:
            raise StepError(f"no {'.'.join(path)} block found in the stack file")
        lo, hi = at + 1, _block_end(lines, at)
    assert at is not None
    return at, _block_end(lines, at)


def _block_end(lines: list[str], at: int) -> int:
    ind = _indent(lines[at])
    end = at + 1
    last = at + 1
    while end < len(lines):
        if not _blank(lines[end]):
            if _indent(lines[end]) <= ind:
                break
            last = end + 1
        end += 1
    return last


def _set_key(lines: list[str], block: tuple[int, int], key: str, value: str) -> list[str]:
    """The lines with `key: value` in the mapping `block` (its comment kept), or the key added as the block's first."""
    start, end = block
    child = next((_indent(lines[i]) for i in range(start + 1, end) if not _blank(lines[i])), _indent(lines[start]) + 2)
    for i in range(start + 1, end):
        if _blank(lines[i]) or _indent(lines[i]) != child:
            continue
        m = _KEY.match(lines[i].rstrip("\n"))
        if m and m["key"] == key:
            rest = m["rest"]
            if rest.strip() and rest.strip()[0] in "|>&*!{[":
                raise StepError(f"rollout.{key} is not a plain one-line value; write it on one line")
            comment = ""
            hash_at = rest.find(" #")
            if hash_at >= 0:  # keep the comment, at its column when the new value fits before it
                comment = " " * max(hash_at - len(" " + value), 0) + rest[hash_at:]
            eol = "\n" if lines[i].endswith("\n") else ""
            return [*lines[:i], f"{' ' * child}{key}: {value}{comment}{eol}", *lines[i + 1 :]]
    if value == "null":
        return lines  # absent is null
    return [*lines[: start + 1], f"{' ' * child}{key}: {value}\n", *lines[start + 1 :]]


def _finish(lines: list[str], fleet: tuple[int, int], rollout: tuple[int, int], section: dict) -> list[str]:
    """The fleet block with the candidate's keys in place of the fleet's and without the rollout block."""
    candidate = _find_block(lines, ["candidate"], start=rollout)
    fleet_child = _indent(lines[rollout[0]])
    cand_child = next(_indent(lines[i]) for i in range(candidate[0] + 1, candidate[1]) if not _blank(lines[i]))
    taken: dict[str, list[str]] = {}
    for key in FINISH_KEYS:
        if key not in section["candidate"]:
            continue
        try:
            at, end = _find_block(lines, [key], start=candidate)
        except StepError:
            continue
        shift = fleet_child - cand_child
        block = lines[at:end]
        taken[key] = [(" " * shift + ln if shift >= 0 else ln[-shift:]) if ln.strip() else ln for ln in block]
    # drop the rollout block with the comment lines right above it that belong to it
    head = rollout[0]
    while head > fleet[0] + 1 and lines[head - 1].strip().startswith("#") and _indent(lines[head - 1]) == fleet_child:
        head -= 1
    out = lines[:head] + lines[rollout[1] :]
    fleet_end = _block_end(out, fleet[0])
    for key, block in taken.items():
        try:
            at, end = _find_block(out, [key], start=(fleet[0], fleet_end))
            out = out[:at] + block + out[end:]
        except StepError:
            out = out[:fleet_end] + block + out[fleet_end:]
        fleet_end = _block_end(out, fleet[0])
    return out
