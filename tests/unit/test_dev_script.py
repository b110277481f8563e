"""`./dev`: its usage lists every command (and nothing else); each command installs the extras it needs, once.

The script runs in a scratch copy of the checkout whose ``.venv/bin/python``,
``.venv/bin/tierlog`` and ``.venv-rest/bin/python`` (the REST catalog server's venv) are
stand-ins that log their arguments, and whose Java is a stand-in too, so nothing is
installed and nothing is started.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_STAND_IN = '#!/bin/sh\necho "$(basename "$0") $*" >> "$DEV_CALLS"\n'


@pytest.fixture
def checkout(tmp_path):
    for name in ("dev", "pyproject.toml"):
        shutil.copy2(ROOT / name, tmp_path / name)
    for tool in (".venv/bin/python", ".venv/bin/tierlog", ".venv-rest/bin/python", "jdk/bin/java"):
        path = tmp_path / tool
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_STAND_IN)
        path.chmod(0o755)
    return tmp_path


def _dev(checkout: Path, *args: str) -> tuple[int, list[str], str]:
    calls = checkout / "calls.log"
    calls.write_text("")
    env = {**os.environ, "DEV_CALLS": str(calls), "JAVA_HOME": str(checkout / "jdk")}
    result = subprocess.run(["bash", str(checkout / "dev"), *args], env=env, capture_output=True, text=True,
                            timeout=60, check=False)
    return result.returncode, calls.read_text().splitlines(), result.stdout


def _installs(calls: list[str]) -> list[str]:
    return [c.removeprefix("python -m pip install --quiet ") for c in calls if "-e ." in c]


def test_usage_lists_every_command():
    result = subprocess.run(["bash", str(ROOT / "dev")], capture_output=True, text=True, timeout=30, check=False)
    assert result.returncode == 2
    for command in ("./dev up", "./dev test", "./dev pipeline", "./dev setup"):
        assert command in result.stdout, result.stdout
    assert "set -" not in result.stdout and result.stdout.startswith("One entry point"), result.stdout


def test_what_the_readme_examples_write_is_ignored_by_git():
    written = ["tierlog-data/node-1.log", "topics.json", "pipeline-out/part-0.parquet"]
    result = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "--no-index", *written], capture_output=True,
                            text=True, timeout=30, check=False)
    assert result.stdout.split() == written, result.stdout + result.stderr


def test_up_installs_the_core_once(checkout):
    code, calls, _ = _dev(checkout, "up", "--brokers", "1")
    assert code == 0 and _installs(calls) == ["-e ."] and calls[-1] == "tierlog up --brokers 1"
    code, calls, _ = _dev(checkout, "up")
    assert code == 0 and _installs(calls) == [] and calls == ["python -m compileall -q -j 0 src tests", "tierlog up"]


def test_test_installs_dev_after_up_and_dev_then_serves_every_command(checkout):
    _dev(checkout, "up")
    code, calls, _ = _dev(checkout, "test", "-k", "x")
    assert code == 0 and _installs(calls) == ["-e .[dev]"]
    assert calls[-1].startswith("python -m pytest") and calls[-1].endswith("-k x")
    for command in ("up", "pipeline", "setup"):
        assert _installs(_dev(checkout, command)[1]) == [], command


def test_setup_installs_the_rest_catalog_server_into_its_own_venv_once(checkout):
    server = [c for c in _dev(checkout, "setup")[1] if "lakana-server" in c]
    assert server == ["python -m pip install --quiet lakana-server==0.20.0"], server
    assert [c for c in _dev(checkout, "setup")[1] if "pip" in c] == []         # its stamp names the version


def test_pipeline_installs_spark_and_checks_it(checkout):
    code, calls, _ = _dev(checkout, "pipeline", "--duration", "1")
    assert code == 0 and _installs(calls) == ["-e .[spark]"]
    assert calls[-2:] == ["python -m tierlog.extras spark", "python -m tierlog.spark.pipeline --duration 1"]


def test_a_changed_pyproject_installs_again(checkout):
    _dev(checkout, "up")
    later = time.time() + 5
    os.utime(checkout / "pyproject.toml", (later, later))
    assert _installs(_dev(checkout, "up")[1]) == ["-e ."]
