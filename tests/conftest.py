"""Suite-wide collection order: the modules whose single tests last minutes run first.

`./dev test` runs two xdist workers that steal queued tests from each other, so the suite ends
when the last test ends; a test that lasts minutes and starts late leaves the other worker idle
for as long (the soak alone is about 230 s on 2 cores). Started first, these overlap the many
short tests instead. Whole modules move, in their own order, so a module's fixtures (a cluster,
a Spark session) are still set up once per worker that runs it.
"""
from __future__ import annotations

import pytest

# longest single test first (seconds on 2 cores, the CI run of 2026-11-29)
LONG_FIRST = (
    "integration/test_soak.py",                  # 230
    "integration/test_tables_rest.py",           # 52-66, a REST catalog server and two kill -9s
    "spark/test_table_read_rest.py",             # 60 with Spark's start
    "spark/test_spark_cluster.py",               # 55 + 41, a standalone Spark cluster
    "integration/test_docs_examples.py",         # 54
    "spark/test_pipeline.py",                    # 39
    "integration/test_dynamic_quorum.py",        # 38
    "spark/test_spark_connect.py",               # 30 + 25
)


def _rank(item: pytest.Item) -> int:
    path = item.path.as_posix()
    return next((i for i, name in enumerate(LONG_FIRST) if path.endswith("tests/" + name)), len(LONG_FIRST))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_rank)       # stable: every module keeps its tests' order, the rest their place
