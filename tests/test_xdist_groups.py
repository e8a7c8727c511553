"""Tests of one xdist group run on one worker: under ``--dist loadgroup`` a grouped test's id
carries its group (the suffix xdist's scheduler groups by), or the group is lost."""

import pytest

from tests.xdist_groups import group


@pytest.mark.xdist_group("clock")
def test_a_grouped_test_carries_its_group_to_the_scheduler(request: pytest.FixtureRequest) -> None:
    assert group(request.node) == "clock"
    if request.config.getoption("loadgroup", False):
        assert request.node.nodeid.endswith("@clock"), request.node.nodeid
    else:  # no xdist, or another --dist: the id is the test's own
        assert "@" not in request.node.nodeid
