#!/usr/bin/python3
"""hf_marian_reference.py — a small random MarianMTModel (the opus-mt
translation models) as Hugging Face saves it, with its SentencePiece files,
and its outputs, for tfm_import's Marian tests (test/unit/test_hf_marian.c,
test/regress/sql/import_marian.sql).

Written from the published MarianMTModel description (no transformers, no
safetensors package):
  embeddings   x = shared[ids] · √d_model (scale_embedding) + P[pos], with
               P[pos, i] = sin(pos / 10000^(2i/d)) for i < d/2 and
               P[pos, d/2 + i] = cos(pos / 10000^(2i/d)): the halves, not
               interleaved (MarianSinusoidalPositionalEmbedding); the same
               table, computed in float64 and stored in float32, for the
               encoder and the decoder, each counting from 0
  blocks       post-LN (x = LN(x + sublayer(x)), nn.LayerNorm eps 1e-5):
               encoder self-attention, feed-forward; decoder causal
               self-attention, cross-attention over the encoder's output,
               feed-forward; q/k/v/out projections with biases, queries
               scaled by head_dim^-0.5; FF fc2(swish(fc1(x))) (SiLU)
  head         logits = x · sharedᵀ + final_logits_bias (tied: the source,
               target and output embeddings are one tensor)
  decoding     the decoder starts from pad_token_id (decoder_start_token_id);
               bad_words_ids [[pad]]: pad is never produced (its score -inf
               after the log-softmax); forced_eos_token_id at max_length - 1
               (every other score -inf, eos's 0: the beam keeps its score)
  greedy       argmax until eos or max_length (generate, num_beams 1)
  beam search  as GenerationMixin's beam search with BeamSearchScorer:
               log-softmax + the processors + the beam's score, the
               2·num_beams best (beam, token) of all beams, eos among the
               first num_beams files a hypothesis scored sum / n^length_penalty
               (n: generated tokens with the eos), the others the next beams
               in order; a source is done (early_stopping false) when it has
               num_beams hypotheses and the worst is at least the best
               candidate's score / n^length_penalty; at max_length the live
               beams are added; the best hypothesis wins
The tokenizer (MarianTokenizer): source.spm and target.spm are
SentencePiece Unigram models (spm_train, nmt_nfkc), a text's pieces map to
vocab.json's ids (a piece it lacks is <unk>), and </s> ends the source.

Writes into test/fixtures/hf_marian/: config.json, generation_config.json,
tokenizer_config.json, source.spm, target.spm, vocab.json,
model.safetensors (model.shared.weight, lm_head.weight equal to it,
final_logits_bias, the position tables, every layer's tensors; F32) and
reference.json: per case the source text and ids, the teacher-forced
decoder input and labels, the raw logits of case 0, the greedy ids and the
beam search's (num_beams 4, length_penalty 1.0 and 0.6), the loss and the
gradients of five tensors for case 0.

Run: /usr/bin/python3 test/reference/hf_marian_reference.py (from the repository root).
"""
import gzip
import json
import math
import os
import struct
import subprocess
import sys
import tempfile

import torch

torch.manual_seed(20261126)
torch.set_num_threads(1)
torch.set_default_dtype(torch.float32)
OUT = "test/fixtures/hf_marian"

D, HEADS, ENC_LAYERS, DEC_LAYERS, FF, MAX_POS = 32, 4, 2, 2, 64, 64
MAX_LENGTH = 24             # generate's max_length: the start token and up to 23 more
SP = "\u2581"

SOURCES = [
    "I like the cat.",
    "Where is the station?",
    "We went home yesterday.",
    "  Naïve  café 12 東京 🎉 !",
]
TARGETS = ["J'aime le chat.", "Où est la gare ?", "Nous sommes rentrés hier.", "Café naïf."]


def shared_dir():
    for d in (os.environ.get("TFM_SHARED_DATA"), "../shared/data", "/work/shared/data"):
        if d and os.path.exists(os.path.join(d, "eng_fra_train.tsv.gz")):
            return d
    sys.exit("shared data not found (set TFM_SHARED_DATA)")


def train_spm(lines, prefix, vocab_size):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    subprocess.run(["spm_train", f"--input={f.name}", f"--model_prefix={prefix}", "--model_type=unigram",
                    f"--vocab_size={vocab_size}", "--num_threads=1", "--character_coverage=1.0",
                    "--minloglevel=2"], check=True, capture_output=True)
    os.unlink(f.name)


def pieces(model, text):
    r = subprocess.run(["spm_encode", f"--model={model}", "--output_format=piece"], input=text + "\n",
                       capture_output=True, check=True, encoding="utf-8")
    return r.stdout.rstrip("\n").split(" ") if r.stdout.strip("\n") else []


def spm_pieces(model):
    """every piece of a model file, by id (protobuf ModelProto.pieces, field 1)"""
    b = open(model, "rb").read()
    out, i = [], 0

    def varint(i):
        x = s = 0
        while True:
            c = b[i]
            i += 1
            x |= (c & 0x7F) << s
            s += 7
            if c < 0x80:
                return x, i
    while i < len(b):
        key, i = varint(i)
        f, w = key >> 3, key & 7
        if w == 0:
            _, i = varint(i)
        elif w == 1:
            i += 8
        elif w == 5:
            i += 4
        else:
            n, i = varint(i)
            if f == 1:
                sub, j = b[i:i + n], 0
                while j < len(sub):
                    k = sub[j]
                    j += 1
                    if k == 0x0A:
                        ln = sub[j]
                        j += 1
                        out.append(sub[j:j + ln].decode("utf-8"))
                        break
                    elif k & 7 == 5:
                        j += 4
                    else:
                        while sub[j] & 0x80:
                            j += 1
                        j += 1
            i += n
    return out


def sinusoids(n, d):
    pe = torch.empty(n, d)
    enc = [[pos / math.pow(10000, 2 * (j // 2) / d) for j in range(d)] for pos in range(n)]
    enc = torch.tensor(enc, dtype=torch.float64)
    pe[:, : d // 2] = torch.sin(enc[:, 0::2]).float()
    pe[:, d // 2:] = torch.cos(enc[:, 1::2]).float()
    return pe


def layer_norm(x, sd, p):
    return torch.nn.functional.layer_norm(x, (D,), sd[p + ".weight"], sd[p + ".bias"], 1e-5)


def linear(x, sd, p):
    return x @ sd[p + ".weight"].T + sd[p + ".bias"]


def attention(x, mem, sd, p, causal):
    T, S, s = x.shape[0], mem.shape[0], D // HEADS
    q = (linear(x, sd, p + ".q_proj") * s ** -0.5).view(T, HEADS, s).transpose(0, 1)
    k = linear(mem, sd, p + ".k_proj").view(S, HEADS, s).transpose(0, 1)
    v = linear(mem, sd, p + ".v_proj").view(S, HEADS, s).transpose(0, 1)
    a = q @ k.transpose(-1, -2)
    if causal:
        a = a.masked_fill(~torch.tril(torch.ones(T, S, dtype=torch.bool)), float("-inf"))
    o = (a.softmax(-1) @ v).transpose(0, 1).reshape(T, D)
    return linear(o, sd, p + ".out_proj")


def ffn(x, sd, p):
    return linear(torch.nn.functional.silu(linear(x, sd, p + ".fc1")), sd, p + ".fc2")


def encode(sd, src):
    pe = sinusoids(MAX_POS, D)
    x = sd["model.shared.weight"][src] * math.sqrt(D) + pe[: len(src)]
    for i in range(ENC_LAYERS):
        p = f"model.encoder.layers.{i}"
        x = layer_norm(x + attention(x, x, sd, p + ".self_attn", False), sd, p + ".self_attn_layer_norm")
        x = layer_norm(x + ffn(x, sd, p), sd, p + ".final_layer_norm")
    return x


def decode(sd, mem, dec):
    pe = sinusoids(MAX_POS, D)
    x = sd["model.shared.weight"][dec] * math.sqrt(D) + pe[: len(dec)]
    for i in range(DEC_LAYERS):
        p = f"model.decoder.layers.{i}"
        x = layer_norm(x + attention(x, x, sd, p + ".self_attn", True), sd, p + ".self_attn_layer_norm")
        x = layer_norm(x + attention(x, mem, sd, p + ".encoder_attn", False), sd,
                       p + ".encoder_attn_layer_norm")
        x = layer_norm(x + ffn(x, sd, p), sd, p + ".final_layer_norm")
    return x @ sd["model.shared.weight"].T + sd["final_logits_bias"][0]


def next_scores(sd, mem, dec, pad, eos):
    """log-softmax of the last position, then NoBadWords([[pad]]) and ForcedEOS"""
    s = torch.log_softmax(decode(sd, mem, torch.tensor(dec))[-1], -1)
    s[pad] = float("-inf")
    if len(dec) == MAX_LENGTH - 1:
        s[:] = float("-inf")
        s[eos] = 0.0                # ForcedEOSTokenLogitsProcessor: eos's score is 0
    return s


def greedy(sd, mem, pad, eos):
    dec = [pad]
    while len(dec) < MAX_LENGTH:
        dec.append(int(next_scores(sd, mem, dec, pad, eos).argmax()))
        if dec[-1] == eos:
            break
    return dec


def beam_search(sd, mem, pad, eos, K, lp):
    """GenerationMixin's beam search over one source (early_stopping false)"""
    beams = [([pad], 0.0)] + [([pad], -1e9)] * (K - 1)
    hyps = []                       # (score, ids without the eos)
    worst = 1e9

    def add(ids, total, n):
        nonlocal worst
        score = total / (n ** lp)
        if len(hyps) < K or score > worst:
            hyps.append((score, ids))
            if len(hyps) > K:
                order = sorted(range(len(hyps)), key=lambda i: hyps[i][0])
                del hyps[order[0]]
                worst = min(h[0] for h in hyps)
            else:
                worst = min(score, worst)

    done = False
    while True:
        cand = []
        for b, (ids, total) in enumerate(beams):
            s = next_scores(sd, mem, ids, pad, eos) + total
            cand.append(s)
        flat = torch.stack(cand).view(-1)
        top, idx = torch.topk(flat, 2 * K)
        V = cand[0].shape[0]
        cur_len = len(beams[0][0]) + 1
        nxt = []
        for rank in range(2 * K):
            b, tok, sc = int(idx[rank]) // V, int(idx[rank]) % V, float(top[rank])
            if tok == eos:
                if rank >= K:
                    continue
                add(beams[b][0], sc, cur_len - 1)
            else:
                nxt.append((beams[b][0] + [tok], sc))
            if len(nxt) == K:
                break
        if len(hyps) >= K and worst >= float(top.max()) / ((cur_len - 1) ** lp):
            done = True
        beams = nxt
        if done or cur_len >= MAX_LENGTH:
            break
    if not done:
        for ids, total in beams:
            add(ids, total, len(ids) - 1)
    best = max(hyps, key=lambda h: h[0])
    return best[1] + [eos], best[0]


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, t in tensors:
        raw = t.contiguous().numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def main():
    os.makedirs(OUT, exist_ok=True)
    src_lines, tgt_lines = [], []
    with gzip.open(os.path.join(shared_dir(), "eng_fra_train.tsv.gz"), "rt", encoding="utf-8") as g:
        for i, line in enumerate(g):
            if i >= 400:
                break
            r = line.rstrip("\n").split("\t")
            src_lines.append(r[0])
            tgt_lines.append(r[1])
    train_spm(src_lines + SOURCES, f"{OUT}/source", 120)
    train_spm(tgt_lines + TARGETS, f"{OUT}/target", 120)
    os.replace(f"{OUT}/source.model", f"{OUT}/source.spm")
    os.replace(f"{OUT}/target.model", f"{OUT}/target.spm")
    os.unlink(f"{OUT}/source.vocab")
    os.unlink(f"{OUT}/target.vocab")

    # vocab.json as Marian's conversion writes it: </s> 0, <unk> 1, the pieces, <pad> last
    vocab = {"</s>": 0, "<unk>": 1}
    for p in spm_pieces(f"{OUT}/source.spm") + spm_pieces(f"{OUT}/target.spm"):
        if p not in vocab and p not in ("<s>", "</s>", "<unk>"):
            vocab[p] = len(vocab)
    vocab["<pad>"] = len(vocab)
    V, eos, unk, pad = len(vocab), 0, 1, len(vocab) - 1

    def ids_of(model, text):
        return [vocab.get(p, unk) for p in pieces(model, text)]

    sd = {}

    def param(name, shape, std, mean=0.0):
        sd[name] = torch.randn(*shape) * std + mean

    param("model.shared.weight", (V, D), 0.2)
    sd["final_logits_bias"] = torch.randn(1, V) * 0.5
    sd["final_logits_bias"][0, eos] -= 0.3
    for stack, n in (("encoder", ENC_LAYERS), ("decoder", DEC_LAYERS)):
        for i in range(n):
            p = f"model.{stack}.layers.{i}."
            for att in ("self_attn",) + (("encoder_attn",) if stack == "decoder" else ()):
                for proj, std in (("q_proj", 0.3), ("k_proj", 0.3), ("v_proj", 0.3), ("out_proj", 0.25)):
                    param(p + f"{att}.{proj}.weight", (D, D), std)
                    param(p + f"{att}.{proj}.bias", (D,), 0.1)
                param(p + f"{att}_layer_norm.weight", (D,), 0.1, 1.0)
                param(p + f"{att}_layer_norm.bias", (D,), 0.1)
            param(p + "fc1.weight", (FF, D), 0.3)
            param(p + "fc1.bias", (FF,), 0.1)
            param(p + "fc2.weight", (D, FF), 0.2)
            param(p + "fc2.bias", (D,), 0.1)
            param(p + "final_layer_norm.weight", (D,), 0.1, 1.0)
            param(p + "final_layer_norm.bias", (D,), 0.1)
    saved = dict(sd)
    saved["lm_head.weight"] = sd["model.shared.weight"].clone()
    saved["model.encoder.embed_positions.weight"] = sinusoids(MAX_POS, D)
    saved["model.decoder.embed_positions.weight"] = sinusoids(MAX_POS, D)
    write_safetensors(f"{OUT}/model.safetensors", [(n, saved[n]) for n in sorted(saved)])

    # the keys of opus-mt-en-fr's config.json (sizes scaled down)
    config = {
        "_name_or_path": "tiny-opus-mt-en-fr",
        "activation_dropout": 0.0,
        "activation_function": "swish",
        "add_bias_logits": False,
        "add_final_layer_norm": False,
        "architectures": ["MarianMTModel"],
        "attention_dropout": 0.0,
        "bad_words_ids": [[pad]],
        "bos_token_id": 0,
        "classif_dropout": 0.0,
        "classifier_dropout": 0.0,
        "d_model": D,
        "decoder_attention_heads": HEADS,
        "decoder_ffn_dim": FF,
        "decoder_layerdrop": 0.0,
        "decoder_layers": DEC_LAYERS,
        "decoder_start_token_id": pad,
        "decoder_vocab_size": V,
        "dropout": 0.1,
        "encoder_attention_heads": HEADS,
        "encoder_ffn_dim": FF,
        "encoder_layerdrop": 0.0,
        "encoder_layers": ENC_LAYERS,
        "eos_token_id": eos,
        "forced_eos_token_id": eos,
        "id2label": {"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"},
        "init_std": 0.02,
        "is_encoder_decoder": True,
        "label2id": {"LABEL_0": 0, "LABEL_1": 1, "LABEL_2": 2},
        "max_length": MAX_LENGTH,
        "max_position_embeddings": MAX_POS,
        "model_type": "marian",
        "normalize_before": False,
        "normalize_embedding": False,
        "num_beams": 4,
        "num_hidden_layers": ENC_LAYERS,
        "pad_token_id": pad,
        "scale_embedding": True,
        "share_encoder_decoder_embeddings": True,
        "static_position_embeddings": True,
        "torch_dtype": "float32",
        "transformers_version": "4.40.0",
        "use_cache": True,
        "vocab_size": V,
    }
    with open(f"{OUT}/config.json", "w") as fh:
        json.dump(config, fh, indent=2)
        fh.write("\n")
    with open(f"{OUT}/generation_config.json", "w") as fh:
        json.dump({"bad_words_ids": [[pad]], "bos_token_id": 0, "decoder_start_token_id": pad,
                   "eos_token_id": eos, "forced_eos_token_id": eos, "max_length": MAX_LENGTH,
                   "num_beams": 4, "pad_token_id": pad, "transformers_version": "4.40.0"}, fh, indent=2)
        fh.write("\n")
    with open(f"{OUT}/tokenizer_config.json", "w") as fh:
        json.dump({"eos_token": "</s>", "model_max_length": 512, "pad_token": "<pad>",
                   "separate_vocabs": False, "source_lang": "en", "sp_model_kwargs": {},
                   "target_lang": "fr", "tokenizer_class": "MarianTokenizer", "unk_token": "<unk>"}, fh,
                  indent=2)
        fh.write("\n")
    with open(f"{OUT}/vocab.json", "w", encoding="utf-8") as fh:
        json.dump(vocab, fh, ensure_ascii=False, indent=2)
        fh.write("\n")

    cases = []
    for n, (text, target) in enumerate(zip(SOURCES, TARGETS)):
        src = ids_of(f"{OUT}/source.spm", text) + [eos]
        labels = ids_of(f"{OUT}/target.spm", target) + [eos]
        dec = [pad] + labels[:-1]
        with torch.no_grad():
            mem = encode(sd, torch.tensor(src))
            logits = decode(sd, mem, torch.tensor(dec))
            case = {"source": text, "src": src, "target": target, "dec": dec, "labels": labels,
                    "greedy": greedy(sd, mem, pad, eos)}
            for lp in (1.0, 0.6):
                ids, score = beam_search(sd, mem, pad, eos, 4, lp)
                case[f"beam4_lp{lp}"] = ids
                case[f"beam4_lp{lp}_score"] = score
        if n == 0:
            case["logits"] = logits.tolist()
            leaf = {k: v.clone().requires_grad_(True) for k, v in sd.items()}
            out = decode(leaf, encode(leaf, torch.tensor(src)), torch.tensor(dec))
            loss = torch.nn.functional.cross_entropy(out, torch.tensor(labels))
            loss.backward()
            case["loss"] = loss.item()
            case["grads"] = {k: leaf[k].grad.reshape(-1).tolist() for k in (
                "final_logits_bias", "model.shared.weight", "model.encoder.layers.0.fc1.weight",
                "model.decoder.layers.1.encoder_attn.k_proj.weight",
                "model.decoder.layers.0.self_attn.q_proj.bias")}
        cases.append(case)
    ref = {"vocab_size": V, "pad": pad, "eos": eos, "max_length": MAX_LENGTH, "cases": cases}
    with open(f"{OUT}/reference.json", "w") as fh:
        json.dump(ref, fh, ensure_ascii=False)
        fh.write("\n")
    for c in cases:
        print(c["src"], "greedy", c["greedy"], "\n  beam 1.0", c["beam4_lp1.0"], "%.4f" % c["beam4_lp1.0_score"],
              "\n  beam 0.6", c["beam4_lp0.6"], "%.4f" % c["beam4_lp0.6_score"])
    total = sum(os.path.getsize(f"{OUT}/{n}") for n in os.listdir(OUT))
    print(f"vocab {V}, fixture {total} bytes in {OUT}")


if __name__ == "__main__":
    main()
