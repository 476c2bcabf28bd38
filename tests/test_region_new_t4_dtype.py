"""`region new` on a T4 (Turing, compute capability 7.5) sizes the model in float16, and a --cidr inside another stack's VPC
is refused.

- vLLM refuses bfloat16 below compute capability 8.0 ("Bfloat16 is only supported on GPUs with compute capability of at
  least 8.0"; the T4's is 7.5, NVIDIA's CUDA GPUs table), so the environment's bfloat16 default cannot be kept.
- 10.20.0.0/17 is the first half of 10.20.0.0/16, the VPC the shipped alicloud stacks use: by hand the two overlap,
  and two VPCs with overlapping CIDRs cannot be connected (VPC peering / CEN refuse it).
"""

import ipaddress
from pathlib import Path

import pytest

from gpufleet import regions
from gpufleet.errors import UserError

ROOT = Path(__file__).resolve().parents[1]


def test_staging_on_a_t4_is_sized_in_float16(project):
    """staging's 7B in 16 bits does not fit a T4 either way; the refusal must be about memory in float16, never about
    a bfloat16 the T4 cannot run, and its `plan fit` command must say --dtype float16."""
    with pytest.raises(UserError) as exc:
        regions.plan("alicloud", "cn-beijing", "staging", gpu="T4", name="ali-t4", fleet="t4", root=project)
    message = str(exc.value)
    assert "does not fit 1x T4" in message and "--dtype float16" in message, message
    assert "ompute capability of at least 8.0" not in message and "bfloat16 needs" not in message, message


def test_a_cidr_inside_another_stacks_vpc_is_refused():
    taken = {"alicloud-cn-hangzhou-prod": ipaddress.ip_network("10.20.0.0/16")}
    with pytest.raises(UserError, match="overlaps the VPC of alicloud-cn-hangzhou-prod"):
        regions.allocate_cidr(taken, "10.20.0.0/17")
    assert regions.allocate_cidr(taken, "10.21.0.0/16") == "10.21.0.0/16"
