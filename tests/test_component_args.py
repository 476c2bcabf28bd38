"""Every cloud component takes `(name, args, opts)` with a frozen `…Args` struct (msgspec.Struct) from its own module (issue 25
item 4, pulumi/examples style): no component sees the whole Fleet; program.py builds each Args."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import msgspec
import pulumi
import pytest

import gpufleet.components


def components():
    """The component classes of every cloud package shipped under gpufleet/components/."""
    clouds = [m.name for m in pkgutil.iter_modules(gpufleet.components.__path__) if m.ispkg]
    for cloud in clouds:
        package = importlib.import_module(f"gpufleet.components.{cloud}")
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            for _, cls in inspect.getmembers(module, inspect.isclass):
                if issubclass(cls, pulumi.ComponentResource) and cls.__module__ == module.__name__:
                    yield pytest.param(module, cls, id=f"{cloud}.{cls.__name__}")


@pytest.mark.parametrize(("module", "cls"), list(components()))
def test_component_takes_name_args_opts(module, cls):
    params = list(inspect.signature(cls.__init__).parameters.values())
    assert [p.name for p in params] == ["self", "name", "args", "opts"], cls
    args_type = getattr(module, str(params[2].annotation))
    assert issubclass(args_type, msgspec.Struct) and args_type.__struct_config__.frozen, args_type
    held = [str(a) for a in inspect.get_annotations(args_type).values()]  # as written (the module defers annotations)
    assert not any(re.search(r"\bFleet\b", a) for a in held), f"{args_type.__name__} holds the Fleet"
