"""The source's and sink's own option errors reach the user as one line, not a traceback.

Spark runs the data source's code in Python worker processes and wraps what they raise in
its own error (``[PYTHON_DATA_SOURCE_ERROR] Failed to initialize Python data source reader:
...``). A worker reports the exception's whole traceback unless ``SPARK_HIDE_TRACEBACK``
is set in its environment (``pyspark.util.handle_worker_exception``; Spark sets it from
``spark.sql.execution.pyspark.udf.hideTraceback.enabled``), and then only
``tierlog.spark.options.OptionError: <message>``. So an `OptionError` leaving one of our methods
sets it, in that worker only: a worker reports the error and exits (planner, task and
streaming-source workers alike), so no other code's traceback is hidden. The driver then
reads::

    pyspark.errors.exceptions.captured.AnalysisException: [PYTHON_DATA_SOURCE_ERROR] Failed to
    initialize Python data source reader: tierlog.spark.options.OptionError: kafka.max.poll.records:
    not supported by the tierlog source (it honours ...) SQLSTATE: 38000

Any other exception keeps its traceback: that is a bug to report, not an option to fix.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from tierlog.spark.options import OptionError

__all__ = ["HIDE_TRACEBACK_ENV", "option_errors_in_one_line"]

HIDE_TRACEBACK_ENV = "SPARK_HIDE_TRACEBACK"      # read by pyspark.util.handle_worker_exception

_C = TypeVar("_C", bound=type)


def option_errors_in_one_line(cls: _C) -> _C:
    """Wrap the public methods ``cls`` defines so that an `OptionError` leaving them (or the
    iterator one returns) is reported by its message alone."""
    for name, fn in list(vars(cls).items()):
        if not name.startswith("_") and inspect.isfunction(fn):
            setattr(cls, name, _reported_in_one_line(fn))
    return cls


def _reported_in_one_line(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            result = fn(*args, **kwargs)
        except OptionError:
            os.environ[HIDE_TRACEBACK_ENV] = "1"
            raise
        return _iterated_in_one_line(result) if isinstance(result, Iterator) else result
    return call


def _iterated_in_one_line(items: Iterator[Any]) -> Iterator[Any]:
    try:
        yield from items
    except OptionError:
        os.environ[HIDE_TRACEBACK_ENV] = "1"
        raise
