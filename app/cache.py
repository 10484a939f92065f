"""A small in-process LRU cache of /backward answers, bounded in bytes.

The same program asked again (a lesson's examples, a class loading one shared link) is
answered from memory. A key is the digest of the whole request as canonical JSON (request_key), so
any field that changes the answer changes the key, and an entry costs its answer and 32 bytes however
long its program; keys count toward the bound too. Only successful answers are kept, and one entry
may take at most an eighth of the cache so a single huge graph cannot evict every lesson. Used only
from the event loop's thread, so it needs no lock.
"""

import hashlib
import json
from collections import OrderedDict


def request_key(*parts) -> bytes:
    """The cache key of a request made of JSON-able parts: their canonical JSON's SHA-256 (json.dumps
    escapes lone surrogates, so any program has one)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).digest()


class ResponseCache:
    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.size = 0  # bytes of the answers and keys kept
        self._entries: OrderedDict[bytes, bytes] = OrderedDict()

    def get(self, key: bytes) -> bytes | None:
        body = self._entries.get(key)
        if body is not None:
            self._entries.move_to_end(key)
        return body

    def put(self, key: bytes, body: bytes) -> None:
        size = len(key) + len(body)
        if size > self.max_bytes // 8 or key in self._entries:
            return
        self._entries[key] = body
        self.size += size
        while self.size > self.max_bytes:
            evicted_key, evicted = self._entries.popitem(last=False)
            self.size -= len(evicted_key) + len(evicted)

    def __len__(self) -> int:
        return len(self._entries)
