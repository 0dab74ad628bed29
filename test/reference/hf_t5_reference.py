#!/usr/bin/python3
"""hf_t5_reference.py — two small random T5 models (T5ForConditionalGeneration)
as Hugging Face saves them, and their outputs, for tfm_import's T5 tests
(test/unit/test_t5.c, test/regress/sql/import_t5.sql).

Written from the published T5 description (Hugging Face's modeling_t5.py and
configuration_t5.py; no transformers, no safetensors package):
  embeddings    shared.weight (V, d), no scale, no positions; encoder and
                decoder read the same table
  T5LayerNorm   y = w · x / √(mean(x²) + eps): no mean, no bias
  attention     q, k, v, o without biases, heads d_kv wide (num_heads · d_kv
                need not be d_model), scores q·kᵀ NOT scaled by 1/√d_kv, plus
                a position bias computed in the first layer of each stack from
                relative_attention_bias (num_buckets, heads) and shared by its
                layers: bucket(key − query), bidirectional in the encoder,
                looking back only in the decoder's self-attention; none in
                the cross-attention.  Masks: the encoder's pads (keys of the
                encoder's self-attention and the cross-attention), causal in
                the decoder (its keys are not masked by id: it starts from
                the pad id)
  blocks        pre-norm: x += SelfAttn(LN(x)); [x += CrossAttn(LN(x), enc)];
                x += FF(LN(x)); then final_layer_norm on each stack
  feed-forward  relu: wo(relu(wi(x))) (T5 v1.0); gated-gelu: wo(gelu_new(wi_0(x))
                · wi_1(x)) (T5 v1.1, Flan-T5, mT5), gelu_new the tanh form
  head          tie_word_embeddings (v1.0): logits = (h · d^-0.5) · sharedᵀ;
                untied (v1.1): logits = h · lm_head.weightᵀ
  generation    decoder_start_token_id = pad = 0, eos 1

Fixtures (F32, written to test/fixtures/NAME/):
  hf_t5      T5 v1.0: relu, tied, d 32, 3 heads of d_kv 12 (36 ≠ 32),
             d_ff 40, 2 + 2 layers, 16 buckets, max_distance 12 (short
             inputs reach the logarithmic buckets)
  hf_t5_v11  T5 v1.1 / Flan-T5: gated-gelu, untied lm_head, d 32, 4 heads of
             d_kv 8, d_ff 48, 3 encoder + 2 decoder layers (num_decoder_layers),
             32 buckets, max_distance 128 (the published values)
Each directory: config.json, model.safetensors (as save_pretrained writes
it: shared.weight, the blocks, lm_head.weight only when untied; no
encoder/decoder.embed_tokens copies), tokenizer.json (test/fixtures/tokenizer/
unigram/uni_t5.json: spm_train's Unigram converted as T5Converter does, its
ids proven against sentencepiece by make_unigram_tokenizers.py),
reference.json (for test/regress/sql/import_t5.sql: the sources' texts and ids, the
greedy ids, the beams' ids and scores), reference.bin (TFMFIX01,
test/reference/README.md):
  buckets_bi, buckets_causal (1201)  bucket of rel = −600 .. 600 (torch's float32)
  src (2, Ts) int32      two sources, SentencePiece ids + </s>, padded with 0
  dec (2, Tt) int32      decoder inputs: 0, then ids (the second ends in pads)
  tgt (2, Tt) int32      the targets (dec shifted; 0 = pad, ignored)
  logits (2, Tt, V)      teacher-forced logits
  loss ()                mean cross-entropy over the non-pad targets
  greedy_N (n) int32     greedy ids for source N alone (no </s>), at most 12
  beam_N_K (n) int32     beam search as HF's generate (num_beams 3,
                         length_penalty, early_stopping False, max_new_tokens
                         12, its BeamHypotheses rules): the K-th best of 3,
                         without the start token and </s>
  beam_N_scores (3)      their length-normalised scores
  length_penalty ()      the beam's length penalty
Both searches never produce the pad id (as HF's generate with
suppress_tokens=[0]: its log-probability set to −inf after the log-softmax);
tfm never produces a model's pad (its decoder start) either.

Run: /usr/bin/python3 test/reference/hf_t5_reference.py (from the repository root).
"""
import json
import math
import os
import shutil
import struct
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_llama_reference as L  # noqa: E402  (the safetensors writer)

torch.set_num_threads(1)
TOKENIZER = "test/fixtures/tokenizer/unigram/uni_t5.json"
CASES = "test/fixtures/tokenizer/unigram/uni_t5.cases.tsv"
V = 1016        # the tokenizer's 1010 ids, padded as T5's 32100 are to 32128
PAD, EOS = 0, 1
MAX_NEW = 12
NUM_BEAMS = 3

MODELS = {
    "hf_t5": dict(d_model=32, d_kv=12, num_heads=3, d_ff=40, num_layers=2, num_decoder_layers=2,
                  relative_attention_num_buckets=16, relative_attention_max_distance=12,
                  feed_forward_proj="relu", tie_word_embeddings=True, seed=20261126,
                  length_penalty=1.0, eos_boost=3.0, emb_norm=8.0, out_gain=4.0),
    "hf_t5_v11": dict(d_model=32, d_kv=8, num_heads=4, d_ff=48, num_layers=3, num_decoder_layers=2,
                      relative_attention_num_buckets=32, relative_attention_max_distance=128,
                      feed_forward_proj="gated-gelu", tie_word_embeddings=False, seed=20261127,
                      length_penalty=0.6, eos_boost=1.6, emb_norm=8.0, out_gain=4.0),
}
EPS = 1e-6


def bucket(rel, bidirectional, num_buckets, max_distance):
    """T5Attention._relative_position_bucket, in torch as published"""
    rb = torch.zeros_like(rel)
    if bidirectional:
        num_buckets //= 2
        rb += (rel > 0).to(torch.long) * num_buckets
        rel = torch.abs(rel)
    else:
        rel = -torch.min(rel, torch.zeros_like(rel))
    max_exact = num_buckets // 2
    is_small = rel < max_exact
    large = max_exact + (torch.log(rel.float() / max_exact) / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    return rb + torch.where(is_small, rel, large)


class T5:
    def __init__(self, cfg, sd):
        self.c, self.sd = cfg, sd

    def ln(self, x, name):
        var = x.pow(2).mean(-1, keepdim=True)
        return self.sd[name] * (x * torch.rsqrt(var + EPS))

    def bias(self, stack, q_len, k_len, q0=0):
        c = self.c
        ctx = torch.arange(q0, q0 + q_len)[:, None]
        mem = torch.arange(k_len)[None, :]
        b = bucket(mem - ctx, stack == "encoder", c["relative_attention_num_buckets"],
                   c["relative_attention_max_distance"])
        table = self.sd[f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight"]
        return table[b].permute(2, 0, 1).unsqueeze(0)      # (1, h, q, k)

    def attn(self, x, kv, p, bias, mask):
        c, sd = self.c, self.sd
        B, Tq, _ = x.shape
        Tk = kv.shape[1]
        h, s = c["num_heads"], c["d_kv"]
        q = (x @ sd[p + "q.weight"].T).view(B, Tq, h, s).transpose(1, 2)
        k = (kv @ sd[p + "k.weight"].T).view(B, Tk, h, s).transpose(1, 2)
        v = (kv @ sd[p + "v.weight"].T).view(B, Tk, h, s).transpose(1, 2)
        scores = q @ k.transpose(-1, -2)                    # no 1/sqrt(d_kv)
        if bias is not None:
            scores = scores + bias
        scores = scores + mask
        w = torch.softmax(scores.float(), dim=-1)
        o = (w @ v).transpose(1, 2).reshape(B, Tq, h * s)
        return o @ sd[p + "o.weight"].T

    def ff(self, x, p):
        sd = self.sd
        if self.c["feed_forward_proj"] == "gated-gelu":
            g = x @ sd[p + "wi_0.weight"].T
            g = 0.5 * g * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (g + 0.044715 * torch.pow(g, 3.0))))
            hdn = g * (x @ sd[p + "wi_1.weight"].T)
        else:
            hdn = torch.relu(x @ sd[p + "wi.weight"].T)
        return hdn @ sd[p + "wo.weight"].T

    def encode(self, src):
        c, sd = self.c, self.sd
        x = sd["shared.weight"][src]
        T = src.shape[1]
        mask = ((src == PAD).float() * torch.finfo(torch.float32).min)[:, None, None, :]
        bias = self.bias("encoder", T, T)
        for i in range(c["num_layers"]):
            p = f"encoder.block.{i}.layer."
            x = x + self.attn(self.ln(x, p + "0.layer_norm.weight"), self.ln(x, p + "0.layer_norm.weight"),
                              p + "0.SelfAttention.", bias, mask)
            x = x + self.ff(self.ln(x, p + "1.layer_norm.weight"), p + "1.DenseReluDense.")
        return self.ln(x, "encoder.final_layer_norm.weight"), mask

    def decode(self, dec, enc, enc_mask):
        """logits of every decoder position (recomputed from the start: no cache)"""
        c, sd = self.c, self.sd
        x = sd["shared.weight"][dec]
        T = dec.shape[1]
        causal = torch.triu(torch.full((T, T), torch.finfo(torch.float32).min), 1)[None, None]
        bias = self.bias("decoder", T, T)
        for i in range(c["num_decoder_layers"]):
            p = f"decoder.block.{i}.layer."
            u = self.ln(x, p + "0.layer_norm.weight")
            x = x + self.attn(u, u, p + "0.SelfAttention.", bias, causal)
            x = x + self.attn(self.ln(x, p + "1.layer_norm.weight"), enc, p + "1.EncDecAttention.",
                              None, enc_mask)
            x = x + self.ff(self.ln(x, p + "2.layer_norm.weight"), p + "2.DenseReluDense.")
        x = self.ln(x, "decoder.final_layer_norm.weight")
        if c["tie_word_embeddings"]:
            return (x * c["d_model"] ** -0.5) @ sd["shared.weight"].T
        return x @ sd["lm_head.weight"].T


def step_logprobs(model, enc, mask, ids):
    """log-softmax of the last position's logits, the pad suppressed after it"""
    lp = torch.log_softmax(model.decode(ids, enc, mask)[:, -1, :].float(), dim=-1)
    lp[:, PAD] = -float("inf")
    return lp


def greedy(model, src):
    enc, mask = model.encode(src[None])
    ids = torch.tensor([[PAD]])
    out = []
    for _ in range(MAX_NEW):
        t = int(step_logprobs(model, enc, mask, ids)[0].argmax())
        if t == EOS:
            break
        out.append(t)
        ids = torch.cat([ids, torch.tensor([[t]])], 1)
    return out


class Hyps:
    """BeamHypotheses: the num_beams best finished, score = logprob / len^lp"""

    def __init__(self, n, lp):
        self.n, self.lp, self.beams, self.worst = n, lp, [], 1e9

    def add(self, ids, logprob, generated_len):
        score = logprob / (generated_len ** self.lp)
        if len(self.beams) < self.n or score > self.worst:
            self.beams.append((score, ids))
            if len(self.beams) > self.n:
                order = sorted((s, i) for i, (s, _) in enumerate(self.beams))
                del self.beams[order[0][1]]
                self.worst = order[1][0]
            else:
                self.worst = min(score, self.worst)

    def is_done(self, best_logprob, cur_len):
        # early_stopping False: can the best candidate still beat the worst kept?
        if len(self.beams) < self.n:
            return False
        return self.worst >= best_logprob / ((cur_len - 1) ** self.lp)


def beam_search(model, src, K, lp):
    """GenerationMixin._beam_search with BeamSearchScorer (transformers 4.3x-4.4x),
    one source, as Hugging Face runs it for an encoder-decoder (decoder prompt:
    the start id): the 2K best extensions over all beams; a </s> among the first
    K ends a hypothesis of generated_len = cur_len - 1 (the tokens after the
    start id, </s> counted); done (early_stopping False) when K are finished and
    the best extension / (cur_len - 1)^lp cannot beat the worst; at max length
    the live beams join with generated_len = their tokens after the start id"""
    enc, mask = model.encode(src[None])
    enc, mask = enc.expand(K, -1, -1), mask.expand(K, -1, -1, -1)
    ids = torch.full((K, 1), PAD)
    scores = torch.full((K,), -1e9)
    scores[0] = 0.0
    hyps = Hyps(K, lp)
    done = False
    for step in range(MAX_NEW):
        cand = step_logprobs(model, enc, mask, ids) + scores[:, None]
        top_s, top_i = torch.topk(cand.view(-1), 2 * K, largest=True, sorted=True)
        cur_len = ids.shape[1] + 1      # the length these scores are for, start id included
        nxt = []
        for rank, (s, i) in enumerate(zip(top_s.tolist(), top_i.tolist())):
            b, t = i // V, i % V
            if t == EOS:
                if rank >= K:
                    continue
                hyps.add(ids[b, 1:].tolist(), s, cur_len - 1)
            else:
                nxt.append((s, b, t))
            if len(nxt) == K:
                break
        done = hyps.is_done(top_s[0].item(), cur_len)
        ids = torch.cat([ids[[b for _, b, _ in nxt]], torch.tensor([[t] for _, _, t in nxt])], 1)
        scores = torch.tensor([s for s, _, _ in nxt])
        if done:
            break
    if not done:
        for b in range(K):
            hyps.add(ids[b, 1:].tolist(), scores[b].item(), ids.shape[1] - 1)
    return sorted(hyps.beams, key=lambda x: -x[0])


def cases():
    """(text, SentencePiece ids + </s>) of the tokenizer's mixed texts"""
    rows = []
    for line in open(CASES, encoding="utf-8"):
        f = line.rstrip("\n").split("\t")
        rows.append((bytes.fromhex(f[1]).decode(), [int(x) for x in f[2].split()]))
    return rows


def make_weights(c, gen):
    d, h, s, f = c["d_model"], c["num_heads"], c["d_kv"], c["d_ff"]
    inner = h * s
    sd = {}

    def p(name, shape, std, mean=0.0):
        sd[name] = torch.randn(*shape, generator=gen) * std + mean

    p("shared.weight", (V, d), 1.0)
    # rows of one norm, small beside the sub-layers' outputs: no token dominates a tied
    # head through its norm, nor by being the input the residual stream carries
    sd["shared.weight"] *= c["emb_norm"] / sd["shared.weight"].norm(dim=1, keepdim=True)
    # </s> more likely than a random row, so that searches finish at various steps
    sd["shared.weight"][EOS] *= c["eos_boost"]
    gated = c["feed_forward_proj"] == "gated-gelu"
    for stack, layers in (("encoder", c["num_layers"]), ("decoder", c["num_decoder_layers"])):
        for i in range(layers):
            pre = f"{stack}.block.{i}.layer."
            subs = ["0.SelfAttention."] + (["1.EncDecAttention."] if stack == "decoder" else [])
            for k, sub in enumerate(subs):
                for m in "qkv":
                    p(pre + sub + m + ".weight", (inner, d), d ** -0.5)
                p(pre + sub + "o.weight", (d, inner), c["out_gain"] * inner ** -0.5)
                p(pre + f"{k}.layer_norm.weight", (d,), 0.2, 1.0)
                if i == 0 and k == 0:
                    p(pre + sub + "relative_attention_bias.weight",
                      (c["relative_attention_num_buckets"], h), 1.0)
            k = len(subs)
            ffp = pre + f"{k}.DenseReluDense."
            if gated:
                p(ffp + "wi_0.weight", (f, d), d ** -0.5)
                p(ffp + "wi_1.weight", (f, d), d ** -0.5)
            else:
                p(ffp + "wi.weight", (f, d), d ** -0.5)
            p(ffp + "wo.weight", (d, f), c["out_gain"] * f ** -0.5)
            p(pre + f"{k}.layer_norm.weight", (d,), 0.2, 1.0)
        p(f"{stack}.final_layer_norm.weight", (d,), 0.2, 1.0)
    if not c["tie_word_embeddings"]:
        p("lm_head.weight", (V, d), d ** -0.5)
        sd["lm_head.weight"][EOS] *= c["eos_boost"]
    return sd


def config_json(c):
    return {
        "architectures": ["T5ForConditionalGeneration"],
        "model_type": "t5",
        "vocab_size": V,
        "d_model": c["d_model"],
        "d_kv": c["d_kv"],
        "d_ff": c["d_ff"],
        "num_layers": c["num_layers"],
        "num_decoder_layers": c["num_decoder_layers"],
        "num_heads": c["num_heads"],
        "relative_attention_num_buckets": c["relative_attention_num_buckets"],
        "relative_attention_max_distance": c["relative_attention_max_distance"],
        "dropout_rate": 0.1,
        "layer_norm_epsilon": EPS,
        "initializer_factor": 1.0,
        "feed_forward_proj": c["feed_forward_proj"],
        "is_encoder_decoder": True,
        "use_cache": True,
        "pad_token_id": PAD,
        "eos_token_id": EOS,
        "decoder_start_token_id": PAD,
        "tie_word_embeddings": c["tie_word_embeddings"],
        "torch_dtype": "float32",
    }


def write_bin(path, records):
    with open(path, "wb") as fh:
        fh.write(b"TFMFIX01")
        for name, t in records:
            t = t.contiguous()
            nb = name.encode()
            fh.write(struct.pack("<I", len(nb)) + nb)
            fh.write(struct.pack("<II", 1 if t.dtype in (torch.int32, torch.int64) else 0, t.dim()))
            for dd in t.shape:
                fh.write(struct.pack("<I", dd))
            fh.write((t.to(torch.int32) if t.dtype in (torch.int32, torch.int64) else t.float()).numpy().tobytes())


def build(name, c):
    gen = torch.Generator().manual_seed(c["seed"])
    sd = make_weights(c, gen)
    model = T5(c, sd)
    out = os.path.join("test/fixtures", name)
    os.makedirs(out, exist_ok=True)
    cs = cases()
    texts = [cs[1][0], cs[0][0]]
    srcs = [cs[1][1], cs[0][1]]           # "The quick brown fox ..." (21 ids), "Hello world" (5)
    Ts = max(len(x) for x in srcs)
    src = torch.tensor([x + [PAD] * (Ts - len(x)) for x in srcs])
    tg = [[int(t) for t in torch.randint(2, V, (8,), generator=gen)],
          [int(t) for t in torch.randint(2, V, (5,), generator=gen)] + [EOS]]
    Tt = max(len(x) for x in tg)
    tgt = torch.tensor([x + [PAD] * (Tt - len(x)) for x in tg])
    dec = torch.cat([torch.full((2, 1), PAD), tgt[:, :-1]], 1)
    enc, mask = model.encode(src)
    logits = model.decode(dec, enc, mask)
    keep = tgt != PAD
    loss = torch.nn.functional.cross_entropy(logits[keep], tgt[keep])
    recs = [("buckets_bi", bucket(torch.arange(-600, 601), True, c["relative_attention_num_buckets"],
                                  c["relative_attention_max_distance"])),
            ("buckets_causal", bucket(torch.arange(-600, 601), False, c["relative_attention_num_buckets"],
                                      c["relative_attention_max_distance"])),
            ("src", src), ("dec", dec), ("tgt", tgt), ("logits", logits.detach()),
            ("loss", loss.detach().reshape(())), ("length_penalty", torch.tensor(c["length_penalty"]))]
    summary = []
    js = {"sources": texts, "source_ids": srcs, "length_penalty": c["length_penalty"],
          "num_beams": NUM_BEAMS, "max_new_tokens": MAX_NEW, "greedy": [], "beams": [], "scores": []}
    for n, s in enumerate(srcs):
        g = greedy(model, torch.tensor(s))
        recs.append((f"greedy_{n}", torch.tensor(g, dtype=torch.int32)))
        beams = beam_search(model, torch.tensor(s), NUM_BEAMS, c["length_penalty"])
        js["greedy"].append(g)
        js["beams"].append([b[1] for b in beams])
        js["scores"].append([round(b[0], 6) for b in beams])
        for k, (score, ids) in enumerate(beams):
            recs.append((f"beam_{n}_{k}", torch.tensor(ids, dtype=torch.int32)))
        recs.append((f"beam_{n}_scores", torch.tensor([b[0] for b in beams])))
        summary.append((g, [(round(b[0], 4), len(b[1])) for b in beams]))
    write_bin(os.path.join(out, "reference.bin"), recs)
    with open(os.path.join(out, "reference.json"), "w") as fh:
        json.dump(js, fh, ensure_ascii=False)
        fh.write("\n")
    tensors = [(k, v.contiguous()) for k, v in sd.items()]
    L.write_safetensors(os.path.join(out, "model.safetensors"), tensors, {"format": "pt"})
    with open(os.path.join(out, "config.json"), "w") as fh:
        json.dump(config_json(c), fh, indent=2)
        fh.write("\n")
    shutil.copyfile(TOKENIZER, os.path.join(out, "tokenizer.json"))
    print(name, "loss", round(loss.item(), 5))
    for g, b in summary:
        print("  greedy", g, "beams (score, length)", b)


def main():
    for name, c in MODELS.items():
        build(name, c)


if __name__ == "__main__":
    main()
