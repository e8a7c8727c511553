"""Under mutmut (docs/testing.md, "Mutation testing"), a mutant's tests run in the order most
likely to kill it soon: a killed mutant is told by its first failing test (``-x``). First the
tests written for the mutants (``test_*_mutants*.py`` and ``AIMED``, small and aimed), then the
others fastest first (mutmut times a test's call, not the app each test starts). Outside a
mutant's run nothing changes."""

import json
import os
from pathlib import Path

import pytest

# What mutmut's own runs set MUTANT_UNDER_TEST to; a mutant's run sets the mutant's name.
NOT_A_MUTANT = {"", "stats", "fail", "list_all_tests", "mutant_generation"}
# Files of tests written for a module's mutants, beside ``test_*_mutants*.py``.
AIMED = {"test_live_view"}


def _aimed(item: pytest.Item) -> bool:
    return "_mutants" in item.path.stem or item.path.stem in AIMED


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if os.environ.get("MUTANT_UNDER_TEST", "") in NOT_A_MUTANT:
        return
    stats = Path("mutmut-stats.json")  # a mutant's tests run in mutants/, beside its stats
    if not stats.is_file():
        return
    took: dict[str, float] = json.loads(stats.read_text())["duration_by_test"]
    items.sort(key=lambda item: (not _aimed(item), took.get(item.nodeid, 0.0)))
