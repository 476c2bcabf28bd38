"""Every cloud component takes `(name, args, opts)` with a frozen `…Args` dataclass from its own module (issue 25
item 4, pulumi/examples style): no component sees the whole Fleet; program.py builds each Args."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil

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
    assert dataclasses.is_dataclass(args_type) and args_type.__dataclass_params__.frozen, args_type
    assert "Fleet" not in {str(f.type) for f in dataclasses.fields(args_type)}, f"{args_type.__name__} holds the Fleet"
