"""A real Iceberg REST catalog server process on 127.0.0.1, for the tables' REST catalog tests.

The server is Lakana's (``lakana-server`` from PyPI, pinned in ``./dev``: an Iceberg REST
catalog on SQLite, with personal access tokens; docs/tables.md says why this one), run from
the separate virtualenv ``.venv-rest`` beside the project's ``.venv`` that ``./dev setup``
makes (its dependencies pin botocore below the project's own). Its warehouse (a Lakana
"environment", the REST spec's ``{prefix}``) is the given directory; it takes tables only
under a namespace ``bronze``, ``silver`` or ``gold``, so tierlog's namespace is
``bronze.tierlog``. No mock: the tests talk HTTP to the server as the brokers do.
"""
from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cluster import wait_for
from nodeproc import free_port

__all__ = ["ENVIRONMENT", "NAMESPACE", "RestCatalog", "rest_catalog_server"]

ENVIRONMENT, NAMESPACE = "tierlog", "bronze.tierlog"
SERVER_VENV = ".venv-rest"            # made by ./dev setup (setup_rest_catalog)
START_TIMEOUT_S = 60
_KEY_ID, _SECRET = "tierlogtest0001", "tierlog0secret0for0the0rest0test"    # the bootstrap admin's fixed token


@dataclass(frozen=True)
class RestCatalog:
    uri: str
    token: str = f"lakana_pat_{_KEY_ID}_{_SECRET}"

    def properties(self) -> dict[str, str]:
        """The brokers' settings for this catalog (the CLI's --set and Spark's options take the same names)."""
        return {"tierlog.table.catalog.type": "rest", "tierlog.table.catalog.uri": self.uri,
                "tierlog.table.catalog.prefix": ENVIRONMENT, "tierlog.table.catalog.token": self.token,
                "tierlog.table.namespace": NAMESPACE}

    def http(self, path: str, body: dict | None = None) -> dict:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.uri + path, data=data, headers={"Authorization": f"Bearer {self.token}",
                                                                          "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as answer:
            return json.loads(answer.read() or b"{}")

    def answers(self) -> bool | None:
        try:
            return self.http("/v1/config") is not None
        except OSError:
            return None


def server_bin() -> Path:
    """``lakana-server`` of the venv beside the one running the tests (the repository's ``.venv-rest``)."""
    venv = Path(os.environ.get("TIERLOG_REST_CATALOG_VENV") or Path(sys.prefix).parent / SERVER_VENV)
    found = venv / "bin" / "lakana-server"
    if not found.exists():
        raise RuntimeError(f"no Iceberg REST catalog server at {found}: run ./dev setup, which makes {SERVER_VENV} "
                           "(lakana-server), or set TIERLOG_REST_CATALOG_VENV to a virtualenv that has it")
    return found


def _ends_with_us() -> None:
    """In the server's process before exec: SIGTERM when the test process dies (Linux's PR_SET_PDEATHSIG)."""
    ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM), 0, 0, 0)


@contextmanager
def rest_catalog_server(root: Path, warehouse: Path) -> Iterator[RestCatalog]:
    """The server (state and log under ``root``) with the environment ``ENVIRONMENT`` at ``warehouse``."""
    server = server_bin()
    root.mkdir(parents=True, exist_ok=True)
    warehouse.mkdir(parents=True, exist_ok=True)
    catalog = RestCatalog(f"http://127.0.0.1:{free_port()}")
    env = {**os.environ, "LAKANA_DATABASE__URL": f"sqlite:///{root / 'catalog.db'}", "LAKANA_HOST": "127.0.0.1",
           "LAKANA_PORT": catalog.uri.rsplit(":", 1)[1], "LAKANA_BOOTSTRAP_PAT_KEY_ID": _KEY_ID,
           "LAKANA_BOOTSTRAP_PAT_SECRET": _SECRET, "LAKANA_LOG__LEVEL": "WARNING"}
    log_path = root / "server.log"
    with open(log_path, "ab") as log:
        subprocess.run([str(server), "migrate"], env=env, stdout=log, stderr=log, check=True, timeout=START_TIMEOUT_S)
        proc = subprocess.Popen([str(server)], env=env, stdout=log, stderr=log, preexec_fn=_ends_with_us)
    try:
        wait_for(lambda: proc.poll() is not None or catalog.answers(), START_TIMEOUT_S,
                 "the REST catalog server answering")
        if proc.poll() is not None:
            raise RuntimeError(f"the REST catalog server exited {proc.returncode}:\n{log_path.read_text()[-3000:]}")
        catalog.http("/api/v1/environments", {"name": ENVIRONMENT, "storage": {"scheme": "file",
                                                                              "root": warehouse.resolve().as_uri()}})
        yield catalog
    finally:
        proc.terminate()
        proc.wait(30)
