"""`gpufleet preview --stack NAME [--json]`: what `pulumi up` would declare, offline."""

from __future__ import annotations

from pathlib import Path

import typer

from gpufleet import errors
from gpufleet.cli import options, renderers

# Engines (and costly standard modules such as importlib.metadata) are imported inside the functions that use them,
# not at the top (issue 25's rule, measured): `gpufleet` imports every command module to parse its arguments and build
# its help, and importing every engine there (pulumi and the providers, jinja2, the cost, image, rollout and simulation
# pipelines) took about 215 ms against 33 ms for the command modules alone (`python -X importtime`, 2026-12-06), on
# every command, `--help` included.

FORMATS = ("table", "json")


def register(app: typer.Typer) -> None:
    app.command("preview")(preview)


def preview(
    stack: str = options.stack(),
    fmt: str = options.fmt(FORMATS),
    as_json: bool = options.json_alias(),
    output: Path | None = options.output(),
) -> None:
    """Run the stack's Pulumi program under the mock engine and show the resources it declares, with notes.

    \b
    Examples:
      gpufleet preview --stack alicloud-cn-hangzhou-prod
      gpufleet preview -s stacks/Pulumi.tencentcloud-ap-guangzhou-prod.yaml --json
      gpufleet preview --stack alicloud-cn-hangzhou-dev --format json -o dev-inventory.json
    """
    from gpufleet import clock, contract, plan
    from gpufleet.components import hardening
    from gpufleet.registry import notes
    from gpufleet.stacks import lock, rollout
    from gpufleet.stacks.loader import read_stack_config
    from gpufleet.validation import load_fleet

    chosen = options.chosen_format(fmt, as_json, FORMATS, output, options.inputs(output, [stack]))
    fleet = load_fleet(stack)  # validated once per process: plan.for_stack below gets the same fleet
    shown, config = read_stack_config(stack)
    refused = hardening.config_problems(fleet.spec, config, shown)
    if refused:  # a TLS PEM config value that is neither text nor secret
        raise errors.UserError([errors.Problem(shown, field, message) for field, message in refused])
    inventory = plan.for_stack(stack).inventory
    placeholder = (
        [
            f"image {fleet.image_id}: images/lock.json holds a placeholder for {fleet.spec.image.recipe} in "
            f"{fleet.spec.cloud}/{fleet.spec.region}, not a built image; `pulumi up` refuses it (nodes on it could not boot) — "
            f"{lock.BUILD_AND_LOCK} first"
        ]
        if fleet.image_placeholder
        else []
    )
    all_notes = (
        placeholder
        + notes(fleet.spec.cloud, fleet.spec)
        + hardening.notes(fleet.spec)
        + hardening.pem_notes(fleet.spec, config, clock.now())
        + contract.schedule_notes(fleet.spec, clock.now())
        + rollout.notes(fleet.spec)
    )
    renderers.render(
        chosen,
        output,
        json=renderers.Json(lambda: {**inventory.to_json(), "notes": all_notes}, sort_keys=True, allow_nan=False),
        table=renderers.Draw(lambda console: _print_tree(console, stack, fleet, inventory, all_notes)),
    )


def _print_tree(console, stack: str, fleet, inventory, all_notes: list[str]) -> None:
    from rich.text import Text  # here, not at the top: `--json` needs no rich (its import is ~10 ms of a preview)
    from rich.tree import Tree

    children: dict[str | None, list[dict]] = {}
    for r in inventory.resources:
        children.setdefault(r["parent"], []).append(r)
    root = Tree(
        Text.assemble(
            (stack, "bold"),
            f"  {fleet.spec.cloud} {fleet.spec.region}  {fleet.spec.replicas.min}-{fleet.spec.replicas.max}x "
            f"{fleet.instance_type.type} ({fleet.spec.gpu.count}x {fleet.spec.gpu.kind})  billing {fleet.spec.billing.model}",
        )
    )

    def add(node: Tree, parent: str | None) -> None:
        for r in children.get(parent, []):
            branch = node.add(Text.assemble(f"{r['type']}  ", (r["name"], "cyan")))
            if not r["custom"]:
                add(branch, r["name"])

    add(root, None)
    console.print(root)
    custom = sum(1 for r in inventory.resources if r["custom"])
    console.print(f"{custom} resources ({len(inventory.resources) - custom} components)")
    for key, value in inventory.outputs.items():
        console.print(f"  output {key} = {value}")
    for note in all_notes:
        console.print(Text.assemble(("note", "yellow"), f" {note}"))
