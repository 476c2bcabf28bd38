"""`gpufleet preview --stack NAME [--json]`: what `pulumi up` would declare, offline."""

from __future__ import annotations

import json

import typer
from rich.console import Console
from rich.tree import Tree


def register(app: typer.Typer) -> None:
    app.command("preview")(preview)


def preview(
    stack: str = typer.Option(..., "--stack", "-s", help="stack name, e.g. alicloud-cn-hangzhou-prod"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object: stack, resources, outputs"),
) -> None:
    """Run the stack's Pulumi program under the mock engine and show the resources it declares."""
    from gpufleet import plan
    from gpufleet.components.registry import notes

    the_plan = plan.for_stack(stack)
    fleet, inventory = the_plan.fleet, the_plan.inventory
    if as_json:
        typer.echo(json.dumps({**inventory.to_json(), "notes": notes(fleet.spec.cloud, fleet.spec)}, indent=2, sort_keys=False))
        return
    console = Console()
    children: dict[str | None, list[dict]] = {}
    for r in inventory.resources:
        children.setdefault(r["parent"], []).append(r)
    root = Tree(
        f"[bold]{stack}[/bold]  {fleet.spec.cloud} {fleet.spec.region}  {fleet.spec.replicas.min}-{fleet.spec.replicas.max}x "
        f"{fleet.instance_type.type} ({fleet.spec.gpu.count}x {fleet.spec.gpu.kind})  billing {fleet.spec.billing.model}"
    )

    def add(node: Tree, parent: str | None) -> None:
        for r in children.get(parent, []):
            branch = node.add(f"{r['type']}  [cyan]{r['name']}[/cyan]")
            if not r["custom"]:
                add(branch, r["name"])

    add(root, None)
    console.print(root)
    custom = sum(1 for r in inventory.resources if r["custom"])
    console.print(f"{custom} resources ({len(inventory.resources) - custom} components)")
    for key, value in inventory.outputs.items():
        console.print(f"  output {key} = {value}")
    for note in notes(fleet.spec.cloud, fleet.spec):
        console.print(f"[yellow]note[/yellow] {note}")
