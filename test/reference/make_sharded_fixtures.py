#!/usr/bin/env python3
"""make_sharded_fixtures.py: sharded checkpoints for tfm_import_files.

Splits the committed single-file fixtures into shards plus a
model.safetensors.index.json, as Hugging Face's save_pretrained writes them
(shards model-0000i-of-0000n.safetensors with "__metadata__": {"format":
"pt"}, the index as json.dumps(indent=2, sort_keys=True) with
metadata.total_size the sum of the tensors' byte sizes), and writes small
hostile directories, one per refusal that test/regress/sql/import_sharded.sql pins:

  test/fixtures/hf_gpt2_sharded/    GPT-2 in 3 shards, config.json, tokenizer.json
  test/fixtures/hf_llama_sharded/   Llama in 2 shards, config.json, tokenizer.json
  test/fixtures/hf_sharded_bad/<case>/  config.json (GPT-2's), tiny shards, an index
  test/fixtures/hf_gpt2_linked/     symbolic links to the files of hf_gpt2_sharded

Standard library only; the output is deterministic (running it twice gives
identical files).  From the repository root:

    /usr/bin/python3 test/reference/make_sharded_fixtures.py
"""
import json
import os
import shutil
import struct
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures")
SIZES = {"F32": 4, "F16": 2, "BF16": 2, "I64": 8}


def read_safetensors(path):
    """-> (metadata or None, [(name, dtype, shape, bytes)] in file order)"""
    with open(path, "rb") as f:
        buf = f.read()
    (n,) = struct.unpack("<Q", buf[:8])
    header = json.loads(buf[8:8 + n].decode("utf-8"))
    data = buf[8 + n:]
    meta = header.pop("__metadata__", None)
    tensors = sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0])
    out = []
    for name, t in tensors:
        b, e = t["data_offsets"]
        out.append((name, t["dtype"], t["shape"], data[b:e]))
    return meta, out


def safetensors_bytes(tensors, meta=None):
    """a .safetensors file of [(name, dtype, shape, bytes)], header padded to 8 bytes"""
    header = {}
    if meta is not None:
        header["__metadata__"] = meta
    at = 0
    for name, dtype, shape, data in tensors:
        n = SIZES[dtype]
        for d in shape:
            n *= d
        assert n == len(data), name
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [at, at + len(data)]}
        at += len(data)
    js = json.dumps(header, separators=(",", ":")).encode("utf-8")
    js += b" " * (-len(js) % 8)
    return struct.pack("<Q", len(js)) + js + b"".join(t[3] for t in tensors)


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    mode = "wb" if isinstance(data, bytes) else "w"
    with open(path, mode) as f:
        f.write(data)


def index_text(weight_map, total_size):
    index = {"metadata": {"total_size": total_size}, "weight_map": weight_map}
    return json.dumps(index, indent=2, sort_keys=True) + "\n"


def shard_name(i, n):
    return "model-%05d-of-%05d.safetensors" % (i + 1, n)


def split(tensors, n):
    """n contiguous groups of about equal bytes, none empty"""
    total = sum(len(t[3]) for t in tensors)
    groups, cur, acc = [], [], 0
    for i, t in enumerate(tensors):
        cur.append(t)
        acc += len(t[3])
        left = len(tensors) - i - 1
        if len(groups) < n - 1 and (acc >= total * (len(groups) + 1) / n or left == n - 1 - len(groups)):
            groups.append(cur)
            cur = []
    groups.append(cur)
    assert len(groups) == n and all(groups)
    return groups


def write_sharded(src_dir, dst_dir, n):
    if os.path.isdir(dst_dir):
        shutil.rmtree(dst_dir)
    os.makedirs(dst_dir)
    for f in ("config.json", "tokenizer.json"):
        shutil.copyfile(os.path.join(src_dir, f), os.path.join(dst_dir, f))
    meta, tensors = read_safetensors(os.path.join(src_dir, "model.safetensors"))
    weight_map = {}
    for i, group in enumerate(split(tensors, n)):
        write(os.path.join(dst_dir, shard_name(i, n)), safetensors_bytes(group, {"format": "pt"}))
        for t in group:
            weight_map[t[0]] = shard_name(i, n)
    total = sum(len(t[3]) for t in tensors)
    write(os.path.join(dst_dir, "model.safetensors.index.json"), index_text(weight_map, total))
    return len(tensors), total


def f32(*values):
    return struct.pack("<%df" % len(values), *values)


def bad_cases(config):
    """case -> {file name: bytes or text}: each directory fails in one way"""
    s1, s2 = shard_name(0, 2), shard_name(1, 2)
    a = ("a", "F32", [2], f32(1, 2))
    b = ("b", "F32", [3], f32(3, 4, 5))
    c = ("c", "F32", [1], f32(6))
    good_map = {"a": s1, "b": s2}
    shards = {s1: safetensors_bytes([a], {"format": "pt"}), s2: safetensors_bytes([b], {"format": "pt"})}
    # GPT-2's final LayerNorm only: a consistent index whose model lacks every other tensor
    ln = [("transformer.ln_f.bias", "F32", [32], f32(*([0.0] * 32))),
          ("transformer.ln_f.weight", "F32", [32], f32(*([1.0] * 32)))]
    cases = {
        # "b" is in the second shard, the index puts it in the first
        "wrong_shard": {s1: shards[s1], s2: safetensors_bytes([b, c]),
                        "model.safetensors.index.json": index_text({"a": s1, "b": s1, "c": s2}, 24)},
        # the index names a third shard that is not there
        "missing_shard": dict(shards, **{"model.safetensors.index.json":
                                         index_text(dict(good_map, c="model-00003-of-00003.safetensors"), 24)}),
        # a shard outside the directory
        "traversal": dict(shards, **{"model.safetensors.index.json":
                                     index_text({"a": s1, "b": "../x.safetensors"}, 20)}),
        # the second shard holds "c", which the index does not name
        "absent": {s1: shards[s1], s2: safetensors_bytes([b, c]),
                   "model.safetensors.index.json": index_text(good_map, 24)},
        # the index names "c" in the first shard, which lacks it
        "not_in_shard": dict(shards, **{"model.safetensors.index.json": index_text(dict(good_map, c=s1), 24)}),
        # total_size says 24 bytes, the tensors hold 20
        "total_size": dict(shards, **{"model.safetensors.index.json": index_text(good_map, 24)}),
        # a truncated index
        "malformed": dict(shards, **{"model.safetensors.index.json": index_text(good_map, 20)[:-20]}),
        # "b" twice in weight_map (JSON that json.loads would take, keeping the last)
        "duplicate": dict(shards, **{"model.safetensors.index.json":
                                     '{"weight_map": {"a": "%s", "b": "%s", "b": "%s"}}\n' % (s1, s2, s1)}),
        # a shard that is not a safetensors file
        "bad_shard": {s1: shards[s1], s2: b"\x00" * 7,
                      "model.safetensors.index.json": index_text(good_map, 8)},
        # the index is consistent, the model is not: the architecture's table refuses
        "unexpected_tensor": dict(shards, **{"model.safetensors.index.json": index_text(good_map, 20)}),
        "missing_tensor": {s1: safetensors_bytes(ln[:1]), s2: safetensors_bytes(ln[1:]),
                           "model.safetensors.index.json":
                           index_text({ln[0][0]: s1, ln[1][0]: s2}, 256)},
        # neither model.safetensors nor an index
        "no_weights": {},
        # model.safetensors wins over the index, as in Hugging Face: here an empty one
        "both": dict(shards, **{"model.safetensors": b"",
                                "model.safetensors.index.json": index_text(good_map, 20)}),
    }
    for files in cases.values():
        files["config.json"] = config
    return cases


def main():
    for name, n in (("hf_gpt2", 3), ("hf_llama", 2)):
        count, total = write_sharded(os.path.join(ROOT, name), os.path.join(ROOT, name + "_sharded"), n)
        print("%s_sharded: %d tensors, %d bytes in %d shards" % (name, count, total, n))
    bad = os.path.join(ROOT, "hf_sharded_bad")
    if os.path.isdir(bad):
        shutil.rmtree(bad)
    with open(os.path.join(ROOT, "hf_gpt2", "config.json")) as f:
        config = f.read()
    cases = bad_cases(config)
    for case, files in sorted(cases.items()):
        for fname, data in sorted(files.items()):
            write(os.path.join(bad, case, fname), data)
    # a weights path that is a directory (git keeps it by the file inside)
    write(os.path.join(bad, "weights_dir", "config.json"), config)
    write(os.path.join(bad, "weights_dir", "model.safetensors", "README"),
          "a directory named model.safetensors: tfm_import_files refuses it\n")
    print("hf_sharded_bad: %d cases" % (len(cases) + 1))
    # every file a symbolic link out of the directory, as in a Hugging Face
    # cache snapshot (snapshots/<rev>/* -> ../../blobs/*): links are followed
    linked = os.path.join(ROOT, "hf_gpt2_linked")
    if os.path.isdir(linked):
        shutil.rmtree(linked)
    os.makedirs(linked)
    for f in sorted(os.listdir(os.path.join(ROOT, "hf_gpt2_sharded"))):
        os.symlink(os.path.join("..", "hf_gpt2_sharded", f), os.path.join(linked, f))
    print("hf_gpt2_linked: links to hf_gpt2_sharded")
    # read back: every shard parses and the index names exactly its tensors
    for name in ("hf_gpt2", "hf_llama"):
        d = os.path.join(ROOT, name + "_sharded")
        with open(os.path.join(d, "model.safetensors.index.json")) as f:
            index = json.load(f)
        _, single = read_safetensors(os.path.join(ROOT, name, "model.safetensors"))
        seen = {}
        for shard in sorted(set(index["weight_map"].values())):
            for t in read_safetensors(os.path.join(d, shard))[1]:
                assert index["weight_map"][t[0]] == shard and t[0] not in seen
                seen[t[0]] = t
        assert seen == {t[0]: t for t in single}, name
        assert index["metadata"]["total_size"] == sum(len(t[3]) for t in single)
    return 0


if __name__ == "__main__":
    sys.exit(main())
