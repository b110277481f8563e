"""Optional features and the pip extras that install them.

``pip install tierlog`` brings the broker, the CLI and tierlog's own client.
S3 remote storage needs the ``s3`` extra, the Spark data source and the Arrow
reader the ``spark`` extra, topics as Iceberg tables the ``table`` extra. Code that needs an extra calls ``require`` first, so
a missing one is a one-line error that names it, not a traceback about a module:

    S3 remote storage needs boto3, which is not installed: pip install 'tierlog[s3]'

``python -m tierlog.extras EXTRA...`` checks from a shell (``./dev pipeline`` does):
exit status 0 when every extra is installed, else 1 and that line on stderr.
"""

from __future__ import annotations

import importlib.util
import sys

__all__ = ["EXTRA_MODULES", "MissingExtraError", "missing_module", "require"]

# The top-level modules each extra provides, as imported by src/tierlog
# (their distributions are the extra's entries in pyproject.toml).
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "s3": ("boto3", "botocore"),
    "spark": ("pyspark", "pyarrow", "numpy"),
    "table": ("pyiceberg", "pyarrow", "numpy", "duckdb"),
}


class MissingExtraError(ImportError):
    """A feature was used without the extra that installs its libraries."""


def missing_module(extra: str) -> str | None:
    """The first module of ``extra`` that cannot be found, else None."""
    for module in EXTRA_MODULES[extra]:
        if importlib.util.find_spec(module) is None:
            return module
    return None


def require(extra: str, feature: str) -> None:
    """Raise MissingExtraError naming ``extra`` unless its modules are installed."""
    module = missing_module(extra)
    if module is not None:
        raise MissingExtraError(f"{feature} needs {module}, which is not installed: "
                                f"pip install 'tierlog[{extra}]'", name=module)


def _main(extras: list[str]) -> int:
    unknown = [e for e in extras if e not in EXTRA_MODULES]
    if unknown:
        sys.stderr.write(f"unknown extra(s): {', '.join(unknown)} (known: {', '.join(EXTRA_MODULES)})\n")
        return 2
    for extra in extras:
        try:
            require(extra, f"the {extra} extra")
        except MissingExtraError as exc:
            sys.stderr.write(f"{exc}\n")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
