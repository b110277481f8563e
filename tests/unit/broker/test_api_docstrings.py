"""Each API module's docstring names the key and versions it registers (docs true to the code).

A module's first docstring line reads ``Name (key), vMIN-MAX: ...`` (``vN`` when MIN == MAX); the
registry (``tierlog.broker.apis.REGISTRY``, which builds the ApiVersions answer) holds what it serves.
docs/kafka-clients.md, "The APIs served", lists the same ranges.
"""
import re
from pathlib import Path

import pytest

from tierlog.broker.apis import REGISTRY

_FIRST_LINE = re.compile(r"^(?P<name>[A-Za-z]+) \((?P<key>\d+)\), v(?P<lo>\d+)(?:-(?P<hi>\d+))?[: ]")
_API_PAGE = Path(__file__).resolve().parents[3] / "docs" / "kafka-clients.md"


def _declared(module) -> tuple[str, int, int, int]:
    first = (module.__doc__ or "").splitlines()[0] if module.__doc__ else ""
    m = _FIRST_LINE.match(first)
    assert m, f"{module.__name__}: docstring must start 'Name (key), vMIN-MAX:', got {first!r}"
    lo = int(m["lo"])
    return m["name"], int(m["key"]), lo, int(m["hi"]) if m["hi"] else lo


def _range(lo: int, hi: int) -> str:
    return f"{lo}" if lo == hi else f"{lo}-{hi}"


@pytest.mark.parametrize("key", sorted(REGISTRY))
def test_docstring_versions_match_the_registration(key):
    module = REGISTRY[key]
    _, doc_key, lo, hi = _declared(module)
    registered = (int(module.API_KEY), module.MIN_VERSION, module.MAX_VERSION)
    assert (doc_key, lo, hi) == registered, f"{module.__name__}: docstring says {(doc_key, lo, hi)}, " \
                                            f"registered {registered}"
    assert module.__name__.rsplit(".", 1)[1].startswith(f"api_{key:02d}_")


@pytest.mark.parametrize("key", sorted(REGISTRY))
def test_the_api_page_lists_the_registered_versions(key):
    name, _, lo, hi = _declared(REGISTRY[key])
    section = _API_PAGE.read_text().split("## The APIs served", 1)[1].split("\n## ", 1)[0]
    text = " ".join(section.split())
    assert re.search(rf"\b{name} {_range(lo, hi)}\b(?![-\d])", text), f"docs/kafka-clients.md lacks " \
                                                                     f"{name} {_range(lo, hi)}"
