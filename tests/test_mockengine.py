"""Contract test of the Pulumi SDK parts gpufleet.mockengine relies on, private ones included.

If an SDK upgrade renames or changes `_sync_await`, `rpc._special_sig_key` / `_special_secret_sig` or
`MockMonitor.RegisterResource`, this fails here first, naming the part, instead of every preview failing.
"""

import inspect
import os
import subprocess
import sys

import pulumi
import pytest
from pulumi.runtime import mocks, rpc, sync_await

from gpufleet import mockengine


def test_the_private_names_still_exist():
    assert callable(sync_await._sync_await)
    # the documented wire format of a secret in Pulumi's gRPC protocol (sdk/proto, "special signature" values)
    assert rpc._special_sig_key == "4dabf18193072939515e22adb298388d"
    assert rpc._special_secret_sig == "1b47061264138c4ac30d75fd1eb44270"
    assert list(inspect.signature(mocks.MockMonitor.RegisterResource).parameters) == ["self", "request"]
    assert list(inspect.signature(mocks.MockMonitor.__init__).parameters)[:2] == ["self", "mocks"]


def _program():
    parent = pulumi.ComponentResource("test:index:Group", "group")
    child = pulumi.CustomResource(
        "test:index:Thing",
        "thing",
        {"size": 3, "password": pulumi.Output.secret("hunter2"), "address": None},
        pulumi.ResourceOptions(parent=parent),
    )
    pulumi.export("address", child.address)
    pulumi.export("password", pulumi.Output.secret("hunter2"))
    pulumi.export("id", child.id)


def test_records_inputs_parents_secrets_and_computed_outputs():
    resources, outputs = mockengine.run(_program, "contract", {}, {"test:index:Thing": ("address",)})
    (thing,) = [r for r in resources if r["type"] == "test:index:Thing"]
    assert thing["parent"] == "group" and thing["custom"] is True
    assert thing["inputs"]["size"] == 3 and thing["inputs"]["password"] == mockengine.SECRET
    assert outputs == {"address": "<thing.address>", "password": mockengine.SECRET, "id": "thing_id"}
    assert "hunter2" not in repr(resources) + repr(outputs)


class Bucket(pulumi.CustomResource):
    pass


def _given_program():
    thing = pulumi.CustomResource("test:index:Thing", "thing", {"address": "10.0.0.5"})
    pulumi.export("address", thing.address)
    pulumi.export("bucket", Bucket("test:index:Bucket", "bucket", {}))


def test_an_input_the_program_gives_is_kept_and_a_resource_output_is_named_by_its_class():
    """A computed output gets a placeholder only where the program gave no value (a provider echoes an input it was
    given: the address a program sets is the address); a resource exported as a whole is shown as <its class>."""
    resources, outputs = mockengine.run(_given_program, "contract", {}, {"test:index:Thing": ("address",)})
    assert outputs == {"address": "10.0.0.5", "bucket": "<Bucket>"}
    assert {r["name"]: r["inputs"] for r in resources} == {"thing": {"address": "10.0.0.5"}, "bucket": {}}


def test_runs_twice_in_one_process():
    """A second run in the same process records the same resources and outputs as the first (nothing carried over,
    nothing lost)."""
    first = mockengine.run(_program, "a", {}, {})
    second = mockengine.run(_program, "b", {}, {})
    assert {(r["type"], r["name"]) for r in first[0]} == {("test:index:Group", "group"), ("test:index:Thing", "thing")}
    assert second == first


def test_runs_reuse_the_sdk_threads():
    """The SDK hands each registration to its loop's default executor and gives each executor thread an event loop of
    its own (a socket pair and an epoll): a process that previews many times (`cost compare`, the tests) keeps one
    executor's threads, so those loops stop at the executor's size instead of growing with every run."""
    for i in range(10):
        mockengine.run(_program, f"run-{i}", {}, {})
    assert 0 < len(mockengine._THREAD_LOOPS) <= min(32, (os.cpu_count() or 1) + 4)  # ThreadPoolExecutor's default size


_POLICY = """
import gc, sys
from gpufleet import collector, mockengine
import pulumi
if sys.argv[1] == "one-shot":
    collector.one_shot()
mockengine.run(lambda: pulumi.ComponentResource("test:index:Group", "a"), "contract", {})
first = gc.get_freeze_count()
mockengine.run(lambda: pulumi.ComponentResource("test:index:Group", "b"), "contract", {})
print(gc.get_threshold()[0], first, gc.get_freeze_count() == first)
"""


@pytest.mark.parametrize(("mode", "threshold", "frozen"), [("one-shot", "100000", True), ("library", "700", False)])
def test_start_up_is_frozen_once_in_the_console_script_only(mode, threshold, frozen):
    """gpufleet.collector: the console script freezes what start-up made when the first program starts (its one large
    young collection walked all of it), and never again; a library caller (tests, a notebook) keeps Python's policy."""
    out = subprocess.run([sys.executable, "-c", _POLICY, mode], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == threshold
    assert (int(out[1]) > 10_000) is frozen  # the SDK's and gpufleet's modules, classes and functions
    assert out[2] == "True"  # the second program froze nothing more


_EXIT = """
import gc, sys
from gpufleet import collector
if sys.argv[1] == "one-shot":
    collector.one_shot()
made = [[i] for i in range(1000)]  # containers the command made, alive until exit
before = gc.get_freeze_count()
collector.exiting()
print(gc.get_freeze_count() - before >= len(made))
"""


@pytest.mark.parametrize(("mode", "frozen"), [("one-shot", "True"), ("library", "False")])
def test_at_exit_the_console_script_freezes_what_it_made_and_a_library_caller_does_not(mode, frozen):
    """gpufleet.collector: "at exit everything is frozen" in the console script (the interpreter's final collection
    otherwise walks it all, ~0.2 s after a preview); a library caller's objects are left to Python."""
    out = subprocess.run([sys.executable, "-c", _EXIT, mode], capture_output=True, text=True, check=True).stdout.split()
    assert out == [frozen]
