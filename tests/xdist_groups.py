"""xdist's groups under pytest 9.2 (registered as a plugin by ``tests/conftest.py``).

Under ``--dist loadgroup`` each xdist worker names a grouped test ``<nodeid>@<group>``: the
suffix is all xdist's scheduler sees of the group. pytest-xdist 3.8 writes it to
``item._nodeid``, which pytest 9.2's items no longer read (their id is the structured
``item._id``), so every group was silently spread over both workers: the clock-paced tests ran
beside each other and each browser module started its Chromium and servers on both workers
(pytest-xdist issue #1386). Until xdist writes the structured id, this does;
``tests/test_xdist_groups.py`` fails if a grouped test runs without its suffix.
"""

import pytest


def group(item: pytest.Item) -> str | None:
    """The group xdist would name the item after (its marks' names joined), if any."""
    names = {
        str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
        for mark in item.iter_markers("xdist_group")
    }
    return "_".join(sorted(names)) if names else None


# trylast: after every hook that adds an xdist_group mark (tests/conftest.py's, xdist's own).
@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("loadgroup", False):  # set on each worker of --dist loadgroup
        return
    from _pytest.nodeid import NodeId  # pytest 9.2's structured id

    for item in items:
        name = group(item)
        if name is not None and not item.nodeid.endswith(f"@{name}"):
            item._id = NodeId.parse(f"{item.nodeid}@{name}")
