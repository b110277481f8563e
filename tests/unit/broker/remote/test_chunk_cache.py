"""The remote chunk cache: one GET per chunk, a second reader makes none, bounded size, no duplicate GETs."""
import threading

from tierlog.tiered.chunk_cache import ChunkCache

DATA = bytes(range(256)) * 40          # 10240 bytes


class Store:
    def __init__(self):
        self.gets = []
        self.gate = None

    def fetch(self, a, b):
        self.gets.append((a, b))
        if self.gate is not None:
            self.gate.wait(5)
        return DATA[a:b]


def test_ranges_across_chunks_read_back_exactly(tmp_path):
    cache, store = ChunkCache(tmp_path / "c", chunk_size=1000, max_bytes=10**6), Store()
    assert cache.read("k", 950, 2100, store.fetch) == DATA[950:2100]
    assert store.gets == [(0, 1000), (1000, 2000), (2000, 3000)]
    assert cache.read("k", 10000, 10300, store.fetch) == DATA[10000:10240]       # past the end: fewer


def test_a_second_reader_makes_no_get(tmp_path):
    cache, store = ChunkCache(tmp_path / "c", chunk_size=1000, max_bytes=10**6), Store()
    first = cache.read("k", 0, len(DATA), store.fetch)
    gets = len(store.gets)
    cache._hot.clear()
    assert cache.read("k", 0, len(DATA), store.fetch) == first == DATA
    assert len(store.gets) == gets
    stats = cache.stats()
    assert stats["gets"] == gets == stats["chunk_misses"] and stats["chunk_hits"] == gets


def test_the_cache_stays_within_its_size(tmp_path):
    cache, store = ChunkCache(tmp_path / "c", chunk_size=1000, max_bytes=3000), Store()
    cache.read("k", 0, len(DATA), store.fetch)
    on_disk = sum(p.stat().st_size for p in (tmp_path / "c").iterdir())
    assert on_disk <= 3000
    assert cache.holds("k", 10) and not cache.holds("k", 0)      # the oldest went first


def test_two_threads_asking_for_one_chunk_make_one_get(tmp_path):
    cache, store = ChunkCache(tmp_path / "c", chunk_size=1000, max_bytes=10**6), Store()
    store.gate = threading.Event()
    results = []
    threads = [threading.Thread(target=lambda: results.append(cache.read("k", 0, 10, store.fetch)))
               for _ in range(2)]
    for t in threads:
        t.start()
    while not store.gets:
        threading.Event().wait(0.01)
    store.gate.set()
    for t in threads:
        t.join(5)
    assert results == [DATA[:10], DATA[:10]] and store.gets == [(0, 1000)]
