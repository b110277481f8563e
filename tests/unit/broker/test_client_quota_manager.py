"""The broker's quota manager: per-client sensors from the image, shared as Kafka's tags say."""
from types import SimpleNamespace

from tierlog.broker.client_quotas import ClientQuotaManager
from tierlog.metadata.client_quotas import ClientQuotasImage
from tierlog.protocol.api import ApiKey


def _manager(entities, now=lambda: 0, **kw) -> ClientQuotaManager:
    m = ClientQuotaManager(2, 1, now, **kw)
    m.follow(ClientQuotasImage(entities))
    return m


def _produce(principal="User:alice", client_id="app"):
    return SimpleNamespace(api_key=ApiKey.PRODUCE, api_version=9, principal=principal, client_id=client_id)


def test_no_quota_no_throttle_and_a_user_quota_shared_by_its_client_ids():
    m = _manager({})
    assert not m.active and m.throttle(_produce(), {}, {}, 10_000, lambda: 0, 0) == 0
    m.follow(ClientQuotasImage({(("user", "alice"),): {"producer_byte_rate": 1000.0}}))
    assert m.active
    assert m.throttle(_produce(client_id="a"), {}, {}, 500, lambda: 0, 0) == 0
    assert m.throttle(_produce(client_id="b"), {}, {}, 1500, lambda: 0, 0) == 1000     # 2000/s over 1000/s
    assert m.throttle(_produce(principal="User:bob"), {}, {}, 1500, lambda: 0, 0) == 0  # no quota for bob
    families = {f.name: f for f in m.collect()}
    sample = families["kafka_server_produce_byte_rate"].samples[0]
    assert sample.labels == {"user": "alice", "client_id": ""} and sample.value == 2000.0


def test_a_removed_quota_stops_throttling():
    m = _manager({(("client-id", None),): {"request_percentage": 1.0}})
    assert m.throttle(_produce(), {}, {}, 0, lambda: 0, 50_000_000) > 0      # 50 ms of a 1 s window: 5 %
    m.follow(ClientQuotasImage({}))
    assert m.throttle(_produce(), {}, {}, 0, lambda: 0, 50_000_000) == 0


def test_controller_mutations_take_tokens_and_strict_ones_are_refused_below_zero():
    now = [0]
    m = _manager({(("client-id", "admin"),): {"controller_mutation_rate": 1.0}}, lambda: now[0], mutation_burst_s=2)
    header = _produce(client_id="admin")
    assert m.admit_mutations(header, [2, 2, 2], strict=True) == ([True, True, False], 2000)
    assert m.admit_mutations(header, [1], strict=False) == ([True], 3000)       # permissive: counted, never refused
    now[0] = 3000                                                              # refilled to 0: admitted again
    assert m.admit_mutations(header, [1], strict=True) == ([True], 1000)
    other = _produce(client_id="other")
    assert m.admit_mutations(other, [100], strict=True) == ([True], 0)
