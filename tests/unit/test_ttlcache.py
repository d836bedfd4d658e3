"""core/ttlcache.py: values expire after their ttl (an injected clock), and a full cache makes room by
dropping its least recently used entry, never everything at once."""

from __future__ import annotations

from chalicelib.core.ttlcache import TtlCache


def test_values_expire_after_the_ttl_and_can_be_dropped() -> None:
    cache: TtlCache[str, int] = TtlCache(5)
    cache.put("a", 1, now=100)
    assert cache.get("a", 104.99) == 1
    assert cache.get("a", 105) is None and len(cache) == 0
    cache.put("b", 2, now=100)
    cache.drop("b")
    assert cache.get("b", 100) is None
    off: TtlCache[str, int] = TtlCache(0)
    off.put("a", 1, now=100)
    assert off.get("a", 100) is None


def test_a_full_cache_drops_the_least_recently_used_entry() -> None:
    cache: TtlCache[int, int] = TtlCache(60, max_items=3)
    for key in (1, 2, 3):
        cache.put(key, key, now=0)
    assert cache.get(1, 1) == 1  # 1 is used again: 2 is now the least recently used
    cache.put(4, 4, now=2)
    assert len(cache) == 3
    assert [cache.get(key, 3) for key in (1, 2, 3, 4)] == [1, None, 3, 4]
    for key in range(100, 1000):  # a flood of new keys stays within the bound
        cache.put(key, key, now=4)
    assert len(cache) == 3 and cache.get(999, 5) == 999
    cache.put(999, -1, now=5)  # a put of a present key replaces it, without evicting another
    assert len(cache) == 3 and cache.get(999, 5) == -1 and cache.get(998, 5) == 998
