"""mypy is clean on the packages ``[tool.mypy] files`` lists (mypy comes with the dev extra)."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_mypy_is_clean_on_the_checked_packages():
    result = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(ROOT / ".mypy_cache")], cwd=ROOT,
                            capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, f"mypy (pyproject.toml [tool.mypy]):\n{result.stdout}{result.stderr}"
