"""Placeholder until its issue lands: registers no command."""
import typer


def register(app: typer.Typer) -> None:
    return None
