"""run_node: a node run without uvloop logs tracebacks of its own, not chained to uvloop's ImportError."""
import logging
import sys

from tierlog import node as node_module


def test_errors_logged_while_running_are_not_chained_to_the_missing_uvloop(monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "uvloop", None)        # `import uvloop` raises ImportError

    async def serve(config, on_ready):
        try:
            raise RuntimeError("a handler bug")
        except RuntimeError:
            logging.getLogger("tierlog.test").exception("unexpected")

    monkeypatch.setattr(node_module, "_serve", serve)
    with caplog.at_level(logging.ERROR):
        node_module.run_node(config=None)
    (record,) = [r for r in caplog.records if r.name == "tierlog.test"]
    error = record.exc_info[1]
    assert error.__context__ is None and error.__cause__ is None
