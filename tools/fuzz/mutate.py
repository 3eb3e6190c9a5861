"""Mutations for the reader fuzzer: byte-level (any format), number-aware (text fields) and
container-aware (zip members re-packed, so mutations reach the inflated content past the CRC)."""

from __future__ import annotations

import io
import random
import re
import zipfile

_INTERESTING = (b"\x00", b"\xff", b"\x7f", b"\x80", b"\x00\x00\x00\x80", b"\xff\xff\xff\xff",
                b"\x00\x00\x00\x00\x00\x00\xf0\x7f", b"\x00\x00\x00\x00\x00\x00\xf0\xff",  # +-inf
                b"\x01\x00\x00\x00\x00\x00\xf8\x7f", b"\xb0\xd8\xff\xff\xff\xff\xef\xff")  # nan, -1e308
_NUMBERS = (b"0", b"-1", b"255", b"256", b"65536", b"4294967296", b"18446744073709551616",
            b"9223372036854775808", b"-9223372036854775809", b"1e308", b"nan", b"inf", b"-0",
            b"9" * 25, b"9" * 5000, b"0." + b"9" * 40, b"1" + b"0" * 30 + b" GHz")
_DIGITS = re.compile(rb"[-+]?\d+(?:\.\d+)?")


def _bytes_mutation(data: bytearray, rnd: random.Random) -> None:
    n = len(data)
    op = rnd.randrange(9)
    if n == 0:
        data += rnd.randbytes(rnd.randint(1, 16))
        return
    i = rnd.randrange(n)
    if op == 0:  # bit flip
        data[i] ^= 1 << rnd.randrange(8)
    elif op == 1:  # random byte(s)
        k = rnd.randint(1, 8)
        data[i:i + k] = rnd.randbytes(k)
    elif op == 2:  # interesting value overwrite
        v = rnd.choice(_INTERESTING)
        data[i:i + len(v)] = v
    elif op == 3:  # truncate (the commonest real damage)
        del data[rnd.randrange(n):]
    elif op == 4:  # delete a run
        del data[i:i + rnd.randint(1, 64)]
    elif op == 5:  # insert random bytes
        data[i:i] = rnd.randbytes(rnd.randint(1, 32))
    elif op == 6:  # duplicate a run
        k = rnd.randint(1, 256)
        data[i:i] = data[i:i + k]
    elif op == 7:  # arithmetic on a byte
        data[i] = (data[i] + rnd.choice((1, -1, 16, -16, 128))) & 0xFF
    else:  # zero a run
        k = rnd.randint(1, 64)
        data[i:i + k] = bytes(len(data[i:i + k]))


def _number_mutation(data: bytearray, rnd: random.Random) -> bool:
    """Replace one decimal number of a text region with an extreme one; False if none found."""
    head = bytes(data[:1 << 16])
    spans = [m.span() for m in _DIGITS.finditer(head)]
    if not spans:
        return False
    a, b = rnd.choice(spans)
    data[a:b] = rnd.choice(_NUMBERS)
    return True


def mutate_bytes(seed: bytes, rnd: random.Random, text: bool) -> bytes:
    data = bytearray(seed)
    for _ in range(rnd.choice((1, 1, 1, 2, 3, 6))):
        if text and rnd.random() < 0.35 and _number_mutation(data, rnd):
            continue
        _bytes_mutation(data, rnd)
    return bytes(data)


def mutate_zip(seed: bytes, rnd: random.Random) -> bytes:
    """Mutate one member's content (or the member list) and re-pack; raw bytes otherwise."""
    try:
        with zipfile.ZipFile(io.BytesIO(seed)) as z:
            if sum(i.file_size for i in z.infolist()) > 2 << 20:  # re-packing would dominate
                return mutate_bytes(seed, rnd, text=False)
            members = [(i.filename, z.read(i)) for i in z.infolist()]
    except Exception:  # noqa: BLE001 - a damaged seed: mutate its bytes instead
        return mutate_bytes(seed, rnd, text=False)
    if not members:
        return mutate_bytes(seed, rnd, text=False)
    op = rnd.randrange(10)
    if op == 0 and len(members) > 1:  # drop a member
        del members[rnd.randrange(len(members))]
    elif op == 1:  # reorder (e.g. metadata after the logic data)
        rnd.shuffle(members)
    elif op == 2:  # rename a member
        k = rnd.randrange(len(members))
        name = members[k][0]
        members[k] = (name + rnd.choice(("-1", "-0", "-" + "9" * 30, "x", "")), members[k][1])
    elif op == 3:  # a huge, highly compressible member (edge bomb)
        k = rnd.randrange(len(members))
        pat = rnd.choice((b"\x00\x01", b"\x55", b"\x00\xff\x00\xff", b"\x00"))
        members[k] = (members[k][0], pat * rnd.choice((1 << 10, 1 << 14, 1 << 16, 1 << 19)))
    else:  # mutate one member's content
        k = rnd.randrange(len(members))
        name, content = members[k]
        members[k] = (name, mutate_bytes(content, rnd, text=_is_text(content)))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", rnd.choice((zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED))) as z:
        for name, content in members:
            z.writestr(name, content)
    out = buf.getvalue()
    if rnd.random() < 0.3:  # damage the container too (truncation, flipped bytes)
        out = mutate_bytes(out, rnd, text=False)
    return out


def _is_text(b: bytes) -> bool:
    head = b[:512]
    return bool(head) and sum(32 <= c < 127 or c in (9, 10, 13) for c in head) > 0.9 * len(head)


def mutate(seed: bytes, rnd: random.Random, splice: bytes | None = None) -> bytes:
    if seed[:4] == b"PK\x03\x04" and rnd.random() < 0.8:
        return mutate_zip(seed, rnd)
    out = mutate_bytes(seed, rnd, text=_is_text(seed))
    if splice and rnd.random() < 0.05:  # splice with another seed of the same format
        a, b = rnd.randrange(len(out) + 1), rnd.randrange(len(splice) + 1)
        out = out[:a] + splice[b:]
    return out
