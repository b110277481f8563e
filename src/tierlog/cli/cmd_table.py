"""`tierlog table ls` / `describe` / `query`: the topics' Iceberg tables, read without a broker.

Like `tierlog remote`, the command reads the remote store (``--storage DIR`` or
``s3://BUCKET/PREFIX``, other S3 settings as ``--set rsm.config.storage.s3.*=...``) and
the tables' catalog (``--catalog-uri``/``--catalog-type``, the brokers'
``tierlog.table.catalog.*``, other catalog properties and ``tierlog.table.namespace`` as
``--set KEY=VALUE``; on a directory store the default is the SQLite catalog in
it), so it works on a stopped cluster. docs/tables.md has the tables' layout.

- ``ls``: one row per table: topic, kind (table / dead-letter), mode, rows, data files,
  the last offset each partition covers, the last commit's time;
- ``describe TOPIC``: the columns, the partitions with their covered offsets, rows and
  files, the snapshots, the location (``--dead-letter`` for the dead-letter table);
- ``query TOPIC [SQL]``: DuckDB over the table as ``t`` (the Parquet files pyiceberg
  plans; on S3, pyiceberg's Arrow reader), default ``SELECT * FROM t ORDER BY partition,
  offset LIMIT 20``; binary columns print as text where they are UTF-8.

Needs the ``table`` extra. ``--json`` prints one JSON document.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from tierlog.cli.errors import CliError
from tierlog.cli.options import key_value
from tierlog.cli.render import make_table, note, print_json, print_table
from tierlog.extras import require
from tierlog.tiered import RemoteStorageConfigError, RemoteStorageError, object_store_from_location

__all__ = ["register"]

DEFAULT_QUERY = 'SELECT * FROM t ORDER BY "partition", "offset" LIMIT 20'
QUERY_ROWS_MAX = 10_000         # rows a query prints; more is an error asking for a LIMIT

_EPILOG = """\
examples:
  tierlog table ls --storage tierlog-data/remote-storage
  tierlog table describe orders --storage tierlog-data/remote-storage
  tierlog table query orders --storage tierlog-data/remote-storage
  tierlog table query orders "SELECT count(*), max(amount) FROM t WHERE \\"partition\\" = 0" \\
      --storage tierlog-data/remote-storage
  tierlog table query orders "SELECT \\"offset\\", error FROM t" --dead-letter --storage tierlog-data/remote-storage
  tierlog table ls --storage s3://bucket/tierlog --catalog-uri postgresql://catalog-host/iceberg
"""


def _catalog(args: argparse.Namespace):
    require("table", "tierlog table")
    from tierlog.tiered.table.catalog import (
        CATALOG_PREFIX,
        CATALOG_TYPE,
        CATALOG_URI,
        NAMESPACE_CONFIG,
        TableCatalog,
        s3_io,
        table_settings,
    )
    settings = dict(args.set or [])
    foreign = sorted(k for k in settings if not k.startswith(("rsm.config.storage.", CATALOG_PREFIX, NAMESPACE_CONFIG)))
    if foreign:
        raise CliError(f"--set takes rsm.config.storage.*, {CATALOG_PREFIX}* and {NAMESPACE_CONFIG} settings only, "
                       f"not {', '.join(foreign)}")
    if not args.storage.startswith("s3://") and not Path(args.storage).is_dir():
        raise CliError(f"no remote storage directory {args.storage}")
    try:
        store = object_store_from_location(args.storage, {k: v for k, v in settings.items()
                                                          if k.startswith("rsm.config.storage.")})
        config = {**settings, CATALOG_TYPE: args.catalog_type, CATALOG_URI: args.catalog_uri}
        table_config = table_settings(store, config, s3_io(store))
    except (RemoteStorageConfigError, RemoteStorageError) as exc:
        raise CliError(str(exc)) from None
    local = table_config.local_catalog_dir
    if local is not None and not (local / "catalog.db").exists():
        raise CliError(f"no tables in {store.describe()} (no catalog at {local / 'catalog.db'})")
    return TableCatalog(table_config)


def _load(args: argparse.Namespace):
    from tierlog.tiered.table.catalog import covered_offsets
    catalog = _catalog(args)
    try:
        table = catalog.load(args.topic, dead_letter=args.dead_letter)
    except RemoteStorageError as exc:
        raise CliError(str(exc)) from None
    if table is None:
        kind = "dead-letter table" if args.dead_letter else "table"
        raise CliError(f"no {kind} of topic {args.topic!r}")
    return table, covered_offsets(table)


def _time(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S") + "Z"


def _summary(table, dead_letter: bool) -> dict[str, Any]:
    from tierlog.tiered.table.catalog import covered_offsets
    snap = table.current_snapshot()
    props = {} if snap is None else snap.summary.additional_properties
    return {"topic": table.name()[-1], "kind": "dead-letter" if dead_letter else "table",
            "rows": int(props.get("total-records", 0)), "data_files": int(props.get("total-data-files", 0)),
            "bytes": int(props.get("total-files-size", 0)),
            "covered": {str(p): o for p, o in sorted(covered_offsets(table).items())},
            "last_commit": None if snap is None else _time(snap.timestamp_ms),
            "snapshots": len(table.snapshots()), "location": table.location()}


def run_ls(args: argparse.Namespace) -> int:
    catalog = _catalog(args)
    try:
        loaded = [catalog.catalog.load_table(ident) for ident in catalog.list_tables()]
        tables = [_summary(table, catalog.is_dead_letter(table)) for table in loaded]
    except RemoteStorageError as exc:
        raise CliError(str(exc)) from None
    if args.topic:
        tables = [t for t in tables if t["topic"] == args.topic]
    if args.json:
        print_json({"tables": tables})
        return 0
    if not tables:
        note("no tables")
        return 0
    out = make_table("TOPIC", "KIND", "ROWS", "FILES", "BYTES", "COVERED (PARTITION:LAST OFFSET)", "LAST COMMIT")
    for t in sorted(tables, key=lambda t: (t["topic"], t["kind"] != "table")):
        out.add_row(t["topic"], t["kind"], str(t["rows"]), str(t["data_files"]), str(t["bytes"]),
                    " ".join(f"{p}:{o}" for p, o in t["covered"].items()) or "-", t["last_commit"] or "-")
    print_table(out)
    return 0


def run_describe(args: argparse.Namespace) -> int:
    table, covered = _load(args)
    files: dict[int, list[int]] = {}
    for task in table.scan().plan_files():
        part = task.file.partition[0]
        files.setdefault(part, []).append(task.file.record_count)
    info = _summary(table, args.dead_letter)
    info["columns"] = [{"name": f.name, "type": str(f.field_type), "required": f.required}
                       for f in table.schema().fields]
    info["partitions"] = [{"partition": p, "last_offset": covered.get(p), "rows": sum(files.get(p, [])),
                           "data_files": len(files.get(p, []))} for p in sorted(set(covered) | set(files))]
    if args.json:
        print_json(info)
        return 0
    note(f"{info['kind']} of {info['topic']} at {info['location']}: {info['rows']} rows in {info['data_files']} "
         f"file(s), {info['snapshots']} snapshot(s), last commit {info['last_commit'] or '-'}")
    columns = make_table("COLUMN", "TYPE", "REQUIRED")
    for c in info["columns"]:
        columns.add_row(c["name"], c["type"], "yes" if c["required"] else "no")
    print_table(columns)
    parts = make_table("PARTITION", "LAST OFFSET", "ROWS", "FILES")
    for p in info["partitions"]:
        parts.add_row(str(p["partition"]), str(p["last_offset"]), str(p["rows"]), str(p["data_files"]))
    print_table(parts)
    return 0


def run_query(args: argparse.Namespace) -> int:
    import duckdb
    table, _covered = _load(args)
    con = duckdb.connect()
    _register(con, table)
    try:
        result = con.execute(args.sql or DEFAULT_QUERY)
    except duckdb.Error as exc:
        raise CliError(f"query: {str(exc).splitlines()[0]}") from None
    names = [d[0] for d in result.description or []]
    rows = result.fetchmany(QUERY_ROWS_MAX + 1)
    if len(rows) > QUERY_ROWS_MAX:
        raise CliError(f"the query returns more than {QUERY_ROWS_MAX} rows: add a LIMIT")
    if args.json:
        print_json({"columns": names, "rows": [[_cell(v, raw=True) for v in r] for r in rows]})
        return 0
    out = make_table(*names)
    for r in rows:
        out.add_row(*(_cell(v) for v in r))
    print_table(out)
    return 0


def _register(con, table) -> None:
    """The table as view ``t``: its planned Parquet files (local) or pyiceberg's Arrow reader (S3)."""
    files = [task.file.file_path for task in table.scan().plan_files()]
    if files and all(f.startswith("file://") for f in files):
        paths = [unquote(f.removeprefix("file://")) for f in files]
        con.read_parquet(paths, union_by_name=True).create_view("t")
        return
    arrow = table.scan().to_arrow() if files else table.schema().as_arrow().empty_table()
    con.register("t", arrow)


def _cell(v: Any, raw: bool = False) -> Any:
    if isinstance(v, bytes | bytearray):
        try:
            return bytes(v).decode("utf-8")
        except UnicodeDecodeError:
            return bytes(v).hex() if raw else "0x" + bytes(v).hex()
    if raw:
        return v if isinstance(v, int | float | str | bool) or v is None else str(v)
    return "null" if v is None else str(v)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--storage", required=True, metavar="DIR|s3://BUCKET/PREFIX",
                   help="the remote storage: a directory or an S3 bucket and prefix")
    p.add_argument("--catalog-uri", default="", metavar="URI",
                   help="the tables' catalog (tierlog.table.catalog.uri); default: SQLite in a directory store")
    p.add_argument("--catalog-type", default="sql", choices=("sql", "rest"), help="the catalog's kind")
    p.add_argument("--set", action="append", type=key_value, metavar="KEY=VALUE",
                   help="a remote storage setting (rsm.config.storage.*), a catalog property as the brokers have it "
                        "(tierlog.table.catalog.*, e.g. a REST catalog's token or prefix) or tierlog.table.namespace; "
                        "repeatable")
    p.add_argument("--json", action="store_true", help="print one JSON document")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "table", help="the topics' Iceberg tables, without a broker",
        description="List, describe and query the Iceberg tables of topics with tierlog.table.mode on "
                    "(docs/tables.md), straight from remote storage and the tables' catalog.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = parser.add_subparsers(title="actions", metavar="ACTION", required=True)
    ls = actions.add_parser("ls", help="list the tables", epilog=_EPILOG,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    _common(ls)
    ls.add_argument("--topic", metavar="TOPIC", help="only this topic's tables")
    ls.set_defaults(func=run_ls)
    for name, helptext, func in (("describe", "a table's columns, partitions and covered offsets", run_describe),
                                 ("query", "a DuckDB query of a table (as t)", run_query)):
        p = actions.add_parser(name, help=helptext, epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
        p.add_argument("topic", metavar="TOPIC")
        if name == "query":
            p.add_argument("sql", nargs="?", metavar="SQL", help=f"default: {DEFAULT_QUERY}")
        _common(p)
        p.add_argument("--dead-letter", action="store_true", help="the topic's dead-letter table")
        p.set_defaults(func=func)
