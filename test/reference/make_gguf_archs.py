#!/usr/bin/python3
"""make_gguf_archs.py — GGUF twins of safetensors fixtures for the GGUF
architectures beyond llama/qwen3/gpt2 (make_gguf_fixtures.py), F32, written
as llama.cpp's converter (convert_hf_to_gguf.py) writes them, so the import
of each must give the safetensors import's logits and greedy ids:

phi3_f32.gguf: test/fixtures/hf_phi4 (a small Phi-4-mini: longrope,
partial_rotary_factor 0.75, tied head; hf_phi4_reference.py) as the
converter's Phi3MiniModel writes it (import_phi4.sql).

What the converter writes for a Phi3ForCausalLM:
  phi3.context_length (max_position_embeddings),
  phi3.rope.scaling.original_context_length, phi3.embedding_length,
  phi3.feed_forward_length, phi3.block_count, phi3.attention.head_count,
  phi3.attention.head_count_kv, phi3.attention.layer_norm_rms_epsilon,
  phi3.rope.dimension_count = int(partial_rotary_factor · hidden) // heads,
  phi3.rope.freq_base, phi3.attention.sliding_window (0 when null),
  phi3.rope.scaling.attn_factor = √(1 + ln(s)/ln(orig)) for longrope;
  tensors rope_factors_long.weight and rope_factors_short.weight (F32, one
  per rotated pair), and per layer attn_qkv (qkv_proj, rows as they are:
  Phi-3 rotates NeoX-style, nothing permuted), attn_output, ffn_up
  (gate_up_proj, the fused gate and up rows), ffn_down, attn_norm,
  ffn_norm; output_norm; no output.weight when the head is tied.

qwen2_f32.gguf: test/fixtures/hf_qwen2 as the converter's Qwen2Model writes
it (import_qwen2.sql): the llama keys under qwen2.*, attn_q/attn_k/attn_v
with their biases (attn_q.bias ...), rows as Hugging Face's (qwen2 rotates
NeoX-style; the converter permutes q and k only for llama), no
output.weight (tied); its byte-level BPE as tokenizer.ggml.model "gpt2"
with pre "qwen2" (Qwen2's Split pattern after NFC: import_qwen2.sql checks
its ids against the tokenizer.json import's).

gemma3_f32.gguf: test/fixtures/hf_gemma3_gguf (hf_gemma3_reference.py: a
Gemma 3 whose config a gemma3 file describes whole: query_pre_attn_scalar
the head's width, local layers (i + 1) % 6 != 0, local base 1e4) as the
converter's Gemma3Model writes it (import_gemma3_gguf.sql): gemma3.*
context_length, embedding_length, block_count, feed_forward_length,
attention.head_count, head_count_kv, layer_norm_rms_epsilon,
attention.key_length and value_length (head_dim), rope.freq_base (the
global layers'), attention.sliding_window, rope.scaling.type "linear" and
rope.scaling.factor; every tensor ending in norm.weight stored plus 1
(Gemma3RMSNorm's 1 + w, which ggml's norm does not add), llama.cpp's names
(attn_q_norm, attn_k_norm, post_attention_norm, ffn_norm for
pre_feedforward_layernorm, post_ffw_norm), rows as Hugging Face's, no
output.weight (tied); the fixture's SentencePiece-style tokenizer as
tokenizer.ggml.model "llama" (the converter's _set_vocab_sentencepiece).

Run: /usr/bin/python3 test/reference/make_gguf_archs.py (from the repository root).
"""
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_gguf_fixtures as M  # noqa: E402  (safetensors reader, tokenizer metadata, writer)

OUT = "test/fixtures/gguf/phi3_f32.gguf"
QWEN2 = "test/fixtures/gguf/qwen2_f32.gguf"
GEMMA3 = "test/fixtures/gguf/gemma3_f32.gguf"


def gemma3_file():
    d = "test/fixtures/hf_gemma3_gguf/"
    cfg = json.load(open(d + "config.json"))
    sd = M.read_safetensors(d + "model.safetensors")
    tok = json.load(open(d + "tokenizer.json"))
    a = "gemma3"
    assert cfg["sliding_window_pattern"] == 6 and cfg["query_pre_attn_scalar"] == cfg["head_dim"]
    assert cfg["rope_local_base_freq"] == 10000.0 and cfg["rope_scaling"]["rope_type"] == "linear"
    meta = [("general.architecture", a), ("general.name", "tfm-test"), ("general.alignment", 32),
            (a + ".context_length", cfg["max_position_embeddings"]),
            (a + ".embedding_length", cfg["hidden_size"]),
            (a + ".block_count", cfg["num_hidden_layers"]),
            (a + ".feed_forward_length", cfg["intermediate_size"]),
            (a + ".attention.head_count", cfg["num_attention_heads"]),
            (a + ".attention.layer_norm_rms_epsilon", float(cfg["rms_norm_eps"])),
            (a + ".attention.key_length", cfg["head_dim"]),
            (a + ".attention.value_length", cfg["head_dim"]),
            (a + ".rope.freq_base", float(cfg["rope_theta"])),
            (a + ".attention.sliding_window", cfg["sliding_window"]),
            (a + ".attention.head_count_kv", cfg["num_key_value_heads"]),
            (a + ".rope.scaling.type", "linear"),
            (a + ".rope.scaling.factor", float(cfg["rope_scaling"]["factor"]))] + M.tokenizer_meta(tok)
    tensors = []

    def put(gname, w):
        w = np.asarray(w, dtype="<f4")
        if gname.endswith("norm.weight"):
            w = (w + np.float32(1.0)).astype("<f4")  # the converter's norm_shift
        tensors.append((gname, M.F32, list(reversed(w.shape)), w.tobytes()))

    put("token_embd.weight", sd["model.embed_tokens.weight"])
    names = [("attn_norm", "input_layernorm"), ("attn_q", "self_attn.q_proj"), ("attn_k", "self_attn.k_proj"),
             ("attn_v", "self_attn.v_proj"), ("attn_q_norm", "self_attn.q_norm"), ("attn_k_norm", "self_attn.k_norm"),
             ("attn_output", "self_attn.o_proj"), ("post_attention_norm", "post_attention_layernorm"),
             ("ffn_norm", "pre_feedforward_layernorm"), ("post_ffw_norm", "post_feedforward_layernorm"),
             ("ffn_gate", "mlp.gate_proj"), ("ffn_up", "mlp.up_proj"), ("ffn_down", "mlp.down_proj")]
    for i in range(cfg["num_hidden_layers"]):
        for g, h in names:
            put("blk.%d.%s.weight" % (i, g), sd["model.layers.%d.%s.weight" % (i, h)])
    put("output_norm.weight", sd["model.norm.weight"])
    M.gw.write_gguf(GEMMA3, meta, tensors)
    print("wrote %s (%d bytes)" % (GEMMA3, os.path.getsize(GEMMA3)))


def qwen2_file():
    cfg = json.load(open("test/fixtures/hf_qwen2/config.json"))
    sd = M.read_safetensors("test/fixtures/hf_qwen2/model.safetensors")
    tok = json.load(open("test/fixtures/hf_qwen2/tokenizer.json"))
    H, KV, D = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["hidden_size"]
    a = "qwen2"
    # the converter's: pre "qwen2", Qwen2's own bos/eos, no bos added
    tmeta = [kv for kv in M.gpt2_tokenizer_meta(tok)[0]
             if kv[0] not in ("tokenizer.ggml.pre", "tokenizer.ggml.bos_token_id",
                              "tokenizer.ggml.eos_token_id", "tokenizer.ggml.add_bos_token")]
    tmeta += [("tokenizer.ggml.pre", "qwen2"), ("tokenizer.ggml.bos_token_id", cfg["bos_token_id"]),
              ("tokenizer.ggml.eos_token_id", cfg["eos_token_id"]), ("tokenizer.ggml.add_bos_token", False)]
    meta = [("general.architecture", a), ("general.name", "tfm-test"), ("general.alignment", 32),
            (a + ".block_count", cfg["num_hidden_layers"]),
            (a + ".context_length", cfg["max_position_embeddings"]),
            (a + ".embedding_length", D),
            (a + ".feed_forward_length", cfg["intermediate_size"]),
            (a + ".attention.head_count", H),
            (a + ".attention.head_count_kv", KV),
            (a + ".rope.freq_base", float(cfg["rope_theta"])),
            (a + ".attention.layer_norm_rms_epsilon", float(cfg["rms_norm_eps"]))] + tmeta
    tensors = []

    def put(gname, w):
        w = np.asarray(w, dtype="<f4")
        tensors.append((gname, M.F32, list(reversed(w.shape)), w.tobytes()))

    put("token_embd.weight", sd["model.embed_tokens.weight"])
    for i in range(cfg["num_hidden_layers"]):
        p, b = "model.layers.%d." % i, "blk.%d." % i
        put(b + "attn_norm.weight", sd[p + "input_layernorm.weight"])
        for x in "qkv":
            put(b + "attn_%s.weight" % x, sd[p + "self_attn.%s_proj.weight" % x])
            put(b + "attn_%s.bias" % x, sd[p + "self_attn.%s_proj.bias" % x])
        put(b + "attn_output.weight", sd[p + "self_attn.o_proj.weight"])
        put(b + "ffn_norm.weight", sd[p + "post_attention_layernorm.weight"])
        put(b + "ffn_gate.weight", sd[p + "mlp.gate_proj.weight"])
        put(b + "ffn_up.weight", sd[p + "mlp.up_proj.weight"])
        put(b + "ffn_down.weight", sd[p + "mlp.down_proj.weight"])
    put("output_norm.weight", sd["model.norm.weight"])
    M.gw.write_gguf(QWEN2, meta, tensors)
    print("wrote %s (%d bytes)" % (QWEN2, os.path.getsize(QWEN2)))


def main():
    cfg = json.load(open("test/fixtures/hf_phi4/config.json"))
    sd = M.read_safetensors("test/fixtures/hf_phi4/model.safetensors")
    tok = json.load(open("test/fixtures/hf_phi4/tokenizer.json"))
    H, KV, D = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["hidden_size"]
    rope_dims = int(cfg.get("partial_rotary_factor", 1.0) * D) // H
    rs = cfg["rope_scaling"]
    orig, maxpos = cfg["original_max_position_embeddings"], cfg["max_position_embeddings"]
    scale = maxpos / orig
    attn = math.sqrt(1 + math.log(scale) / math.log(orig)) if scale > 1.0 else 1.0
    assert len(rs["long_factor"]) == len(rs["short_factor"]) == rope_dims // 2
    a = "phi3"
    meta = [("general.architecture", a), ("general.name", "tfm-test"), ("general.alignment", 32),
            (a + ".context_length", maxpos),
            (a + ".rope.scaling.original_context_length", orig),
            (a + ".embedding_length", D),
            (a + ".feed_forward_length", cfg["intermediate_size"]),
            (a + ".block_count", cfg["num_hidden_layers"]),
            (a + ".attention.head_count", H),
            (a + ".attention.head_count_kv", KV),
            (a + ".attention.layer_norm_rms_epsilon", float(cfg["rms_norm_eps"])),
            (a + ".rope.dimension_count", rope_dims),
            (a + ".rope.freq_base", float(cfg["rope_theta"])),
            (a + ".attention.sliding_window", cfg.get("sliding_window") or 0),
            (a + ".rope.scaling.attn_factor", float(attn))] + M.tokenizer_meta(tok)
    tensors = []

    def mat(gname, w):
        w = np.asarray(w, dtype="<f4")
        tensors.append((gname, M.F32, [w.shape[1], w.shape[0]], w.tobytes()))

    def vec(gname, w):
        w = np.asarray(w, dtype="<f4")
        tensors.append((gname, M.F32, [w.shape[0]], w.tobytes()))

    mat("token_embd.weight", sd["model.embed_tokens.weight"])
    vec("rope_factors_long.weight", rs["long_factor"])
    vec("rope_factors_short.weight", rs["short_factor"])
    for i in range(cfg["num_hidden_layers"]):
        p, b = "model.layers.%d." % i, "blk.%d." % i
        vec(b + "attn_norm.weight", sd[p + "input_layernorm.weight"])
        mat(b + "attn_qkv.weight", sd[p + "self_attn.qkv_proj.weight"])
        mat(b + "attn_output.weight", sd[p + "self_attn.o_proj.weight"])
        vec(b + "ffn_norm.weight", sd[p + "post_attention_layernorm.weight"])
        mat(b + "ffn_up.weight", sd[p + "mlp.gate_up_proj.weight"])
        mat(b + "ffn_down.weight", sd[p + "mlp.down_proj.weight"])
    vec("output_norm.weight", sd["model.norm.weight"])
    M.gw.write_gguf(OUT, meta, tensors)
    print("wrote %s (%d bytes), attn_factor %.9g, rope dims %d" % (OUT, os.path.getsize(OUT), attn, rope_dims))
    qwen2_file()
    gemma3_file()


if __name__ == "__main__":
    main()
