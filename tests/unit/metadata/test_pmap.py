from hypothesis import given
from hypothesis import strategies as st

from tierlog.metadata.pmap import REMOVE, PMap


@given(st.lists(st.tuples(st.sampled_from(["set", "del"]),
                          st.one_of(st.integers(-50, 5000), st.text(max_size=3)),
                          st.integers())))
def test_behaves_like_dict(ops):
    m, d = PMap(), {}
    for op, k, v in ops:
        old = m
        m = m.set(k, v) if op == "set" else m.remove(k)
        if op == "set":
            d[k] = v
        else:
            d.pop(k, None)
        assert old is not m or op == "del"
    assert dict(m.items()) == d and len(m) == len(d) and set(m) == set(d)
    assert all(m[k] == v and k in m for k, v in d.items())
    assert sorted(m.values(), key=repr) == sorted(d.values(), key=repr)


def test_evolve_shares_untouched_buckets():
    m = PMap({i: i for i in range(10_000)})
    n = m.evolve({5: "x", 6: REMOVE})
    assert m[5] == 5 and n[5] == "x" and 6 not in n and 6 in m
    assert n.shares_bucket_with(m, 7) or (7 & (len(m._buckets) - 1)) in (5, 6)
    shared = sum(a is b for a, b in zip(m._buckets, n._buckets))
    assert shared >= len(m._buckets) - 2


def test_stable_iteration_order():
    a = PMap({f"t{i}": i for i in range(300)})
    b = PMap({f"t{i}": i for i in range(300)})
    assert list(a) == list(b) and a == b and a == {f"t{i}": i for i in range(300)}
