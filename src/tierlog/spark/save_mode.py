"""``df.write.format("tierlog").save()`` with Spark's default save mode, as Spark's Kafka sink takes it.

Spark's Kafka sink accepts Append and ErrorIfExists (the default; it appends too) and
refuses Overwrite and Ignore. Spark hands a Python data source only Append and
Overwrite: a batch write in the default mode fails in the JVM
(``UNSUPPORTED_DATA_SOURCE_SAVE_MODE ... ErrorIfExists``) before tierlog sees it.
`default_mode_appends` makes PySpark's (classic) DataFrameWriter ask for Append when the
format is ``tierlog`` and no mode, or ErrorIfExists, was chosen; every other format and
mode is left as it was. Overwrite reaches the source, which refuses it
(`TierlogDataSource.writer`); Ignore is refused by Spark.
"""

from __future__ import annotations

import functools

__all__ = ["default_mode_appends"]

SOURCE = "tierlog"
_DEFAULT_MODES = ("error", "errorifexists", "default")     # Spark's names for ErrorIfExists
_PATCHED = "_tierlog_default_mode_appends"


def _appends(source: str | None, mode: str | None) -> bool:
    return (source or "").lower() == SOURCE and (mode is None or mode.lower() in _DEFAULT_MODES)


def default_mode_appends(writer_class) -> None:
    """Wrap ``writer_class``'s format, mode and save (once) so a tierlog save in the default mode appends."""
    if getattr(writer_class, _PATCHED, False):
        return
    original_format, original_mode, original_save = writer_class.format, writer_class.mode, writer_class.save

    @functools.wraps(original_format)
    def format(self, source):
        self._tierlog_source = str(source)
        return original_format(self, source)

    @functools.wraps(original_mode)
    def mode(self, saveMode):
        if saveMode is not None:
            self._tierlog_mode = str(saveMode)
        return original_mode(self, saveMode)

    @functools.wraps(original_save)
    def save(self, path=None, format=None, mode=None, partitionBy=None, **options):
        source = format or getattr(self, "_tierlog_source", None)
        if _appends(source, mode or getattr(self, "_tierlog_mode", None)):
            mode = "append"
        return original_save(self, path, format, mode, partitionBy, **options)

    writer_class.format, writer_class.mode, writer_class.save = format, mode, save
    setattr(writer_class, _PATCHED, True)
