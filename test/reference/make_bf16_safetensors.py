#!/usr/bin/python3
"""make_bf16_safetensors.py: test/fixtures/hf_llama/model_bf16.safetensors,
hf_llama's float32 checkpoint with every tensor rounded to BF16 (to nearest,
ties to even: as torch's .to(torch.bfloat16)), as a checkpoint saved in
bfloat16 is; tfm.precision = auto runs it at bf16 (test/regress/sql/auto_precision.sql).
Pure Python: python3 test/reference/make_bf16_safetensors.py"""
import json
import struct
import sys

src = sys.argv[1] if len(sys.argv) > 1 else "test/fixtures/hf_llama/model.safetensors"
dst = sys.argv[2] if len(sys.argv) > 2 else "test/fixtures/hf_llama/model_bf16.safetensors"
blob = open(src, "rb").read()
n = struct.unpack("<Q", blob[:8])[0]
header = json.loads(blob[8:8 + n])
data = blob[8 + n:]


def bf16(word):
    if (word & 0x7F800000) == 0x7F800000 and (word & 0x7FFFFF):
        return (word >> 16) | 0x40  # a NaN stays one
    return ((word + 0x7FFF + ((word >> 16) & 1)) >> 16) & 0xFFFF


out_header, out, pos = {}, bytearray(), 0
for name in sorted(k for k in header if k != "__metadata__"):
    t = header[name]
    assert t["dtype"] == "F32", name
    begin, end = t["data_offsets"]
    words = struct.unpack("<%dI" % ((end - begin) // 4), data[begin:end])
    raw = struct.pack("<%dH" % len(words), *(bf16(w) for w in words))
    out_header[name] = {"dtype": "BF16", "shape": t["shape"], "data_offsets": [pos, pos + len(raw)]}
    out += raw
    pos += len(raw)
if "__metadata__" in header:
    out_header["__metadata__"] = header["__metadata__"]
h = json.dumps(out_header, separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
with open(dst, "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + bytes(out))
