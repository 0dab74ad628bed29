#!/usr/bin/python3
"""onnx_int8.py — bench/peers' own dynamic int8 quantizer for ONNX Runtime:
reads the fp32 ONNX file make_models.py exported and writes the graph that
onnxruntime.quantization.quantize_dynamic writes for it (that tooling is
Python, on PyPI only), with no onnx package: the protobuf is read and
written here, field by field.

  onnx_int8.py IN.onnx OUT.onnx [--per-channel]

Every MatMul whose second input is an initializer (the linear layers: the
weight [K, N], torch.onnx.export's transposed copy) becomes

    DynamicQuantizeLinear(A) -> A_q (uint8), A_scale, A_zero_point
    MatMulInteger(A_q, W_q, A_zero_point, W_zero_point) -> int32
    Cast(to float), Mul(A_scale, W_scale), Mul -> the MatMul's output

with W_q int8, symmetric (zero point 0, scale max|w| / 127, values rounded
half to even and clipped to [-127, 127]) per tensor (quantize_dynamic's
default, weight_type QInt8) or per output column (--per-channel: W_scale
and W_zero_point of length N).  MatMuls of two activations (attention's
q k^T and p v) stay fp32, as quantize_dynamic leaves them (MatMulConstBOnly),
and so do Gather, the norms and the rest.  ONNX Runtime's graph optimizer
fuses each such group into its DynamicQuantizeMatMul (MatMulIntegerToFloat)
kernel at load.  The fp32 initializers of the replaced weights are dropped.
"""
import argparse
import sys

import numpy as np

# ONNX field numbers (onnx.proto3)
MODEL_GRAPH = 7
GRAPH_NODE, GRAPH_INITIALIZER = 1, 5
NODE_INPUT, NODE_OUTPUT, NODE_NAME, NODE_OP, NODE_ATTR = 1, 2, 3, 4, 5
ATTR_NAME, ATTR_I, ATTR_TYPE, ATTR_TYPE_INT = 1, 3, 20, 2
TENSOR_DIMS, TENSOR_TYPE, TENSOR_FLOAT_DATA, TENSOR_NAME, TENSOR_RAW = 1, 2, 4, 8, 9
FLOAT, UINT8, INT8 = 1, 2, 3


# ---- protobuf wire format ---------------------------------------------------------

def read_varint(buf, i):
    r = s = 0
    while True:
        if i >= len(buf) or s > 63:
            raise ValueError("truncated or overlong varint at byte %d" % i)
        b = buf[i]
        i += 1
        r |= (b & 0x7F) << s
        s += 7
        if b < 0x80:
            return r, i


def parse(buf):
    """a message's fields in order: (number, wire type, value): an int for
    varints, bytes for length-delimited and fixed fields"""
    out, i = [], 0
    while i < len(buf):
        key, i = read_varint(buf, i)
        f, w = key >> 3, key & 7
        if w == 0:
            v, i = read_varint(buf, i)
        elif w == 2:
            n, i = read_varint(buf, i)
            if i + n > len(buf):
                raise ValueError("field %d: %d bytes past the end" % (f, i + n - len(buf)))
            v = bytes(buf[i:i + n])
            i += n
        elif w in (1, 5):
            n = 8 if w == 1 else 4
            if i + n > len(buf):
                raise ValueError("field %d truncated" % f)
            v = bytes(buf[i:i + n])
            i += n
        else:
            raise ValueError("wire type %d (groups) not supported" % w)
        out.append((f, w, v))
    return out


def varint(n):
    if n < 0:
        n += 1 << 64
    b = bytearray()
    while True:
        if n < 0x80:
            b.append(n)
            return bytes(b)
        b.append((n & 0x7F) | 0x80)
        n >>= 7


def serialize(fields):
    out = []
    for f, w, v in fields:
        out.append(varint(f << 3 | w))
        if w == 0:
            out.append(varint(v))
        elif w == 2:
            out.append(varint(len(v)))
            out.append(v)
        else:
            out.append(v)
    return b"".join(out)


def strings(fields, num):
    return [v.decode() for f, w, v in fields if f == num]


def one(fields, num, default=None):
    for f, w, v in fields:
        if f == num:
            return v
    return default


# ---- ONNX messages ------------------------------------------------------------------

def node(op, inputs, outputs, name, **ints):
    fields = [(NODE_INPUT, 2, s.encode()) for s in inputs]
    fields += [(NODE_OUTPUT, 2, s.encode()) for s in outputs]
    fields += [(NODE_NAME, 2, name.encode()), (NODE_OP, 2, op.encode())]
    for k, v in ints.items():
        fields.append((NODE_ATTR, 2, serialize([(ATTR_NAME, 2, k.encode()), (ATTR_I, 0, v),
                                                (ATTR_TYPE, 0, ATTR_TYPE_INT)])))
    return (GRAPH_NODE, 2, serialize(fields))


def tensor(name, a, dtype):
    fields = [(TENSOR_DIMS, 0, d) for d in a.shape]
    fields += [(TENSOR_TYPE, 0, dtype), (TENSOR_NAME, 2, name.encode()),
               (TENSOR_RAW, 2, np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes())]
    return (GRAPH_INITIALIZER, 2, serialize(fields))


def float_initializer(fields):
    """an fp32 initializer's name and array, or None if it is not one"""
    if one(fields, TENSOR_TYPE) != FLOAT:
        return None
    dims = []
    for f, w, v in fields:
        if f == TENSOR_DIMS:
            if w == 0:
                dims.append(v)
            else:                            # packed
                i = 0
                while i < len(v):
                    d, i = read_varint(v, i)
                    dims.append(d)
    raw = one(fields, TENSOR_RAW)
    if raw is not None:
        a = np.frombuffer(raw, dtype="<f4")
    else:
        fd = b"".join(v for f, w, v in fields if f == TENSOR_FLOAT_DATA)
        a = np.frombuffer(fd, dtype="<f4")   # packed floats
    if a.size != int(np.prod(dims, dtype=np.int64)):
        raise ValueError("initializer %s: %d values for dims %s" % (one(fields, TENSOR_NAME), a.size, dims))
    return one(fields, TENSOR_NAME).decode(), a.reshape(dims)


def quantize_weight(w, per_channel):
    """symmetric int8 as ONNX Runtime quantizes QInt8 weights: scale
    max|w| / 127 (per column of [K, N] with per_channel), zero point 0"""
    amax = np.abs(w).max(axis=0) if per_channel else np.abs(w).max()
    scale = (np.maximum(amax, 1e-30) / 127.0).astype(np.float32)
    q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
    return q, scale


def quantize_model(buf, per_channel=False):
    model = parse(buf)
    gi = [k for k, (f, w, v) in enumerate(model) if f == MODEL_GRAPH]
    if len(gi) != 1:
        raise ValueError("not an ONNX model: %d graphs" % len(gi))
    graph = parse(model[gi[0]][2])
    weights = {}
    for f, w, v in graph:
        if f == GRAPH_INITIALIZER:
            t = float_initializer(parse(v))
            if t is not None and t[1].ndim == 2:
                weights[t[0]] = t[1]
    new_graph, used, count = [], set(), 0
    quantized_inits = []
    for f, w, v in graph:
        if f != GRAPH_NODE:
            new_graph.append((f, w, v))
            continue
        n = parse(v)
        ins, outs = strings(n, NODE_INPUT), strings(n, NODE_OUTPUT)
        if one(n, NODE_OP) != b"MatMul" or len(ins) != 2 or ins[1] not in weights:
            new_graph.append((f, w, v))
            continue
        a, b, y = ins[0], ins[1], outs[0]
        p = "%s_q%d" % (b, count)
        count += 1
        if b not in used:
            q, scale = quantize_weight(weights[b], per_channel)
            zp = np.zeros(scale.shape, np.int8)
            quantized_inits += [tensor(b + "_quantized", q, INT8), tensor(b + "_scale", scale, FLOAT),
                                tensor(b + "_zero_point", zp, INT8)]
            used.add(b)
        new_graph += [
            node("DynamicQuantizeLinear", [a], [p + "_a", p + "_a_scale", p + "_a_zp"], p + "_DynamicQuantizeLinear"),
            node("MatMulInteger", [p + "_a", b + "_quantized", p + "_a_zp", b + "_zero_point"], [p + "_int32"],
                 p + "_MatMulInteger"),
            node("Cast", [p + "_int32"], [p + "_float"], p + "_Cast", to=FLOAT),
            node("Mul", [p + "_a_scale", b + "_scale"], [p + "_scale"], p + "_scale_Mul"),
            node("Mul", [p + "_float", p + "_scale"], [y], p + "_Mul"),
        ]
    if not count:
        raise ValueError("no MatMul with an initializer weight: nothing to quantize")
    # drop the fp32 weights every use of which was quantized
    still = {s for f, w, v in new_graph if f == GRAPH_NODE for s in strings(parse(v), NODE_INPUT)}
    out_graph = []
    for f, w, v in new_graph:
        if f == GRAPH_INITIALIZER:
            name = one(parse(v), TENSOR_NAME).decode()
            if name in used and name not in still:
                continue
        out_graph.append((f, w, v))
    out_graph += quantized_inits
    model[gi[0]] = (MODEL_GRAPH, 2, serialize(out_graph))
    return serialize(model), count, len(used)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--per-channel", action="store_true")
    a = ap.parse_args()
    with open(a.input, "rb") as fh:
        buf = fh.read()
    out, n, w = quantize_model(buf, a.per_channel)
    with open(a.output, "wb") as fh:
        fh.write(out)
    print("onnx_int8: %d MatMuls on %d weights quantized (%s int8, symmetric): %d -> %d bytes -> %s"
          % (n, w, "per-channel" if a.per_channel else "per-tensor", len(buf), len(out), a.output), file=sys.stderr)


if __name__ == "__main__":
    main()
