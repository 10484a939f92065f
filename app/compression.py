"""gzip for the answers: the level every answer is compressed at, and a writer that compresses the columnar
answer while it is being written. Each section goes to a thread of its own that compresses it (zlib lets go of
the GIL as it works), so a big answer's gzip runs beside the making of its later sections rather than after
the last one (docs/performance.md, "A big graph's first picture"); the other answers go through the GZip
middleware of app.main, at the same level."""

import queue
import threading
import zlib

# Level 2, not Starlette's 9: a 12,000-node trace (6.5 MB) compresses to 0.88 MB in ~25 ms at 2; level 1 is
# no faster and 8 % bigger, 3 and up are slower (docs/performance.md): the server's time is the scarcer.
LEVEL = 2


def accepts_gzip(accept_encoding: str | None) -> bool:
    """Whether the client takes a gzip body, as the GZip middleware reads Accept-Encoding."""
    return accept_encoding is not None and "gzip" in accept_encoding


class GzipWriter:
    """A file-like sink: write(bytes) hands each piece to the compressing thread; getvalue(), once the
    answer is written, the whole gzip member. Used as a context manager, so that the thread ends
    even when writing fails."""

    def __init__(self, level: int = LEVEL):
        self._pieces = queue.SimpleQueue()
        self._compressed = []
        compressor = zlib.compressobj(level, zlib.DEFLATED, 16 + zlib.MAX_WBITS)  # 16+: a gzip header
        self._thread = threading.Thread(target=self._compress, args=(compressor,), name="valuegraph gzip", daemon=True)
        self._thread.start()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self._finish()

    def write(self, piece) -> None:
        self._pieces.put(piece if type(piece) is bytes else bytes(piece))  # a memoryview's buffer may be reused

    def getvalue(self) -> bytes:
        self._finish()
        return b"".join(self._compressed)

    def _finish(self):
        if self._thread.is_alive():
            self._pieces.put(None)
            self._thread.join()

    def _compress(self, compressor):
        while (piece := self._pieces.get()) is not None:
            self._compressed.append(compressor.compress(piece))
        self._compressed.append(compressor.flush())
