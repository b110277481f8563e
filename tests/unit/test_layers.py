"""The architecture contract: `lint-imports` keeps the layers of docs/architecture.md.

The contract lives in pyproject.toml (``[tool.importlinter]``); import-linter
sees local (in-function) imports too.  The second test keeps the document's
layer list and the contract in the same order, so neither drifts alone.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
LAYER_LINE = re.compile(r"^  ([a-z_]+)(?:/|\.py)\s")


def _contract_layers() -> list[set[str]]:
    """The layers contract's layers, lowest first, each the set of its (independent) modules."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layers,) = [c["layers"] for c in config["contracts"] if c["type"] == "layers"]
    return [{part.strip().strip("()") for part in re.split(r"[|:]", layer)} for layer in reversed(layers)]


def _documented_layers() -> list[str]:
    """The names in the code block of the architecture document's "Layers" section, in order."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text.split("## Layers", 1)[1].split("```", 2)[1]
    return [m.group(1) for line in section.splitlines() if (m := LAYER_LINE.match(line))]


def test_no_module_imports_from_a_higher_layer():
    assert LINT_IMPORTS.exists(), f"{LINT_IMPORTS} missing: install the dev extras (pip install -e '.[dev]')"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    result = subprocess.run([str(LINT_IMPORTS), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
                            check=False, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_the_document_lists_the_contract_layers_in_order():
    documented, contract = _documented_layers(), _contract_layers()
    grouped, at = [], 0
    for layer in contract:
        grouped.append(set(documented[at:at + len(layer)]))
        at += len(layer)
    assert (grouped, len(documented)) == (contract, at), \
        f"docs/architecture.md: {documented}\npyproject.toml (lowest first): {contract}"
