"""A small in-process LRU cache of /backward answers, bounded in bytes.

The same program asked again (a lesson's examples, a class loading one shared link) is
answered from memory. Keys are the whole request as canonical JSON, so any field that changes the
answer changes the key; only successful answers are kept, and one answer may take at most an
eighth of the cache so a single huge graph cannot evict every lesson. Used only from the
event loop's thread, so it needs no lock.
"""

from collections import OrderedDict


class ResponseCache:
    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.size = 0
        self._entries: OrderedDict[str, bytes] = OrderedDict()

    def get(self, key: str) -> bytes | None:
        body = self._entries.get(key)
        if body is not None:
            self._entries.move_to_end(key)
        return body

    def put(self, key: str, body: bytes) -> None:
        if len(body) > self.max_bytes // 8 or key in self._entries:
            return
        self._entries[key] = body
        self.size += len(body)
        while self.size > self.max_bytes:
            _, evicted = self._entries.popitem(last=False)
            self.size -= len(evicted)

    def __len__(self) -> int:
        return len(self._entries)
