"""Fixtures shared by the integration tests (helpers: nodeproc.py, cluster.py, clients.py).

``node`` / ``shared_node``: one tierlog process (broker and controller) per test / per module.
``cluster``: a fresh multi-process cluster per test, 1 controller + 3 brokers with
``FAST_REPLICATION`` unless the module or the test asks for another shape; ``shared_cluster``:
one of the module's shape for the module's tests that leave every node running::

    pytestmark = pytest.mark.cluster(controllers=3, brokers=3, props=FAST)
    @pytest.mark.cluster(brokers=4)
"""
import pytest
from cluster import FAST_REPLICATION, Cluster, running
from nodeproc import NodeProcess

CLUSTER_DEFAULTS = {"controllers": 1, "brokers": 3, "props": FAST_REPLICATION}


@pytest.fixture
def node(tmp_path):
    """A fresh single tierlog node process on a free port; stopped after the test."""
    n = NodeProcess(tmp_path / "node-1").start()
    yield n
    if n.alive():
        n.stop()


@pytest.fixture(scope="module")
def shared_node(request, tmp_path_factory):
    """One node shared by a module's tests (each test uses its own topics), with the module's
    ``SHARED_NODE_PROPS`` if it has some."""
    props = getattr(request.module, "SHARED_NODE_PROPS", None)
    n = NodeProcess(tmp_path_factory.mktemp("shared") / "node-1", props=props).start()
    yield n
    if n.alive():
        n.stop()


def _shape(request) -> dict:
    marker = request.node.get_closest_marker("cluster")
    return {**CLUSTER_DEFAULTS, **(marker.kwargs if marker else {})}


@pytest.fixture
def cluster(request, tmp_path):
    """A started Cluster of the shape ``@pytest.mark.cluster(...)`` gives (else CLUSTER_DEFAULTS); stopped after."""
    with running(Cluster(tmp_path, **_shape(request))) as c:
        yield c


@pytest.fixture(scope="module")
def shared_cluster(request, tmp_path_factory):
    """One Cluster of the module's shape for the module's tests that kill, stop or restart no node
    and use topics and groups of their own (a test that does kill one takes ``cluster``)."""
    with running(Cluster(tmp_path_factory.mktemp("cluster"), **_shape(request))) as c:
        yield c
