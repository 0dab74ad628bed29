#!/usr/bin/python3
"""agree.py — bench/peers: how closely embeddings agree.  Each FILE holds 32
embeddings, either ONNX Runtime's JSON (a list of lists, ort_embed.mjs
--out) or psql's output of float4[] / float8[] values, one a line
({...}); prints for each FILE after the first, against the first:

  NAME max_abs_diff least_cosine

  agree.py REFERENCE NAME=FILE ...   (REFERENCE: either kind, or the
                                      reference.json of make_models.py)
"""
import json
import math
import sys


def load(path):
    with open(path) as fh:
        text = fh.read()
    s = text.lstrip()
    if s.startswith("{\"float64\""):
        rows = json.loads(s)["float64"]
    elif s.startswith("["):
        rows = json.loads(s)
    else:
        rows = [json.loads(l.strip().replace("{", "[").replace("}", "]")) for l in text.splitlines() if l.strip()]
    if not rows or any(not isinstance(r, list) or len(r) != len(rows[0]) for r in rows):
        raise ValueError("%s: not a list of equal-length embeddings" % path)
    return [[float(x) for x in r] for r in rows]


def agree(a, b):
    if len(a) != len(b):
        raise ValueError("%d embeddings against %d" % (len(b), len(a)))
    d = max(abs(x - y) for r, s in zip(a, b) for x, y in zip(r, s))
    cos = min(sum(x * y for x, y in zip(r, s)) / math.sqrt(sum(x * x for x in r) * sum(y * y for y in s))
              for r, s in zip(a, b))
    return d, cos


def main():
    ref = load(sys.argv[1])
    for arg in sys.argv[2:]:
        name, path = arg.split("=", 1)
        d, cos = agree(ref, load(path))
        print("%s %.3g %.6f" % (name, d, cos))


if __name__ == "__main__":
    main()
