"""Cost categories are data (cost/data/categories.yaml): one compute category, the node's categories, the report order;
every line the shipped stacks price falls in one of them (issue 25 item 4)."""

from __future__ import annotations

import pytest

from gpufleet.cost import resources
from gpufleet.finance.stack import stack_estimate
from gpufleet.stacks import loader


def test_one_compute_category_and_it_is_part_of_a_node():
    assert resources.COMPUTE in resources.NODE_CATEGORIES and resources.COMPUTE in resources.CATEGORIES
    assert len(set(resources.CATEGORIES)) == len(resources.CATEGORIES)


@pytest.mark.parametrize("stack", loader.stack_names())
def test_every_priced_line_is_in_a_declared_category(stack):
    _, est = stack_estimate(stack)
    assert {l.category for l in est.lines} <= set(resources.CATEGORIES)
    assert est.by_category[resources.COMPUTE] > 0  # the instances are the compute category
