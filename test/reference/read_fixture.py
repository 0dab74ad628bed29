#!/usr/bin/env python3
"""Read a tfm test fixture (test/fixtures/*.bin) and print its records.

Pure standard library (no numpy / torch), so any python3 runs it:

    python3 test/reference/read_fixture.py test/fixtures/seq2seq.bin [-v]

-v also prints the first few values of every record.

File format (little-endian): the 8-byte magic "TFMFIX01", then records until
EOF, each

    u32 name_len; name bytes (UTF-8, no NUL); u32 dtype (0 float32, 1 int32);
    u32 ndim; u32 dims[ndim]; data: prod(dims) elements of 4 bytes
    (ndim 0 = scalar, one element).
"""
import struct
import sys

MAGIC = b"TFMFIX01"
DTYPES = {0: ("float32", "f"), 1: ("int32", "i")}


def load(path):
    """Return a list of (name, dtype_name, dims tuple, flat list of values)."""
    with open(path, "rb") as fh:
        buf = fh.read()
    if buf[:8] != MAGIC:
        raise ValueError("%s: bad magic %r" % (path, buf[:8]))
    off = 8
    out = []
    seen = set()

    def u32():
        nonlocal off
        if off + 4 > len(buf):
            raise ValueError("%s: truncated at byte %d" % (path, off))
        (v,) = struct.unpack_from("<I", buf, off)
        off += 4
        return v

    while off < len(buf):
        n = u32()
        name = buf[off:off + n].decode("utf-8")
        if len(name.encode("utf-8")) != n:
            raise ValueError("%s: truncated name at byte %d" % (path, off))
        off += n
        dtype = u32()
        if dtype not in DTYPES:
            raise ValueError("%s: record %s: bad dtype %d" % (path, name, dtype))
        ndim = u32()
        dims = tuple(u32() for _ in range(ndim))
        count = 1
        for x in dims:
            count *= x
        if off + 4 * count > len(buf):
            raise ValueError("%s: record %s: truncated data" % (path, name))
        vals = list(struct.unpack_from("<%d%s" % (count, DTYPES[dtype][1]), buf, off))
        off += 4 * count
        if name in seen:
            raise ValueError("%s: duplicate record %s" % (path, name))
        seen.add(name)
        out.append((name, DTYPES[dtype][0], dims, vals))
    return out


def main(argv):
    verbose = "-v" in argv
    paths = [a for a in argv if a != "-v"]
    if not paths:
        print(__doc__)
        return 2
    for path in paths:
        recs = load(path)
        print("%s: %d records" % (path, len(recs)))
        for name, dt, dims, vals in recs:
            shape = "scalar" if not dims else "(" + ", ".join(map(str, dims)) + ")"
            line = "  %-40s %-7s %s" % (name, dt, shape)
            if verbose or not dims:
                shown = vals[:6]
                fmt = (lambda v: "%d" % v) if dt == "int32" else (lambda v: "%.7g" % v)
                line += "  " + " ".join(fmt(v) for v in shown) + (" ..." if len(vals) > 6 else "")
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
