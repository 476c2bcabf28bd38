"""Stack checks owned by the sizing module: does the model fit, are the vLLM flags valid?"""
from __future__ import annotations


def spec_problems(fleet) -> list[tuple[str, str]]:
    """(field path, message) for each sizing problem of the fleet."""
    return []
