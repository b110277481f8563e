"""The soak's laboratory: one network namespace per node on a bridge of our own, and the cluster in it.

Nothing touches the host's network: ``Net`` creates a hub namespace holding a bridge
(``10.77.0.254/24``, where the soak driver, its clients and the checker run) and one namespace
per node (node ``i`` at ``10.77.0.i``, moto at ``10.77.0.50``), each joined to the bridge by a
veth pair.  A network fault is a route in one node's namespace: ``blackhole 10.77.0.j/32``
drops everything that node sends to ``j`` (a one-way cut; both ways cut the pair), and a link
set down cuts a namespace off entirely (the S3 outage).  Names carry the driver's pid, so
concurrent soaks do not meet, and ``sweep()`` removes those of a soak that died.

``SoakCluster`` is 3 controllers (nodes 1-3) and 4 brokers (nodes 4-7) of the integration
harness's ``NodeProcess``, each started under ``ip netns exec`` in its namespace, with fixed
ports (every node has an address of its own).  The brokers' log dirs are tmpfs mounts the
driver made (``mount_disks``) so a disk can be filled to ENOSPC; their metadata logs live
outside them.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from nodeproc import NodeProcess

SUBNET, HUB_HOST, MOTO_ID = "10.77.0", 254, 50
CONTROLLERS, BROKERS = (1, 2, 3), (4, 5, 6, 7)
BROKER_PORT, CONTROLLER_PORT, METRICS_PORT, MOTO_PORT = 9092, 9093, 9100, 5000
DISK_MIB = 192          # each broker's log dir, a tmpfs of this size


def host(node_id: int) -> str:
    return f"{SUBNET}.{node_id}"


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True, timeout=30)


def available() -> str | None:
    """None when network namespaces can be made here, else why not."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, routes, tmpfs mounts)"
    try:
        probe = f"tsk{os.getpid()}probe"
        _ip("netns", "add", probe)
        _ip("netns", "del", probe)
    except (OSError, subprocess.CalledProcessError) as e:
        return f"cannot create a network namespace: {e}"
    return None


class Net:
    """The hub, one namespace per member, and the routes that cut them (see the module docstring)."""

    def __init__(self, members: list[int], tag: str | None = None):
        self.tag = tag or f"tsk{os.getpid()}"
        self.members = members
        self.hub = f"{self.tag}-hub"
        self.cuts: set[tuple[int, int]] = set()

    def ns(self, member: int) -> str:
        return f"{self.tag}-n{member}"

    def create(self) -> Net:
        _ip("netns", "add", self.hub)
        hub = ("-n", self.hub)
        _ip(*hub, "link", "set", "lo", "up")
        _ip(*hub, "link", "add", "br0", "type", "bridge")
        _ip(*hub, "addr", "add", f"{host(HUB_HOST)}/24", "dev", "br0")
        _ip(*hub, "link", "set", "br0", "up")
        for m in self.members:
            ns = self.ns(m)
            _ip("netns", "add", ns)
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("link", "add", f"v{m}", "netns", self.hub, "type", "veth", "peer", "name", "eth0", "netns", ns)
            _ip(*hub, "link", "set", f"v{m}", "master", "br0")
            _ip(*hub, "link", "set", f"v{m}", "up")
            _ip("-n", ns, "addr", "add", f"{host(m)}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
        return self

    def destroy(self) -> None:
        for name in [self.ns(m) for m in self.members] + [self.hub]:
            _ip("netns", "del", name, check=False)

    @staticmethod
    def sweep() -> None:
        """Delete the namespaces of soaks whose driver is gone."""
        listed = _ip("netns", "list", check=False).stdout.split()
        for name in listed:
            if name.startswith("tsk") and "-" in name:
                pid = name[3:].split("-", 1)[0]
                if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                    _ip("netns", "del", name, check=False)

    # -- faults (called from inside the hub namespace or outside: ``ip -n`` names the namespace)
    def cut(self, src: int, dst: int) -> None:
        """Everything ``src`` sends to ``dst`` is dropped (``dst`` may be HUB_HOST: the clients)."""
        if (src, dst) not in self.cuts:
            _ip("-n", self.ns(src), "route", "add", "blackhole", f"{host(dst)}/32")
            self.cuts.add((src, dst))

    def mend(self, src: int, dst: int) -> None:
        if (src, dst) in self.cuts:
            _ip("-n", self.ns(src), "route", "del", "blackhole", f"{host(dst)}/32", check=False)
            self.cuts.discard((src, dst))

    def link(self, member: int, up: bool) -> None:
        """The member's veth on the bridge up or down (down: it is cut off from everyone)."""
        _ip("-n", self.hub, "link", "set", f"v{member}", "up" if up else "down")


class SoakNode(NodeProcess):
    """A NodeProcess at its own address in its own namespace."""

    def __init__(self, root: Path, node_id: int, net: Net, props: dict):
        super().__init__(root, node_id, BROKER_PORT if node_id in BROKERS else CONTROLLER_PORT, props)
        self.launcher = ["ip", "netns", "exec", net.ns(node_id)]

    @property
    def bootstrap(self) -> str:
        return f"{host(self.node_id)}:{self.port}"

    @property
    def host(self) -> str:
        return host(self.node_id)


class SoakCluster:
    def __init__(self, root: Path, net: Net, props: dict):
        voters = ",".join(f"{c}@{host(c)}:{CONTROLLER_PORT}" for c in CONTROLLERS)
        common = {"cluster.id": "tierlog-soak-cluster", "controller.quorum.voters": voters,
                  "controller.listener.names": "CONTROLLER", **props}
        self.root = root
        self.nodes: dict[int, SoakNode] = {}
        for n in (*CONTROLLERS, *BROKERS):
            own = {**common, "metrics.prometheus.listener": f"{host(n)}:{METRICS_PORT}",
                   "tierlog.test.faults.file": str(root / f"node-{n}" / "test-faults.json")}
            if n in CONTROLLERS:
                own.update({"process.roles": "controller", "listeners": f"CONTROLLER://{host(n)}:{CONTROLLER_PORT}"})
            else:
                own.update({"process.roles": "broker", "listeners": f"PLAINTEXT://{host(n)}:{BROKER_PORT}",
                            "metadata.log.dir": str(root / f"node-{n}" / "metadata")})
            self.nodes[n] = SoakNode(root / f"node-{n}", n, net, own)

    @property
    def brokers(self) -> list[SoakNode]:
        return [self.nodes[b] for b in BROKERS]

    @property
    def controllers(self) -> list[SoakNode]:
        return [self.nodes[c] for c in CONTROLLERS]

    @property
    def bootstrap(self) -> str:
        """Every broker, alive or not: clients must find the live ones themselves."""
        return ",".join(b.bootstrap for b in self.brokers)

    def disk(self, broker: int) -> Path:
        return self.nodes[broker].data_dir

    def logs_tail(self, lines: int = 30) -> str:
        return "\n".join(f"--- node {n.node_id} ---\n{n.log_tail(lines)}" for n in self.nodes.values())


def mount_disks(root: Path) -> list[str]:
    """The shell words that mount a tmpfs on each broker's log dir, then exec the rest of the command
    (run under ``unshare -m``: the mounts live as long as that mount namespace)."""
    dirs = [str(root / f"node-{b}" / "data") for b in BROKERS]
    script = ('for d in "$@"; do [ "$d" = -- ] && break; mkdir -p "$d" && '
              f'mount -t tmpfs -o size={DISK_MIB}m tmpfs "$d" || exit 1; done; '
              'while [ "$1" != -- ]; do shift; done; shift; exec "$@"')
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", *dirs, "--"]


def python() -> str:
    return sys.executable
