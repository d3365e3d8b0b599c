"""Connected components and edge deduplication of the cluster stage (sort-based, no scipy)."""
import numpy as np

from dataaudit.dedup import components, unique_edges
from dataaudit.dedup.clusters import min_roots, sorted_unique


def _reference_labels(src, dst):
    """Union-find in Python: nodes sorted, labels numbered by each component's smallest node."""
    parent = {}

    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            x = parent[x]
        return x

    for a, b in zip(src.tolist(), dst.tolist()):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    nodes = sorted(parent)
    roots = sorted({find(x) for x in nodes})
    return nodes, [roots.index(find(x)) for x in nodes]


def test_components_of_a_scrambled_chain_and_small_groups():
    chain = [9, 3, 7, 1, 5, 0, 8, 2, 6, 4]                # one path that needs several hooking rounds
    src = np.array(chain[:-1] + [21, 30], np.int64)
    dst = np.array(chain[1:] + [20, 15], np.int64)
    nodes, labels = components(src, dst)
    assert nodes.tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 20, 21, 30]
    assert labels.tolist() == [0] * 10 + [1, 2, 2, 1]


def test_min_roots_point_at_each_components_smallest_node():
    a = np.array([4, 3, 6], np.int64)
    b = np.array([3, 1, 5], np.int64)
    assert min_roots(a, b, 7).tolist() == [0, 1, 2, 1, 1, 5, 5]


def test_components_equal_union_find_on_random_graphs():
    rng = np.random.default_rng(7)
    for _ in range(20):
        n = int(rng.integers(2, 200))
        src = rng.integers(0, n, n) * 3
        dst = rng.integers(0, n, n) * 3
        nodes, labels = components(src, dst)
        ref_nodes, ref_labels = _reference_labels(src, dst)
        assert nodes.tolist() == ref_nodes and labels.tolist() == ref_labels


def test_unique_edges_beyond_2_to_31_and_sorted_unique():
    big = 2 ** 40
    s, d = unique_edges(np.array([big, 5, 5, 7]), np.array([5, big, 7, 5]))
    assert list(zip(s.tolist(), d.tolist())) == [(5, 7), (5, big)]
    assert sorted_unique(np.array([3, 1, 3, 2, 1])).tolist() == [1, 2, 3]
    assert sorted_unique(np.zeros(0, np.int64)).tolist() == []


def test_key_order_is_the_stable_argsort():
    """The reduce stage's sort of band keys: equal keys in index order, as np.argsort(kind="stable") gives, on
    inputs with no, few and mostly equal keys."""
    from dataaudit.dedup.lsh import key_order

    rng = np.random.default_rng(3)
    assert key_order(np.array([7, 3, 7, 3, 9, 7], np.uint64)).tolist() == [1, 3, 0, 2, 5, 4]
    for n, high in ((0, 5), (1, 5), (2, 1), (3, 1), (1000, 3), (1000, 50), (50_000, 2**63)):
        keys = rng.integers(0, high, n, dtype=np.uint64)
        if n > 100 and high > 50:
            keys[rng.integers(0, n, n // 10)] = keys[rng.integers(0, n, n // 10)]     # some runs among hashes
        np.testing.assert_array_equal(key_order(keys), np.argsort(keys, kind="stable"))
