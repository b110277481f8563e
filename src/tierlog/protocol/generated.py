"""Writing or checking a generated package (``hot_gen`` and ``typed_gen`` share this): the
package's ``*.py`` files are exactly the rendered ones, stale files removed."""
from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["sync"]


def sync(target: Path, files: dict[str, str], module: str, argv: list[str]) -> int:
    """Rewrite ``target`` with ``files`` (name -> text); with ``--check`` in ``argv`` only
    compare, and return 1 (naming the command to run) when they differ."""
    if "--check" in argv:
        current = {p.name: p.read_text() for p in target.glob("*.py")} if target.is_dir() else {}
        if current != files:
            print(f"{target} is not current: run python -m {module}", file=sys.stderr)
            return 1
        return 0
    target.mkdir(exist_ok=True)
    for stale in {p.name for p in target.glob("*.py")} - set(files):
        (target / stale).unlink()
    for name, text in files.items():
        (target / name).write_text(text)
    return 0
