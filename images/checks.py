"""Stack checks owned by the images module: does the stack's image recipe serve its GPU kind?"""
from __future__ import annotations


def spec_problems(fleet) -> list[tuple[str, str]]:
    """(field path, message) for each clash between the fleet and its image recipe."""
    return []
