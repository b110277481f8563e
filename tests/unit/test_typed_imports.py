"""The protocol/typed TypedDicts are for the type checker: a node's start imports none of them
(docs/architecture.md, "Types"), but the one the marker sender casts to at run time (at most)."""
import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
# txn_marker_sender's cast(WritableTxnMarker, ...) names its TypedDict at run time
RUNTIME = {"tierlog.protocol.typed", "tierlog.protocol.typed.write_txn_markers"}


def test_a_node_imports_no_typed_message_module():
    probe = "import sys, tierlog.node; print('\\n'.join(m for m in sys.modules if m.startswith('tierlog.protocol.typed')))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True,
                            env={**os.environ, "PYTHONPATH": str(SRC)})
    assert set(result.stdout.split()) <= RUNTIME
