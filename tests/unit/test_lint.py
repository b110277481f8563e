"""`ruff check src tests` is clean (ruff comes with the dev extras; its rules are pyproject.toml's [tool.ruff]); test modules
have unique names."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ruff_check_src_and_tests_is_clean():
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "src", "tests"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, f"ruff check src tests:\n{result.stdout}{result.stderr}"


def test_test_modules_have_unique_names():
    # pytest imports test modules by basename (rootdir-relative sys.path entries): two files
    # named alike in different folders make the second fail to collect
    names = sorted(p.name for p in (ROOT / "tests").rglob("test_*.py"))
    assert [n for i, n in enumerate(names) if i and names[i - 1] == n] == []
