"""Topics as Iceberg tables (docs/tables.md): each uploaded segment of a topic with
``tierlog.table.mode`` on is also one Iceberg commit of its committed records.

Needs the ``table`` extra (pyiceberg, pyarrow). ``rows`` and ``json_values`` are the
sans-IO rules (which records, which columns or which dead-letter error); ``arrow``
the table schemas and row groups; ``catalog`` the pyiceberg catalog and what a table
records of the log; ``writer`` the commit of one segment, idempotent by offset.
Import the modules themselves: this package imports nothing, so the broker names it
without the extra.
"""
