#!/usr/bin/env python3
"""Writes small hand-made seeds into the directory given: GGUF files (valid and hostile) by
default, or with --text the inputs of text_fuzz (flags byte, chunk byte, then text or ids)."""
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

# text_fuzz: byte 0 flags (1 add_special, 2 parse_special, 4 render_special, 8 reasoning,
# 16 tool calls, 32 starts in reasoning, 64 stop strings, 128 body is ids), byte 1 the number
# of chunk-size bytes at the end (low 4 bits) and the stop pick (high 4 bits).
TEXTS = {
    "plain": "Hello, world! Café déjà vu — 123",
    "emoji": "emoji 👩‍👩‍👧‍👦 🏳️‍🌈 🇯🇵 日本語 ▁space mark",
    "newlines": "  indented {\n\n\treturn 0;\r\n}\n\n\n",
    "markup": "<bos><|turn>user\nHi <turn|>\n<|turn>model\n<|channel>thought\nhmm<channel|>Hi there.<turn|>",
    "tool-call": "<|channel>thought\nlook<channel|><|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>,n:[1,{k:[]}]}<tool_call|>",
    "stray": "A<turn|>B<|tool_response>C<|think|>D<|tool>F<tool|>G<tool_call|>H<channel|>I<|chan",
    "invalid-utf8": b"ok \xff\xfe \xe2\x96 \xf0\x9f\x98 \xc0\xaf \xed\xa0\x80 end\xe2",
    # The other call forms of decision 0024.
    "json-call": "<|tool_call>[{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": 1}\"}, {\"name\": \"g\", \"arguments\": {}}]<tool_call|>",
    "call-forms": "<|tool_call>call:default_api:f{a:{b:1}},c:echo ${HOME}}<tool_call|>, <|tool_call>call:g{}A<|turn>model\nB",
}


def text_seeds():
    out = {}
    for name, text in TEXTS.items():
        body = text if isinstance(text, bytes) else text.encode()
        for flags in (0x18, 0x1F, 0x58, 0x3B, 0x0C):
            out["text-%s-%02x" % (name, flags)] = bytes([flags, 0x34]) + body + b"\x01\x05\x0b\x02"
    ids = b"".join(struct.pack(">H", v) for v in (2, 105, 0x80F0, 0x809F, 0x8098, 0x8080, 0x7FF7, 0x7FF8, 0x7FFF))
    out["ids-bytes"] = bytes([0x9C, 0x02]) + ids + b"\x03\x07"
    return out


if __name__ == "__main__":
    if sys.argv[1] == "--text":
        for name, data in text_seeds().items():
            with open("%s/seed-%s" % (sys.argv[2], name), "wb") as f:
                f.write(data)
    else:
        for name, data in SEEDS.items():
            with open("%s/seed-%s.gguf" % (sys.argv[1], name), "wb") as f:
                f.write(data)
