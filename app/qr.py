"""QR codes (ISO/IEC 18004) for the Teach live join link: byte mode, error correction level M,
versions 1 to 10 (up to 213 bytes; a join link is about 40). Written here rather than vendored:
the whole encoder is this file, and the server draws the code so the page needs no library.

The steps: the text's bits with mode, length and padding; split into blocks, each followed by
its Reed-Solomon check bytes over GF(256); interleaved; laid in the zigzag around the finder,
timing and alignment patterns; masked with the mask of least penalty; format (and from version 7
version) information written last.
"""

MAX_VERSION = 10
# Level M, versions 1..10: check bytes per block, and blocks.
ECC_PER_BLOCK = (10, 16, 26, 18, 24, 16, 18, 22, 22, 26)
BLOCKS = (1, 1, 1, 2, 2, 4, 4, 4, 5, 5)
FORMAT_LEVEL_M = 0b00
QUIET_ZONE = 4

MASKS = (
    lambda x, y: (x + y) % 2 == 0,
    lambda x, y: y % 2 == 0,
    lambda x, y: x % 3 == 0,
    lambda x, y: (x + y) % 3 == 0,
    lambda x, y: (x // 3 + y // 2) % 2 == 0,
    lambda x, y: x * y % 2 + x * y % 3 == 0,
    lambda x, y: (x * y % 2 + x * y % 3) % 2 == 0,
    lambda x, y: ((x + y) % 2 + x * y % 3) % 2 == 0,
)


class TooLong(ValueError):
    pass


def gf_multiply(x: int, y: int) -> int:
    """Product in GF(2^8) modulo x^8 + x^4 + x^3 + x^2 + 1 (0x11D)."""
    z = 0
    for i in reversed(range(8)):
        z = (z << 1) ^ ((z >> 7) * 0x11D)
        z ^= ((y >> i) & 1) * x
    return z


def rs_divisor(degree: int) -> list[int]:
    """The generator polynomial (x - 2^0)(x - 2^1)...(x - 2^(degree-1)), leading 1 dropped."""
    result = [0] * (degree - 1) + [1]
    root = 1
    for _ in range(degree):
        for j in range(degree):
            result[j] = gf_multiply(result[j], root)
            if j + 1 < degree:
                result[j] ^= result[j + 1]
        root = gf_multiply(root, 0x02)
    return result


def rs_remainder(data: list[int], divisor: list[int]) -> list[int]:
    result = [0] * len(divisor)
    for byte in data:
        factor = byte ^ result.pop(0)
        result.append(0)
        for i, coefficient in enumerate(divisor):
            result[i] ^= gf_multiply(coefficient, factor)
    return result


def raw_codewords(version: int) -> int:
    """Bytes the symbol holds once the function patterns are drawn."""
    modules = (16 * version + 128) * version + 64
    if version >= 2:
        aligns = version // 7 + 2
        modules -= (25 * aligns - 10) * aligns - 55
        if version >= 7:
            modules -= 36
    return modules // 8


def data_codewords(version: int) -> int:
    return raw_codewords(version) - ECC_PER_BLOCK[version - 1] * BLOCKS[version - 1]


def alignment_positions(version: int) -> list[int]:
    if version == 1:
        return []
    aligns = version // 7 + 2
    step = (version * 8 + aligns * 3 + 5) // (aligns * 4 - 4) * 2
    size = version * 4 + 17
    return [6] + sorted(size - 7 - i * step for i in range(aligns - 1))


def _data_bits(payload: bytes, version: int) -> list[int]:
    bits: list[int] = []

    def put(value: int, length: int):
        bits.extend((value >> i) & 1 for i in reversed(range(length)))

    put(0b0100, 4)  # byte mode
    put(len(payload), 8 if version <= 9 else 16)
    for byte in payload:
        put(byte, 8)
    capacity = data_codewords(version) * 8
    put(0, min(4, capacity - len(bits)))
    put(0, -len(bits) % 8)
    pad = 0xEC
    while len(bits) < capacity:
        put(pad, 8)
        pad ^= 0xEC ^ 0x11
    return bits


def _codewords(payload: bytes, version: int) -> list[int]:
    bits = _data_bits(payload, version)
    data = [int("".join(map(str, bits[i : i + 8])), 2) for i in range(0, len(bits), 8)]
    blocks_count, ecc = BLOCKS[version - 1], ECC_PER_BLOCK[version - 1]
    raw = raw_codewords(version)
    short_blocks = blocks_count - raw % blocks_count
    short_length = raw // blocks_count
    divisor = rs_divisor(ecc)
    blocks, k = [], 0
    for i in range(blocks_count):
        block = data[k : k + short_length - ecc + (0 if i < short_blocks else 1)]
        k += len(block)
        check = rs_remainder(block, divisor)
        if i < short_blocks:
            block.append(0)  # a placeholder, skipped when interleaving
        blocks.append(block + check)
    result = []
    for i in range(len(blocks[0])):
        for j, block in enumerate(blocks):
            if i != short_length - ecc or j >= short_blocks:
                result.append(block[i])
    return result


class _Symbol:
    def __init__(self, version: int):
        self.version = version
        self.size = version * 4 + 17
        self.dark = [[False] * self.size for _ in range(self.size)]
        self.function = [[False] * self.size for _ in range(self.size)]
        self._draw_function_patterns()

    def set_function(self, x: int, y: int, dark: bool):
        self.dark[y][x] = dark
        self.function[y][x] = True

    def _draw_function_patterns(self):
        size = self.size
        for i in range(size):
            self.set_function(6, i, i % 2 == 0)
            self.set_function(i, 6, i % 2 == 0)
        for cx, cy in ((3, 3), (size - 4, 3), (3, size - 4)):
            for dy in range(-4, 5):
                for dx in range(-4, 5):
                    x, y = cx + dx, cy + dy
                    if 0 <= x < size and 0 <= y < size:
                        self.set_function(x, y, max(abs(dx), abs(dy)) not in (2, 4))
        positions = alignment_positions(self.version)
        last = len(positions) - 1
        for i, ax in enumerate(positions):
            for j, ay in enumerate(positions):
                if (i, j) in ((0, 0), (0, last), (last, 0)):
                    continue  # the finder patterns are there
                for dy in range(-2, 3):
                    for dx in range(-2, 3):
                        self.set_function(ax + dx, ay + dy, max(abs(dx), abs(dy)) != 1)
        self.draw_format(0)  # reserves the modules; the real bits come after masking
        if self.version >= 7:
            remainder = self.version
            for _ in range(12):
                remainder = (remainder << 1) ^ ((remainder >> 11) * 0x1F25)
            bits = self.version << 12 | remainder
            for i in range(18):
                dark = (bits >> i) & 1 == 1
                a, b = size - 11 + i % 3, i // 3
                self.set_function(a, b, dark)
                self.set_function(b, a, dark)

    def draw_format(self, mask: int):
        data = FORMAT_LEVEL_M << 3 | mask
        remainder = data
        for _ in range(10):
            remainder = (remainder << 1) ^ ((remainder >> 9) * 0x537)
        bits = (data << 10 | remainder) ^ 0x5412
        bit = lambda i: (bits >> i) & 1 == 1  # noqa: E731
        size = self.size
        for i in range(6):
            self.set_function(8, i, bit(i))
        self.set_function(8, 7, bit(6))
        self.set_function(8, 8, bit(7))
        self.set_function(7, 8, bit(8))
        for i in range(9, 15):
            self.set_function(14 - i, 8, bit(i))
        for i in range(8):
            self.set_function(size - 1 - i, 8, bit(i))
        for i in range(8, 15):
            self.set_function(8, size - 15 + i, bit(i))
        self.set_function(8, size - 8, True)  # the dark module

    def draw_codewords(self, codewords: list[int]):
        size, i, total = self.size, 0, len(codewords) * 8
        right = size - 1
        while right >= 1:
            if right == 6:
                right = 5  # the vertical timing pattern
            upward = (right + 1) & 2 == 0
            for vertical in range(size):
                y = size - 1 - vertical if upward else vertical
                for x in (right, right - 1):
                    if not self.function[y][x] and i < total:
                        self.dark[y][x] = (codewords[i >> 3] >> (7 - (i & 7))) & 1 == 1
                        i += 1
            right -= 2

    def apply_mask(self, mask: int):
        test = MASKS[mask]
        for y in range(self.size):
            for x in range(self.size):
                if not self.function[y][x] and test(x, y):
                    self.dark[y][x] = not self.dark[y][x]

    def penalty(self) -> int:
        """The standard's rules 1 (runs of five or more), 2 (2x2 blocks) and 4 (balance);
        rule 3 (finder-like runs) is left out: it only breaks ties between good masks."""
        size, score = self.size, 0
        lines = self.dark + [list(column) for column in zip(*self.dark)]
        for line in lines:
            run = 1
            for a, b in zip(line, line[1:]):
                if a == b:
                    run += 1
                else:
                    score += run - 2 if run >= 5 else 0
                    run = 1
            score += run - 2 if run >= 5 else 0
        for y in range(size - 1):
            for x in range(size - 1):
                if self.dark[y][x] == self.dark[y][x + 1] == self.dark[y + 1][x] == self.dark[y + 1][x + 1]:
                    score += 3
        dark = sum(map(sum, self.dark))
        score += abs(dark * 20 - size * size * 10) // (size * size) * 10
        return score


def qr_matrix(text: str) -> list[list[bool]]:
    """The modules of the smallest symbol holding `text` (UTF-8), True for dark; TooLong past version 10."""
    payload = text.encode("utf-8")
    for version in range(1, MAX_VERSION + 1):
        if 4 + (8 if version <= 9 else 16) + 8 * len(payload) <= data_codewords(version) * 8:
            break
    else:
        raise TooLong(f"{len(payload)} bytes do not fit a version {MAX_VERSION} QR code at level M")
    codewords = _codewords(payload, version)
    best = None
    for mask in range(len(MASKS)):
        symbol = _Symbol(version)
        symbol.draw_codewords(codewords)
        symbol.apply_mask(mask)
        symbol.draw_format(mask)
        score = symbol.penalty()
        if best is None or score < best[0]:
            best = (score, symbol)
    return best[1].dark


def qr_svg(text: str) -> str:
    """An SVG of the code with its quiet zone, one path; no text from `text` is written into it."""
    matrix = qr_matrix(text)
    extent = len(matrix) + 2 * QUIET_ZONE
    path = "".join(
        f"M{x + QUIET_ZONE} {y + QUIET_ZONE}h1v1h-1z"
        for y, row in enumerate(matrix)
        for x, dark in enumerate(row)
        if dark
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {extent} {extent}" role="img" aria-label="QR code of '
        f'the join link" shape-rendering="crispEdges"><rect width="{extent}" height="{extent}" fill="#fff"/><path '
        f'd="{path}" fill="#000"/></svg>'
    )
