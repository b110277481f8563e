"""Every relative link of README.md, docs/*.md and bench/README.md resolves: the file exists
and, where the link names an ``#anchor``, that file has a heading with GitHub's anchor for it."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "bench" / "README.md"]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)
CODE_SPAN = re.compile(r"`[^`\n]*`")


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, markup and punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in FENCE.sub("", path.read_text()).splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            base = anchor(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(path: Path) -> list[str]:
    text = CODE_SPAN.sub("", FENCE.sub("", path.read_text()))
    return LINK.findall(text)


def broken(path: Path) -> list[str]:
    out = []
    for target in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):        # http:, https:, mailto:
            continue
        file_part, _, fragment = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path
        if not resolved.exists():
            out.append(f"{target}: no file {resolved}")
        elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
            out.append(f"{target}: no heading #{fragment} in {resolved}")
    return out


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve(path):
    assert broken(path) == []


def test_anchor_follows_github():
    assert anchor("ACLs (KIP-801)") == "acls-kip-801"
    assert anchor("Spark: the exactly-once sink (`transactional=true`, `spark/transactional_write.py`)") == \
        "spark-the-exactly-once-sink-transactionaltrue-sparktransactional_writepy"
    assert anchor("What works: consumer groups") == "what-works-consumer-groups"


def test_a_missing_file_and_a_missing_heading_are_reported(tmp_path):
    (tmp_path / "other.md").write_text("# Only this\n")
    page = tmp_path / "page.md"
    page.write_text("[a](other.md#only-this) [b](other.md#nope) [c](gone.md) [d](https://example.com/x)\n"
                    "`[e](not-a-link.md)`\n")
    assert [line.split(":")[0] for line in broken(page)] == ["other.md#nope", "gone.md"]
