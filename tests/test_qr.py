"""The QR encoder (app/qr.py), read back by a small reader written here from the standard's
layout: format information, function patterns, the zigzag, Reed-Solomon checks, byte mode."""

import pytest

from app.qr import MAX_VERSION, TooLong, qr_matrix, qr_svg, rs_divisor, rs_remainder

# ISO/IEC 18004's alignment pattern centres for versions 2..10 (a table, not the formula app/qr.py uses).
ALIGNMENT = {
    2: [6, 18],
    3: [6, 22],
    4: [6, 26],
    5: [6, 30],
    6: [6, 34],
    7: [6, 22, 38],
    8: [6, 24, 42],
    9: [6, 26, 46],
    10: [6, 28, 50],
}
BLOCKS_M = {
    1: (1, 10),
    2: (1, 16),
    3: (1, 26),
    4: (2, 18),
    5: (2, 24),
    6: (4, 16),
    7: (4, 18),
    8: (4, 22),
    9: (5, 22),
    10: (5, 26),
}
MASKS = [
    lambda x, y: (x + y) % 2 == 0,
    lambda x, y: y % 2 == 0,
    lambda x, y: x % 3 == 0,
    lambda x, y: (x + y) % 3 == 0,
    lambda x, y: (x // 3 + y // 2) % 2 == 0,
    lambda x, y: x * y % 2 + x * y % 3 == 0,
    lambda x, y: (x * y % 2 + x * y % 3) % 2 == 0,
    lambda x, y: ((x + y) % 2 + x * y % 3) % 2 == 0,
]


def test_reed_solomon_matches_the_worked_example_of_hello_world_1_m():
    data = [32, 91, 11, 120, 209, 114, 220, 77, 67, 64, 236, 17, 236, 17, 236, 17]
    assert rs_remainder(data, rs_divisor(10)) == [196, 35, 39, 119, 235, 215, 231, 226, 93, 23]


def format_word(level_bits: int, mask: int) -> int:
    data = level_bits << 3 | mask
    remainder = data << 10
    for bit in range(14, 9, -1):
        if remainder >> bit & 1:
            remainder ^= 0b10100110111 << (bit - 10)
    return (data << 10 | remainder) ^ 0b101010000010010


def function_modules(version: int) -> set[tuple[int, int]]:
    size = 4 * version + 17
    taken = set()
    for x0, y0 in ((0, 0), (size - 8, 0), (0, size - 8)):  # finders, separators
        taken |= {(x, y) for x in range(x0, x0 + 8) for y in range(y0, y0 + 8)}
    taken |= {(6, i) for i in range(size)} | {(i, 6) for i in range(size)}
    taken |= {(8, i) for i in range(9)} | {(i, 8) for i in range(9)}  # format, first copy
    taken |= {(size - 1 - i, 8) for i in range(8)} | {(8, size - 1 - i) for i in range(8)}  # second copy, dark module
    centres = ALIGNMENT.get(version, [])
    for cx in centres:
        for cy in centres:
            if (cx, cy) in ((6, 6), (6, centres[-1]), (centres[-1], 6)):
                continue
            taken |= {(cx + dx, cy + dy) for dx in range(-2, 3) for dy in range(-2, 3)}
    if version >= 7:
        taken |= {(size - 11 + i % 3, i // 3) for i in range(18)} | {(i // 3, size - 11 + i % 3) for i in range(18)}
    return taken


def gf_power_table():
    exp, value = [], 1
    for _ in range(255):
        exp.append(value)
        value <<= 1
        if value & 0x100:
            value ^= 0x11D
    return exp


def gf_mul(a, b, exp=gf_power_table()):
    if a == 0 or b == 0:
        return 0
    return exp[(exp.index(a) + exp.index(b)) % 255]


def read(matrix) -> str:
    size = len(matrix)
    version = (size - 17) // 4
    dark = lambda x, y: matrix[y][x]  # noqa: E731
    # Format information, first copy, bits 14..0.
    positions = [(8, i) for i in range(6)] + [(8, 7), (8, 8), (7, 8)] + [(14 - i, 8) for i in range(9, 15)]
    word = sum(dark(x, y) << i for i, (x, y) in enumerate(positions))
    second = [(size - 1 - i, 8) for i in range(8)] + [(8, size - 15 + i) for i in range(8, 15)]
    assert word == sum(dark(x, y) << i for i, (x, y) in enumerate(second)), "the two format copies differ"
    (mask,) = [m for m in range(8) if format_word(0b00, m) == word]  # level M
    assert matrix[size - 8][8], "the dark module"
    for x0, y0 in ((0, 0), (size - 7, 0), (0, size - 7)):
        ring = [matrix[y0 + d][x0] for d in range(7)]
        assert ring == [True] * 7, "a finder pattern's edge"
    taken = function_modules(version)
    bits = []
    right = size - 1
    while right >= 1:
        if right == 6:
            right = 5
        upward = (right + 1) & 2 == 0
        for vertical in range(size):
            y = size - 1 - vertical if upward else vertical
            for x in (right, right - 1):
                if (x, y) not in taken:
                    bits.append(dark(x, y) ^ MASKS[mask](x, y))
        right -= 2
    codewords = [int("".join("1" if b else "0" for b in bits[i : i + 8]), 2) for i in range(0, len(bits) - 7, 8)]
    blocks_count, ecc = BLOCKS_M[version]
    total = len(codewords)
    short = total // blocks_count
    long_blocks = total % blocks_count
    lengths = [short + (1 if i >= blocks_count - long_blocks else 0) for i in range(blocks_count)]
    blocks = [[] for _ in range(blocks_count)]
    stream = iter(codewords)
    for i in range(max(lengths) - ecc):  # data bytes, interleaved
        for b in range(blocks_count):
            if i < lengths[b] - ecc:
                blocks[b].append(next(stream))
    for i in range(ecc):
        for b in range(blocks_count):
            blocks[b].append(next(stream))
    exp = gf_power_table()
    data = []
    for block in blocks:
        for k in range(ecc):  # every syndrome is zero
            value = 0
            for byte in block:
                value = gf_mul(value, exp[k]) ^ byte
            assert value == 0, "a Reed-Solomon syndrome is not zero"
        data += block[: len(block) - ecc]
    stream_bits = "".join(f"{byte:08b}" for byte in data)
    assert stream_bits[:4] == "0100", "byte mode"
    count_bits = 8 if version <= 9 else 16
    length = int(stream_bits[4 : 4 + count_bits], 2)
    start = 4 + count_bits
    return bytes(int(stream_bits[start + 8 * i : start + 8 * i + 8], 2) for i in range(length)).decode("utf-8")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "A",
        "http://127.0.0.1:8000/?room=K7MP-Q2XR",
        "https://valuegraph.example.org/embed?room=K7MP-Q2XR&theme=dark",
        "é∂" * 20,
        "x" * 120,
        "y" * 213,
    ],
)
def test_what_is_encoded_reads_back(text):
    matrix = qr_matrix(text)
    assert len(matrix) == len(matrix[0]) and (len(matrix) - 17) % 4 == 0
    assert read(matrix) == text


def test_the_smallest_version_is_chosen_and_the_limit_is_clear():
    assert len(qr_matrix("x" * 14)) == 21  # version 1 at level M holds 14 bytes
    assert len(qr_matrix("x" * 15)) == 25
    assert len(qr_matrix("x" * 213)) == 4 * MAX_VERSION + 17
    with pytest.raises(TooLong, match="214 bytes do not fit a version 10 QR code"):
        qr_matrix("x" * 214)


def test_the_svg_has_one_square_per_dark_module_and_no_text():
    text = "http://127.0.0.1:8000/?room=K7MP-Q2XR"
    svg = qr_svg(text)
    assert svg.count("h1v1h-1z") == sum(map(sum, qr_matrix(text)))
    assert "room" not in svg and 'viewBox="0 0 37 37"' in svg  # version 3 (29 modules) and the quiet zone


@pytest.mark.anyio
async def test_the_room_qr_is_its_join_link(client):
    room = (await client.post("/rooms", json={"state": {"expression": "a = 2; b = a * a"}})).json()
    answer = await client.get(room["qr_svg_url"])
    assert answer.status_code == 200 and answer.headers["content-type"] == "image/svg+xml"
    assert answer.text == qr_svg(room["join_url"])
    assert (await client.get("/rooms/K7MP-Q2XR/qr.svg")).status_code == 404
    assert (await client.get("/rooms/nope/qr.svg")).json()["detail"]["message"].startswith("a room code is 8 letters")
