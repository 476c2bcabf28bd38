"""All stacks of a cloud previewed together, as in one account: the names each declares checked against the scopes
its vendor documents (gpufleet/namescope.py). `gpufleet check` and `gpufleet region new` run this."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from msgspec import Struct, field

from gpufleet import namescope, plan, registry
from gpufleet.errors import Problem, UserError
from gpufleet.stacks import loader


class Report(Struct):
    stacks: dict[str, list[str]] = field(default_factory=dict)  # cloud -> stacks previewed
    names: list[namescope.Name] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)  # per stack (lengths, duplicates, unknown inputs)
    clashes: list[namescope.Clash] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # stack files that do not validate (their own problems)
    broken: list[str] = field(default_factory=list)  # the stacks skipped (skip_broken): their names are not compared
    files: dict[str, str] = field(default_factory=dict)  # stack -> its file as shown
    # stack -> the field its cloud-side names start from: fleet.name_base where the stack sets it, else fleet.name
    name_fields: dict[str, str] = field(default_factory=dict)


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

    report = Report()
    previewed: list[tuple[str, str, Any, list[dict]]] = []
    refused: list[Problem] = []  # without skip_broken: every broken stack's problems, raised together
    for stack in loader.stack_names(root) if only is None else only:
        if cloud is not None and not _may_be_of(stack, cloud, root):
            continue  # another cloud's stack, by its file or its name: --cloud is not held up by it, even broken
        try:
            p = plan.for_stack(stack, root)
            if cloud is not None and p.fleet.spec.cloud != cloud:
                continue
            previewed.append((stack, p.fleet.file, p.fleet, p.resources))
        except UserError as exc:
            if _program_failed(exc):  # a failing stacks/__main__.py breaks every stack, not this one
                raise
            if not skip_broken:
                refused += exc.problems
                continue
            report.skipped += [str(x) for x in exc.problems]
            report.broken.append(stack)
    if refused:  # each problem once: a broken recipe (or usage file) several stacks name is one problem
        raise UserError(dict.fromkeys(refused))
    previewed += list(extra)
    for stack, file, fleet, resources in previewed:
        report.stacks.setdefault(fleet.spec.cloud, []).append(stack)
        report.files[stack] = file
        report.name_fields[stack] = "fleet.name_base" if fleet.spec.name_base else "fleet.name"
        names, unknown = stack_names(stack, fleet, resources)
        report.names += names
        report.problems += [Problem(file, report.name_fields[stack], m) for m in namescope.stack_problems(names, unknown)]
    report.clashes = namescope.clashes(report.names)
    report.problems += quota_problems(previewed)
    return report


def _may_be_of(stack: str, cloud: str, root: Path | None) -> bool:
    """False when the stack is another cloud's: the fleet.cloud its file holds, or (a file that cannot be read) the
    cloud its name says (`<cloud>-<region>-<environment>`, which must hold that cloud). A stack whose cloud is not
    known is previewed, and its problems are said."""
    named = loader.named_triple(stack)
    said = {named[0]} if named else set()
    try:
        _, config = loader.read_stack_config(stack, root)
        fleet = config.get(loader.CONFIG_KEY) if isinstance(config, dict) else None
        declared = fleet.get("cloud") if isinstance(fleet, dict) else None
        if isinstance(declared, str):
            said.add(declared)
    except UserError:
        pass
    return not said or cloud in said


def _program_failed(exc: UserError) -> bool:
    """The project's Pulumi program (stacks/__main__.py) fails, not the stack file: no stack could be compared."""
    from gpufleet import preview  # deferred: the SDK and providers; only a failed preview gets here

    return isinstance(exc, preview.ProgramFailed)


def quota_problems(previewed: list[tuple[str, str, Any, list[dict]]]) -> list[Problem]:
    """Lists whose cloud quota is per account in a region (registry.ListCap scope "region", e.g. Alibaba ESS scheduled
    tasks): their total over the stacks of one cloud and region against the quota, on each stack that adds to it."""

    totals: dict[tuple[str, str, str], list[tuple[str, str, int]]] = {}
    for stack, file, fleet, _ in previewed:
        spec = fleet.spec
        for path, cap in registry.list_caps(spec.cloud).items():
            if cap.scope != "region":
                continue
            value: Any = spec
            for part in path.split("."):
                value = getattr(value, part)
            totals.setdefault((spec.cloud, spec.region, path), []).append((stack, file, len(value)))
    out = []
    for (cloud, region, path), items in totals.items():
        cap = registry.list_caps(cloud)[path]
        total = sum(n for _, _, n in items)
        if total <= cap.most:
            continue
        each = ", ".join(f"{stack} {n}" for stack, _, n in items if n)
        out += [
            Problem(
                file,
                f"fleet.{path}",
                f"{n} here, {total} in the {cloud} stacks of {region} together ({each}); {cap.quota}: keep the region's "
                f"total at most {cap.most}" + (f" ({cap.fix})" if cap.fix else ""),
            )
            for _, file, n in items
            if n
        ]
    return out


def clash_problems(report: Report, stack: str | None = None) -> list[Problem]:
    """One problem per clash (only those `stack` is in, when given), on that stack's file (else the first one's),
    naming both stacks and the scope."""
    out = []
    for c in report.clashes:
        if stack is not None and stack not in c.stacks:
            continue
        on = stack or c.stacks[0]
        where = report.name_fields.get(on, "fleet.name")
        fix = f"; give {' or '.join(c.stacks)} another {where.removeprefix('fleet.')}" + (
            " (or remove it: the default <name>-<region>-<environment> is unique per stack)" if where.endswith("_base") else ""
        )
        out.append(Problem(report.files.get(on, f"stacks/Pulumi.{on}.yaml"), where, c.message() + fix))
    return out
