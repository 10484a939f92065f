"""gzip for the answers: the level every answer is compressed at, and a writer that compresses the columnar
answer while it is being written, on more than one core. The other answers go through the GZip middleware of
app.main, at the same level.

GzipWriter cuts what is written into blocks and deflates each in a worker thread as soon as it is full (zlib
lets go of the GIL as it works), as pigz does: each block starts from the 32 KiB written before it as its
dictionary and ends on a byte boundary (a sync flush), so the blocks joined in order are one deflate stream,
the same a single compressor would make but for a few bytes at each join. A big answer's gzip then runs beside
the making of its later sections and, after the last one, on every core rather than one
(docs/performance.md, "A big graph's first picture")."""

import os
import struct
import zlib
from concurrent.futures import Future

from engine.threads import Workers

# Level 2, not Starlette's 9: a 12,000-node trace (6.5 MB) compresses to 0.88 MB in ~25 ms at 2; level 1 is
# no faster and 8 % bigger, 3 and up are slower (docs/performance.md): the server's time is the scarcer.
LEVEL = 2
BLOCK_BYTES = 1 << 20  # what one worker deflates at a time: 1 MiB costs 5-10 ms at level 2
WINDOW_BYTES = 1 << 15  # deflate looks back this far: each block's dictionary
THREADS = min(4, os.cpu_count() or 1)
GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"  # deflate, no name, no time, unknown OS (RFC 1952)


def accepts_gzip(accept_encoding: str | None) -> bool:
    """Whether the client takes a gzip body, as the GZip middleware reads Accept-Encoding."""
    return accept_encoding is not None and "gzip" in accept_encoding


def _deflate(block, dictionary: bytes, last: bool, level: int) -> bytes:
    """One block as raw deflate: ended on a byte boundary, or, the last, the end of the stream."""
    with_dictionary = {"zdict": dictionary} if dictionary else {}  # the first block has none
    compressor = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS, **with_dictionary)
    return compressor.compress(block) + compressor.flush(zlib.Z_FINISH if last else zlib.Z_SYNC_FLUSH)


class GzipWriter:
    """A file-like sink: write(bytes) collects the answer and hands each full block to the workers; getvalue(),
    once the answer is written, the whole gzip member. Used as a context manager, so that blocks not yet
    started are dropped when writing fails."""

    def __init__(self, level: int = LEVEL):
        self._level = level
        self._pending = bytearray()  # written, not yet in a block
        self._window = b""  # the last WINDOW_BYTES handed to the workers
        self._blocks = []  # futures of the deflated blocks, in order
        self._crc = 0
        self._size = 0
        self._value = None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        for block in self._blocks:
            block.cancel()

    def write(self, piece) -> None:
        piece = memoryview(piece if type(piece) is bytes else bytes(piece))  # a memoryview's buffer may be reused
        self._crc = zlib.crc32(piece, self._crc)
        self._size += len(piece)
        if self._pending:  # the block begun by earlier pieces first
            taken = BLOCK_BYTES - len(self._pending)
            self._pending += piece[:taken]
            piece = piece[taken:]
            if len(self._pending) < BLOCK_BYTES:
                return
            self._hand_on(bytes(self._pending), last=False)
            self._pending = bytearray()
        while len(piece) >= BLOCK_BYTES:  # slices of the piece itself, not copies
            self._hand_on(piece[:BLOCK_BYTES], last=False)
            piece = piece[BLOCK_BYTES:]
        self._pending += piece

    def getvalue(self) -> bytes:
        if self._value is None:
            self._hand_on(bytes(self._pending), last=True)
            self._pending = bytearray()
            deflated = b"".join(block.result() for block in self._blocks)
            self._value = GZIP_HEADER + deflated + struct.pack("<II", self._crc, self._size & 0xFFFFFFFF)
        return self._value

    def _hand_on(self, block, last: bool) -> None:
        deflated = Future()
        _deflaters.put((deflated, (block, self._window, last, self._level)))
        self._blocks.append(deflated)
        self._window = (self._window + bytes(block[-WINDOW_BYTES:]))[-WINDOW_BYTES:]


def _deflate_blocks(blocks):
    while True:
        deflated, arguments = blocks.get()
        if deflated.set_running_or_notify_cancel():  # not dropped by a failed answer (GzipWriter.__exit__)
            try:
                deflated.set_result(_deflate(*arguments))
            except BaseException as error:
                deflated.set_exception(error)


# Started at import, never in a request's call, which the time budget may stop (engine.threads says why).
_deflaters = Workers("valuegraph gzip", _deflate_blocks, THREADS)
