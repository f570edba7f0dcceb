#!/usr/bin/env python3
"""Writes small hand-made GGUF seeds (valid and hostile) into the directory given."""
import struct
import sys


def s(text):
    b = text.encode()
    return struct.pack("<Q", len(b)) + b


def header(n_tensors, n_kv, version=3):
    return b"GGUF" + struct.pack("<IQQ", version, n_tensors, n_kv)


def kv_u32(key, v):
    return s(key) + struct.pack("<II", 4, v)


def tensor(name, ne, ttype, offset):
    return s(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne) + struct.pack("<IQ", ttype, offset)


def pad(b, align=32):
    return b + b"\0" * ((-len(b)) % align)


def arr(elem, items_bytes, n):
    return struct.pack("<IIQ", 9, elem, n) + items_bytes


SEEDS = {
    "empty-valid": header(0, 0),
    "kv-types": header(0, 5) + kv_u32("a", 1) + s("b") + struct.pack("<If", 6, 1.5)
    + s("c") + struct.pack("<I", 8) + s("str") + s("d") + arr(8, s("x") + s("yy"), 2)
    + s("e") + arr(9, arr(0, b"\1\2", 2) * 2, 2),
    "one-tensor-f32": pad(header(1, 1) + kv_u32("general.alignment", 32) + tensor("w", [8], 0, 0)) + b"\0" * 32,
    "q8-q4k": pad(header(2, 0) + tensor("q8", [32, 2], 8, 0) + tensor("q4k", [256], 12, 96)) + b"\1" * 240,
    "overlap": pad(header(2, 0) + tensor("a", [64], 0, 0) + tensor("b", [8], 0, 32)) + b"\0" * 256,
    "bad-version": header(0, 0, 1),
    "huge-count": header(1 << 60, 1 << 60),
    "deep": header(0, 1) + s("deep") + struct.pack("<I", 9) + struct.pack("<IQ", 9, 1) * 9 + struct.pack("<IQB", 0, 1, 7),
    "bad-type": pad(header(1, 0) + tensor("w", [32], 4, 0)) + b"\0" * 64,
    "misaligned": pad(header(1, 0) + tensor("w", [8], 0, 4)) + b"\0" * 64,
}

if __name__ == "__main__":
    for name, data in SEEDS.items():
        with open("%s/seed-%s.gguf" % (sys.argv[1], name), "wb") as f:
            f.write(data)
