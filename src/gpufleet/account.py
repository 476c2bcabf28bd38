"""All stacks of a cloud previewed together, as in one account: the names each declares checked against the scopes
its vendor documents (gpufleet/namescope.py). `gpufleet check` and `gpufleet region new` run this."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpufleet import namescope
from gpufleet.errors import Problem, UserError


@dataclass
class Report:
    stacks: dict[str, list[str]] = field(default_factory=dict)  # cloud -> stacks previewed
    names: list[namescope.Name] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)  # per stack (lengths, duplicates, unknown inputs)
    clashes: list[namescope.Clash] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # stack files that do not validate (their own problems)
    files: dict[str, str] = field(default_factory=dict)  # stack -> its file as shown


def stack_names(stack: str, fleet, resources: list[dict]) -> tuple[list[namescope.Name], list[str]]:
    return namescope.names_of(resources, stack, fleet.spec.cloud, fleet.spec.region)


def check(
    root: Path | None = None,
    cloud: str | None = None,
    extra: tuple = (),
    skip_broken: bool = False,
    only: list[str] | None = None,
) -> Report:
    """Preview every stack file (of `cloud`, or all) and `extra` (stack, file, fleet, resources) together."""
    from gpufleet import plan
    from gpufleet.stacks import loader

    report = Report()
    previewed: list[tuple[str, str, Any, list[dict]]] = []
    for stack in loader.stack_names(root) if only is None else only:
        try:
            p = plan.for_stack(stack, root)
            if cloud is not None and p.fleet.spec.cloud != cloud:
                continue
            previewed.append((stack, p.fleet.file, p.fleet, p.resources))
        except UserError as exc:
            if not skip_broken:
                raise
            report.skipped += [str(x) for x in exc.problems]
    previewed += list(extra)
    for stack, file, fleet, resources in previewed:
        report.stacks.setdefault(fleet.spec.cloud, []).append(stack)
        report.files[stack] = file
        names, unknown = stack_names(stack, fleet, resources)
        report.names += names
        report.problems += [Problem(file, "fleet.name", m) for m in namescope.stack_problems(names, unknown)]
    report.clashes = namescope.clashes(report.names)
    return report


def clash_problems(report: Report, stack: str | None = None) -> list[Problem]:
    """One problem per clash (only those `stack` is in, when given), on that stack's file (else the first one's),
    naming both stacks and the scope."""
    out = []
    for c in report.clashes:
        if stack is not None and stack not in c.stacks:
            continue
        on = stack or c.stacks[0]
        out.append(Problem(report.files.get(on, f"stacks/Pulumi.{on}.yaml"), "fleet.name", c.message()))
    return out
