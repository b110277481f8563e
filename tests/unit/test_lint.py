"""`ruff check src tests` is clean (ruff comes with the dev extras; its rules are its defaults)."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ruff_check_src_and_tests_is_clean():
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "src", "tests"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, f"ruff check src tests:\n{result.stdout}{result.stderr}"
