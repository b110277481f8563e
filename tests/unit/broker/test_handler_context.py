"""HandlerContext names exactly what request handlers use of the broker, and
the Broker provides all of it."""

import ast
import inspect
import pathlib

from tierlog.broker import broker as broker_module
from tierlog.broker import leader_hint
from tierlog.broker.apis import REGISTRY, context
from tierlog.broker.apis.context import (
    ControllerSender,
    HandlerContext,
    HostedReplicas,
    MetadataSource,
)

APIS_DIR = pathlib.Path(context.__file__).parent
# the broker's parts that handlers reach through it, and the protocol each must follow
PARTS = {"metadata": MetadataSource, "controller": ControllerSender, "replicas": HostedReplicas}


def _members(protocol) -> set[str]:
    names = set(getattr(protocol, "__annotations__", {}))
    names |= {n for n in vars(protocol) if not n.startswith("_")}
    return names


def _uses(tree: ast.AST, root: str) -> set[tuple[str, ...]]:
    """Attribute paths read from ``root`` (``broker.replicas.get`` -> ("replicas", "get"))."""
    paths = set()
    for node in ast.walk(tree):
        chain = []
        while isinstance(node, ast.Attribute):
            chain.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id == root and chain:
            paths.add(tuple(reversed(chain)))
        elif (root == "self._broker" and isinstance(node, ast.Name) and node.id == "self"
              and chain and chain[-1] == "_broker" and len(chain) > 1):
            paths.add(tuple(reversed(chain[:-1])))
    return paths


def _handler_uses() -> set[tuple[str, ...]]:
    uses = set()
    for path in sorted(APIS_DIR.glob("*.py")):
        uses |= _uses(ast.parse(path.read_text()), "broker")
    uses |= _uses(ast.parse(inspect.getsource(leader_hint)), "self._broker")
    return uses


def test_every_member_a_handler_uses_is_in_the_protocol():
    members = _members(HandlerContext)
    missing = sorted(".".join(p) for p in _handler_uses() if p[0] not in members)
    assert missing == []


def test_every_method_a_handler_calls_on_a_part_is_in_its_protocol():
    missing = []
    for path in _handler_uses():
        if len(path) > 1 and path[0] in PARTS and path[1] not in _members(PARTS[path[0]]):
            missing.append(".".join(path))
    assert sorted(missing) == []


def test_the_protocol_names_nothing_handlers_do_not_use():
    used = {p[0] for p in _handler_uses()}
    assert sorted(_members(HandlerContext) - used) == []


def test_the_broker_provides_every_member_of_the_protocol():
    init = ast.parse(inspect.getsource(broker_module.Broker.__init__).strip())
    assigned = {t.attr for node in ast.walk(init) if isinstance(node, ast.Assign)
                for t in node.targets if isinstance(t, ast.Attribute)}
    provided = assigned | {n for n in dir(broker_module.Broker) if not n.startswith("_")}
    assert sorted(_members(HandlerContext) - provided) == []


def test_every_registered_handler_is_annotated_with_the_protocol():
    for key, module in REGISTRY.items():
        # unevaluated: the messages' TypedDicts are imported for the type checker only
        hints = inspect.get_annotations(module.handle)
        assert hints["broker"] in ("HandlerContext", HandlerContext) and module.HandlerContext is HandlerContext, f"api {key}"
