/*
 * test_gguf.c: unit tests of the GGUF reader and llama import
 * (include/tfm/gguf.h) on the fixtures of test/reference/make_gguf_fixtures.py.
 *
 *   - every tensor of every fixture (F32, F16, BF16, Q8_0, Q4_0, Q4_K,
 *     Q6_K) converted as the Hugging Face tensor (q and k rows un-permuted):
 *     the FNV-1a hash of its float32 values equals the Python reference's
 *   - llama_f32.gguf imports as test/fixtures/hf_llama and gpt2_f32.gguf as
 *     hf_gpt2: every parameter equal bit for bit; the other files'
 *     log-probabilities within a stated bound of their safetensors twin's
 *     (F16/BF16: hf_llama; the block types: gguf/q/model.safetensors;
 *     gpt2_q8_0.gguf, untied: hf_gpt2)
 *   - llama3_rope.gguf's rope_freqs.weight read as Llama 3.1's rope scaling
 *     (test_rope_freqs); phi3_f32.gguf's rope: test_gguf_phi3.c
 *   - Q4_0 tensors kept as the file's blocks for int4 (test_kept)
 *   - the tokenizers of the metadata give their tokenizer.json's ids: a
 *     "llama" one (scores made merges) hf_llama/reference.json's texts, a
 *     "gpt2" one (llama3_tok.gguf) test/fixtures/tokenizer/hf/llama3.cases.tsv's
 *   - refusals with their messages; fuzzing, seeded: truncation at every
 *     length of the header and at boundaries of the data, byte flips, huge
 *     counts, lengths and offsets written over each 8-byte field; every case
 *     parsed from an exactly sized copy (valgrind sees any over-read) and,
 *     when it parses, imported (its blocks kept, run one step at gguf
 *     where it keeps any) and its tokenizer read: an error must carry a
 *     message, never a crash.
 *
 * TFM_TEST_QUICK=1 shrinks the fuzzing (for valgrind).
 */
#define _GNU_SOURCE				/* memmem */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gguf_keep.h"
#include "tfm/decode.h"
#include "tfm/gguf.h"
#include "tfm/hf_map.h"
#include "tfm/hf_import.h"
#include "tfm/lowp.h"
#include "tfm/rng.h"
#include "tfm/tokenizer.h"

static uint64_t
fnv(const float *x, uint64_t n)
{
	const uint8_t *p = (const uint8_t *) x;
	uint64_t	h = 0xcbf29ce484222325ull;

	for (uint64_t i = 0; i < n * 4; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static tfm_model *
import_gguf(const uint8_t *buf, size_t len, tfm_hf_params *p, tfm_status *st)
{
	return import_gguf_keep(buf, len, p, st, false);
}

/* a safetensors twin directory as a model (Llama of params p) */
static tfm_model *
import_twin(const char *file, const tfm_hf_params *p)
{
	size_t		len;
	uint8_t    *w = check_fixture(file, &len);
	tfm_st_file *f;
	tfm_status	st = {0};
	tfm_config	c;
	tfm_model  *m;
	tfm_hf_map *map;
	char		err[512] = "";

	CHECK(w != NULL, "%s is missing", file);
	if (!w)
		return NULL;
	CHECK(tfm_hf_config(&c, p) == NULL, "twin config");
	CHECK(tfm_st_parse(&f, w, len, &st) == TFM_OK, "%s", st.msg);
	m = tfm_model_create(&c);
	map = tfm_hf_map_create(p->arch, &c);
	for (size_t i = 0; i < f->n_tensors; i++)
	{
		tfm_hf_entry *e = tfm_hf_match(map, f->tensors[i].name, f->tensors[i].name_len);

		CHECK(e && tfm_hf_load_tensor(m, map, e, &f->tensors[i],
									  w + f->data_start + f->tensors[i].begin, err, sizeof(err)) == 0,
			  "twin %s: %s", f->tensors[i].name, err);
	}
	CHECK(tfm_hf_finish(m, map, err, sizeof(err)) == 0, "%s", err);
	tfm_hf_map_free(map);
	tfm_st_free(f);
	free(w);
	return m;
}

/* the largest |log-probability difference| of two models over one input */
static double
logprob_gap(tfm_model *a, tfm_model *b)
{
	int32_t		ids[9] = {1, 330, 348, 347, 351, 330, 259, 272, 331};
	tfm_batch	bt = {0};
	int			V = a->cfg.vocab;
	float	   *la = malloc(sizeof(float) * 9 * V),
			   *pa = malloc(sizeof(float) * V),
			   *pb = malloc(sizeof(float) * V);
	double		worst = 0.0;

	for (int t = 0; t < 9; t++)
		ids[t] %= V;			/* (GPT-2's vocabulary is smaller) */
	bt.B = 1;
	bt.T = 9;
	bt.input = ids;
	if (tfm_model_forward(a, &bt, false, 0) != 0 || tfm_model_forward(b, &bt, false, 0) != 0)
	{
		CHECK(0, "forward");
		free(la);
		free(pa);
		free(pb);
		return INFINITY;
	}
	memcpy(la, a->logits, sizeof(float) * 9 * V);
	for (int t = 0; t < 9; t++)
	{
		tfm_log_softmax(pa, la + (size_t) t * V, V);
		tfm_log_softmax(pb, b->logits + (size_t) t * V, V);
		for (int v = 0; v < V; v++)
			worst = fmax(worst, fabs(pa[v] - pb[v]));
	}
	free(la);
	free(pa);
	free(pb);
	return worst;
}

/* ---- each tensor against the Python reference's dequantization ---- */
static void
test_reference_hashes(void)
{
	size_t		rlen;
	char	   *ref = (char *) check_fixture("gguf/reference.txt", &rlen);
	char	   *line,
			   *save = NULL;
	char		cur[64] = "";
	uint8_t    *buf = NULL;
	size_t		len = 0;
	tfm_gguf_file *f = NULL;
	tfm_hf_params p;
	int64_t		capped;
	int			n = 0;
	tfm_status	st = {0};

	CHECK(ref != NULL, "gguf/reference.txt is missing");
	if (!ref)
		return;
	for (line = strtok_r(ref, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
	{
		char		file[64],
					tname[96];
		unsigned long long want,
					nv;
		const tfm_gguf_tensor *t = NULL;

		if (sscanf(line, "%63s %95s %llx %llu", file, tname, &want, &nv) != 4)
			continue;
		if (strcmp(file, cur) != 0)
		{
			char		rel[128];

			tfm_gguf_free(f);
			free(buf);
			snprintf(rel, sizeof(rel), "gguf/%s", file);
			buf = check_fixture(rel, &len);
			f = NULL;
			CHECK(buf && tfm_gguf_parse(&f, buf, len, len, &st) == TFM_OK, "%s: %s", file, st.msg);
			CHECK(f && tfm_gguf_params(&p, &capped, f, &st) == TFM_OK, "%s: %s", file, st.msg);
			snprintf(cur, sizeof(cur), "%s", file);
		}
		for (uint64_t i = 0; f && i < f->n_tensors; i++)
			if (strcmp(f->tensors[i].name, tname) == 0)
				t = &f->tensors[i];
		CHECK(t != NULL, "%s: no tensor %s", file, tname);
		if (t)
		{
			float	   *v = malloc(sizeof(float) * t->n_values);
			tfm_st_tensor sh;

			CHECK(tfm_gguf_tensor_f32(v, &sh, t, buf + f->data_start + t->offset, &p, &st) == 0,
				  "%s %s: %s", file, tname, st.msg);
			CHECK(t->n_values == nv && fnv(v, nv) == want,
				  "%s %s: dequantized values differ from the Python reference's", file, tname);
			free(v);
			n++;
		}
	}
	printf("GGUF tensors equal to the Python reference's dequantization: %d\n", n);
	CHECK(n >= 7 * 8 + 11 + 2 * 26, "only %d tensors checked", n);
	tfm_gguf_free(f);
	free(buf);
	free(ref);
}

/*
 * llama3_rope.gguf's rope_freqs.weight (Llama 3.1's divisors as llama.cpp's
 * converter writes them; original context 32 in its metadata): read as rope
 * scaling with factor 8 (its last value); a value changed is refused naming it
 */
static void
test_rope_freqs(void)
{
	size_t		len;
	uint8_t    *buf = check_fixture("gguf/llama3_rope.gguf", &len);
	tfm_gguf_file *f = NULL;
	tfm_hf_params p;
	int64_t		capped;
	tfm_status	st = {0};
	const tfm_gguf_tensor *t = NULL;
	float		ff[8];

	CHECK(buf && tfm_gguf_parse(&f, buf, len, len, &st) == TFM_OK, "llama3_rope.gguf: %s", st.msg);
	CHECK(f && tfm_gguf_params(&p, &capped, f, &st) == TFM_OK, "llama3_rope.gguf params: %s", st.msg);
	for (uint64_t i = 0; f && i < f->n_tensors; i++)
		if (strcmp(f->tensors[i].name, "rope_freqs.weight") == 0)
			t = &f->tensors[i];
	CHECK(t && t->n_values == 8, "rope_freqs.weight of 8 values");
	if (t && t->n_values == 8)
	{
		memcpy(ff, buf + f->data_start + t->offset, sizeof(ff));
		CHECK(p.rope_type == TFM_ROPE_LLAMA3 && p.rope_factor == 0.0f, "marked for the check");
		CHECK(tfm_gguf_rope_check(&p, ff, 8, &st) == TFM_OK && p.rope_factor == 8.0f &&
			  p.rope_low_freq == 1.0f && p.rope_high_freq == 4.0f && p.rope_orig_max == 32,
			  "llama3 scaling read: %s (factor %g)", st.msg, p.rope_factor);
		ff[1] *= 1.01f;
		CHECK(tfm_gguf_rope_check(&p, ff, 8, &st) == TFM_EUNSUPPORTED &&
			  strstr(st.msg, "value 1 is") != NULL, "a changed divisor refused: %s", st.msg);
		CHECK(tfm_gguf_rope_check(&p, ff, 7, &st) == TFM_EBADFILE, "a wrong count refused");
	}
	tfm_gguf_free(f);
	free(buf);
}

/* ---- whole files against their safetensors twins ---- */
static const tfm_hf_params hf_llama_params = {.arch = TFM_HF_LLAMA, .vocab = 376, .d_model = 48,
	.layers = 2, .heads = 4, .max_len = 128, .d_ff = 128, .ln_eps = 1e-6f, .tie = false,
.kv_heads = 2, .rope_theta = 10000.0f};
static const tfm_hf_params gpt2_params = {.arch = TFM_HF_GPT2, .vocab = 320, .d_model = 32,
	.layers = 2, .heads = 4, .max_len = 64, .d_ff = 0, .ln_eps = 1e-5f, .tie = true};
static const tfm_hf_params q_params = {.arch = TFM_HF_LLAMA, .vocab = 376, .d_model = 256,
	.layers = 1, .heads = 4, .max_len = 128, .d_ff = 256, .ln_eps = 1e-6f, .tie = true,
.kv_heads = 2, .rope_theta = 10000.0f};

static void
test_twins(void)
{
	static const struct
	{
		const char *file;
		int			twin;		/* 0 hf_llama, 1 gguf/q, 2 hf_gpt2 */
		double		bound;		/* max |log-prob difference| over 376 ids x 9
								 * positions: about 1.5 times what was measured */
	}			cases[] = {
		{"gguf/llama_f32.gguf", 0, 0.0},
		{"gguf/llama_f16.gguf", 0, 0.02},
		{"gguf/llama_bf16.gguf", 0, 0.15},
		{"gguf/llama_q8_0.gguf", 1, 0.1},
		{"gguf/llama_q4_0.gguf", 1, 1.8},
		{"gguf/llama_q4_k.gguf", 1, 1.5},
		{"gguf/llama_q6_k.gguf", 1, 0.3},
		{"gguf/gpt2_f32.gguf", 2, 0.0},
		{"gguf/gpt2_q8_0.gguf", 2, 0.07},	/* untied: output.weight repeats the head */
	};
	double		gaps[9] = {0};
	tfm_model  *twins[3] = {
		import_twin("hf_llama/model.safetensors", &hf_llama_params),
		import_twin("gguf/q/model.safetensors", &q_params),
		import_twin("hf_gpt2/model.safetensors", &gpt2_params),
	};

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
	{
		size_t		len;
		uint8_t    *buf = check_fixture(cases[k].file, &len);
		tfm_hf_params p;
		tfm_status	st = {0};
		tfm_model  *m = buf ? import_gguf(buf, len, &p, &st) : NULL;
		tfm_model  *twin = twins[cases[k].twin];
		double		gap;

		CHECK(m != NULL, "%s: %s", cases[k].file, buf ? st.msg : "missing");
		if (!m || !twin)
		{
			free(buf);
			continue;
		}
		CHECK(m->cfg.vocab == twin->cfg.vocab && m->cfg.d_model == twin->cfg.d_model &&
			  m->cfg.dec_layers == twin->cfg.dec_layers && m->cfg.kv_heads == twin->cfg.kv_heads &&
			  m->cfg.arch == twin->cfg.arch && m->cfg.d_ff == twin->cfg.d_ff &&
			  m->cfg.max_len == twin->cfg.max_len && m->cfg.activation == twin->cfg.activation &&
			  (k == 8 ? !m->cfg.tie : m->cfg.tie == twin->cfg.tie && m->n_params == twin->n_params),
			  "%s: not its twin's config", cases[k].file);
		if (cases[k].bound == 0.0)
			CHECK(m->n_params == twin->n_params &&
				  memcmp(m->params, twin->params, sizeof(float) * m->n_params) == 0,
				  "%s: parameters differ from the safetensors twin's", cases[k].file);
		gap = gaps[k] = logprob_gap(m, twin);
		printf("%-24s max |log-prob - twin's| = %.3g (bound %.3g)\n", cases[k].file, gap,
			   cases[k].bound);
		CHECK(gap <= cases[k].bound, "%s: log-probabilities %.3g from the twin's", cases[k].file, gap);
		tfm_model_free(m);
		free(buf);
	}
	/* more bits, closer: F16 < BF16, Q8_0 < Q6_K < Q4_K and Q4_0 */
	CHECK(gaps[1] < gaps[2] && gaps[3] < gaps[6] && gaps[6] < gaps[5] && gaps[6] < gaps[4],
		  "the gaps are not ordered by bits per weight");
	for (int t = 0; t < 3; t++)
		tfm_model_free(twins[t]);
}

/*
 * ---- Q4_0 kept as the file's blocks for int4 ----
 * llama_q4_0.gguf (every matrix Q4_0, tied): every matrix's columns kept;
 * packed for int4, the model holds each tensor's blocks byte for byte, moved
 * into the interleaved layout (q and k rows in Hugging Face's order); its int4 logits do not change when
 * its float32 matrices do (nothing is requantized from them) while a model
 * without the kept blocks changes, in batched passes and in decoding's
 * one-row products; and they are those of the float32 weights (the
 * blocks' exact dequantization): equal but for the order of BLIS's sums
 * in batched passes, within int4's activation rounding in decoding (and
 * in batched passes where a SIMD kernel quantizes them there too).  A
 * Q8_0 file keeps its blocks too (for gguf: test_gguf_kept.c).
 */
static void
test_kept(void)
{
	size_t		len,
				len8;
	uint8_t    *buf = check_fixture("gguf/llama_q4_0.gguf", &len),
			   *buf8 = check_fixture("gguf/llama_q8_0.gguf", &len8);
	tfm_hf_params p;
	tfm_status	st = {0};
	tfm_model  *a,
			   *b,
			   *c,
			   *f32,
			   *q8;
	tfm_gguf_file *f;
	const uint8_t *packed;
	int			found = 0,
				kept_tensors = 0;
	double		gap;
	int32_t		ids[9] = {1, 330, 348, 347, 351, 330, 259, 272, 331};
	tfm_batch	bt = {.B = 1, .T = 9, .input = ids};
	float	   *la;
	/* batched int4 products quantize the activations where a SIMD kernel runs */
	bool		a_quantized = strcmp(tfm_lowp_int4_kernel(), "fallback") != 0;

	if (!buf || !buf8)
	{
		CHECK(0, "the Q4_0 / Q8_0 fixtures are missing");
		return;
	}
	a = import_gguf_keep(buf, len, &p, &st, true);
	b = import_gguf_keep(buf, len, &p, &st, true);
	c = import_gguf_keep(buf, len, &p, &st, false);
	f32 = import_gguf_keep(buf, len, &p, &st, false);
	q8 = import_gguf_keep(buf8, len8, &p, &st, true);
	CHECK(a && b && c && f32 && q8, "import: %s", st.msg);
	if (!a || !b || !c || !f32 || !q8)
		return;
	/* qkv 256 + 128 + 128, out 256, gate + up 512, down 256, the tied head 376 */
	CHECK(tfm_model_int4_kept_columns(a) == 1912, "columns kept: %ld", tfm_model_int4_kept_columns(a));
	CHECK(tfm_model_int4_kept_columns(q8) == 1912, "a Q8_0 file keeps its blocks (for gguf): %ld",
		  tfm_model_int4_kept_columns(q8));
	CHECK(tfm_model_set_precision(a, TFM_PREC_INT4) == 0, "int4");
	packed = tfm_model_precision_block(a);
	CHECK(tfm_gguf_parse(&f, buf, len, len, &st) == 0, "%s", st.msg);
	for (uint64_t i = 0; i < f->n_tensors; i++)
	{
		const tfm_gguf_tensor *t = &f->tensors[i];
		int			heads = strstr(t->name, "attn_q") ? 4 : strstr(t->name, "attn_k") ? 2 : 0;
		uint8_t    *rows = malloc(t->bytes);

		if (t->type != 2)
		{
			free(rows);
			continue;
		}
		kept_tensors++;
		if (heads)
			tfm_gguf_unpermute_rows(rows, buf + f->data_start + t->offset, t->ne[1], t->bytes / t->ne[1], heads);
		else
			memcpy(rows, buf + f->data_start + t->offset, t->bytes);
		{
			/* the tensor's blocks in the interleaved layout: its nibbles and scales in the copies */
			int			K = (int) t->ne[0],
						N = (int) t->ne[1];
			size_t		pb = tfm_int4_pack_bytes(K, N);
			uint8_t    *il = aligned_alloc(64, pb);
			tfm_int4_weights w;

			memset(il, 0, pb);
			tfm_int4_view(&w, il, K, N);
			for (int j = 0; j < N; j++)
				for (int bl = 0; bl < w.kb; bl++)
					tfm_int4_put_block(&w, j, bl, rows + ((size_t) j * w.kb + bl) * TFM_INT4_BLOCK_BYTES);
			found += memmem(packed, tfm_model_precision_bytes(a), w.data, (uint8_t *) w.scales - w.data) &&
				memmem(packed, tfm_model_precision_bytes(a), w.scales,
					   (size_t) w.groups * w.kb * TFM_INT4_GROUP * 2);
			free(il);
		}
		free(rows);
	}
	CHECK(kept_tensors == 8 && found == 8, "%d of %d Q4_0 tensors found byte for byte in the int4 copies",
		  found, kept_tensors);
	tfm_gguf_free(f);

	/* the float32 matrices scaled: the kept model's int4 logits stay, the other's move */
	scale_matrices(b, 1.25f);
	scale_matrices(c, 1.25f);
	CHECK(tfm_model_set_precision(b, TFM_PREC_INT4) == 0 && tfm_model_set_precision(c, TFM_PREC_INT4) == 0,
		  "int4");
	la = malloc(sizeof(float) * 9 * a->cfg.vocab);
	/* 9 rows: the batched products (dequantized tiles); 1 row: decoding's int4 kernel */
	for (bt.T = 9; bt.T >= 1; bt.T -= 8)
	{
		size_t		n = sizeof(float) * bt.T * a->cfg.vocab;
		float		worst = 0.0f,
					bound = bt.T == 1 ? 0.05f : a_quantized ? 0.1f : 1e-4f;

		CHECK(tfm_model_forward(a, &bt, false, 0) == 0, "forward");
		memcpy(la, a->logits, n);
		CHECK(tfm_model_forward(b, &bt, false, 0) == 0 && memcmp(la, b->logits, n) == 0,
			  "%d rows: int4 logits of the kept blocks depend on the float32 matrices", bt.T);
		CHECK(tfm_model_forward(c, &bt, false, 0) == 0 && memcmp(la, c->logits, n) != 0,
			  "%d rows: int4 logits requantized from scaled matrices did not move", bt.T);
		/* the same weights in float32 (their exact dequantization) */
		CHECK(tfm_model_forward(f32, &bt, false, 0) == 0, "forward");
		for (size_t i = 0; i < n / sizeof(float); i++)
			worst = fmaxf(worst, fabsf(la[i] - f32->logits[i]));
		printf("llama_q4_0.gguf kept blocks at int4 (%s), %d rows: max |logit - float32's| = %.3g (bound %g)\n",
			   tfm_lowp_int4_kernel(), bt.T, worst, bound);
		/*
		 * batched: fp32 products of the dequantized blocks on the fallback,
		 * else quantized activations as in decoding
		 */
		CHECK(worst <= bound, "%d rows: int4 logits %.3g from float32's", bt.T, worst);
	}
	/* the log-probabilities over 9 positions, as the twins' above */
	gap = logprob_gap(a, f32);
	CHECK(gap <= (a_quantized ? 0.1 : 1e-4), "int4 log-probabilities %.3g from float32's", gap);
	/* keeping none: requantized int4 copies again */
	CHECK(tfm_model_keep_int4(a, NULL, 0) == 0 && tfm_model_int4_kept_columns(a) == 0 &&
		  tfm_model_precision(a) == TFM_PREC_FP32, "dropping the kept blocks");
	free(la);
	tfm_model_free(a);
	tfm_model_free(b);
	tfm_model_free(c);
	tfm_model_free(f32);
	tfm_model_free(q8);
	free(buf);
	free(buf8);
}

/* ---- the tokenizer of the metadata ---- */
static void
test_tokenizer(void)
{
	static const char *texts[] = {
		"Hello world", "the cat sat on the mat.", "The sea rose, then the wind came!",
		"  two leading spaces and  a double", "quiz: xyz",
		"na\xc3\xafve caf\xc3\xa9 \xe2\x80\x94 \xe6\x9d\xb1\xe4\xba\xac \xf0\x9f\x99\x82",
		"line\nbreak\ttab", "<s> is plain text here", "", " ", "Hello",
	};
	size_t		len,
				rlen;
	uint8_t    *buf = check_fixture("gguf/llama_f32.gguf", &len);
	char	   *ref = (char *) check_fixture("hf_llama/reference.json", &rlen);
	tfm_gguf_file *f = NULL;
	tfm_gguf_vocab *v = NULL;
	tfm_tokenizer *tok = NULL;
	tfm_status	st = {0};
	const char *p;
	int			same = 0;

	CHECK(buf && ref, "fixtures missing");
	if (!buf || !ref)
		return;
	CHECK(tfm_gguf_parse(&f, buf, len, len, &st) == 0, "%s", st.msg);
	CHECK(tfm_gguf_vocab_read(&v, f, 376, &st) == 0, "%s", st.msg);
	CHECK(v && v->n == 376 && v->unk == 0 && v->bos == 1 && v->eos == 2 && v->add_bos,
		  "the metadata's vocabulary");
	CHECK(tfm_tok_import_spiece(&tok, v->pieces, v->lens, v->n, v->merge_lr, v->n_merges,
								v->unk, v->bos, v->eos, v->add_bos ? TFM_TOK_INFO_TEXT_BOS : 0, &st) == 0, "%s", st.msg);
	p = strstr(ref, "\"texts\"");
	for (size_t i = 0; tok && p && i < sizeof(texts) / sizeof(texts[0]); i++)
	{
		int32_t		ids[256],
					want[256];
		size_t		n = 0,
					nw = 0;

		p = strstr(p, "\"ids\": [");
		if (!p)
			break;
		p += 8;
		while (*p != ']')
		{
			char	   *end;

			want[nw++] = (int32_t) strtol(p, &end, 10);
			p = end;
			while (*p == ',' || *p == ' ')
				p++;
		}
		CHECK(tfm_tok_encode(ids, NULL, 256, &n, tok, texts[i], strlen(texts[i]), 0, 0, &st) == 0,
			  "%s", st.msg);
		CHECK(n == nw && memcmp(ids, want, n * sizeof(int32_t)) == 0,
			  "text %zu: ids from the GGUF tokenizer differ from tokenizer.json's", i);
		same += n == nw && memcmp(ids, want, n * sizeof(int32_t)) == 0;
	}
	printf("GGUF tokenizer: %d of %zu texts give tokenizer.json's ids (%d merges from scores)\n",
		   same, sizeof(texts) / sizeof(texts[0]), v ? v->n_merges : 0);
	CHECK(same == (int) (sizeof(texts) / sizeof(texts[0])), "texts");
	tfm_tok_free(tok);
	tfm_gguf_vocab_free(v);
	tfm_gguf_free(f);
	free(buf);
	free(ref);
}

/* a hex string's bytes (malloc'd) */
static char *
unhex(const char *h, size_t *len)
{
	size_t		n = strcspn(h, "\t\n");
	char	   *out = malloc(n / 2 + 1);

	for (size_t i = 0; i < n / 2; i++)
	{
		unsigned	b;

		sscanf(h + 2 * i, "%2x", &b);
		out[i] = (char) b;
	}
	out[n / 2] = '\0';
	*len = n / 2;
	return out;
}

/* a "gpt2" (byte-level BPE) vocabulary: llama3.json's ids on its cases */
static void
test_tokenizer_bpe(void)
{
	size_t		len;
	uint8_t    *buf = check_fixture("gguf/llama3_tok.gguf", &len);
	FILE	   *fp = fopen("test/fixtures/tokenizer/hf/llama3.cases.tsv", "r");
	tfm_gguf_file *f = NULL;
	tfm_gguf_vocab *v = NULL;
	tfm_tokenizer *tok = NULL;
	tfm_status	st = {0};
	int32_t		specials[TFM_TOK_N_SPECIALS] = {-1, -1, -1, -1, -1, -1};
	char		line[65536];
	int			texts = 0,
				same = 0;

	CHECK(buf && fp, "gguf/llama3_tok.gguf or llama3.cases.tsv missing");
	if (!buf || !fp)
		return;
	CHECK(tfm_gguf_parse(&f, buf, len, len, &st) == 0, "%s", st.msg);
	CHECK(tfm_gguf_vocab_read(&v, f, 564, &st) == 0, "%s", st.msg);
	CHECK(v && v->kind == TFM_GGUF_TOK_BPE && v->n == 564 && v->bos == 561 && v->eos == 562 &&
		  v->add_bos && v->literal[561] && !v->literal[560] && v->n_merges == 300 &&
		  v->flags == (TFM_TOK_INFO_LLAMA3 | TFM_TOK_INFO_IGNORE_MERGES),
		  "the metadata's byte-level vocabulary");
	specials[TFM_TOK_BOS] = v->bos;
	CHECK(tfm_tok_import_hf_bpe(&tok, v->pieces, v->lens, v->literal, v->n, v->merge_lr,
								v->n_merges, specials, v->flags, &st) == 0, "%s", st.msg);
	while (tok && fgets(line, sizeof(line), fp))
	{
		size_t		tl,
					n = 0,
					nw = 0;
		char	   *text,
				   *p;
		int32_t		ids[1024],
					want[1024];

		if (line[0] != 'T')
			continue;
		text = unhex(line + 2, &tl);
		p = strchr(line + 2, '\t');
		while (p && nw < 1024)
		{
			char	   *end;
			long		x = strtol(p + 1, &end, 10);

			if (end == p + 1)
				break;
			want[nw++] = (int32_t) x;
			p = end;
		}
		CHECK(tfm_tok_encode(ids, NULL, 1024, &n, tok, text, tl, 0, 0, &st) == 0, "%s", st.msg);
		texts++;
		same += n == nw && memcmp(ids, want, n * sizeof(int32_t)) == 0;
		free(text);
	}
	printf("GGUF gpt2 tokenizer: %d of %d texts give llama3.json's ids\n", same, texts);
	CHECK(texts > 20 && same == texts, "byte-level texts");
	fclose(fp);
	tfm_tok_free(tok);
	tfm_gguf_vocab_free(v);
	tfm_gguf_free(f);
	free(buf);
}

/* ---- refusals ---- */
static void
put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t) (v >> (8 * i));
}

static void
expect_refusal(const uint8_t *buf, size_t len, int code, const char *fragment)
{
	uint8_t    *copy = malloc(len ? len : 1);
	tfm_gguf_file *f = NULL;
	tfm_status	st = {0};
	tfm_hf_params p;
	int			rc;
	tfm_model  *m;

	memcpy(copy, buf, len);
	rc = tfm_gguf_parse(&f, copy, len, len, &st);
	tfm_gguf_free(f);
	if (rc == 0)
	{
		m = import_gguf(copy, len, &p, &st);
		rc = m ? 0 : st.code;
		tfm_model_free(m);
	}
	CHECK(rc == code && strstr(st.msg, fragment) != NULL,
		  "expected %d \"%s\", got %d \"%s\"", code, fragment, rc, st.msg);
	free(copy);
}

/* the offset of the first byte after metadata key k's string in buf */
static size_t
find_key(const uint8_t *buf, size_t len, const char *k)
{
	size_t		n = strlen(k);

	for (size_t i = 8; i + n < len; i++)
		if (memcmp(buf + i, k, n) == 0 && buf[i - 8] == (uint8_t) n)
			return i + n;
	return 0;
}

static void
test_refusals(void)
{
	size_t		len;
	uint8_t    *buf = check_fixture("gguf/llama_q4_0.gguf", &len);
	uint8_t    *m;
	size_t		at;

	if (!buf)
		return;
	m = malloc(len);
	expect_refusal(buf, 10, TFM_EBADFILE, "too short");
	memcpy(m, buf, len);
	m[0] = 'X';
	expect_refusal(m, len, TFM_EBADFILE, "does not start with \"GGUF\"");
	memcpy(m, buf, len);
	m[4] = 1;
	expect_refusal(m, len, TFM_EBADFILE, "GGUF version 1 is not supported");
	memcpy(m, buf, len);
	put64(m + 8, UINT64_MAX);
	expect_refusal(m, len, TFM_EBADFILE, "tensors and");
	memcpy(m, buf, len);
	put64(m + 16, 1000);
	expect_refusal(m, len, TFM_EBADFILE, "");
	/* a key's length past the end */
	memcpy(m, buf, len);
	put64(m + 24, (uint64_t) 1 << 40);
	expect_refusal(m, len, TFM_EBADFILE, "a metadata key has a length of");
	/* the architecture */
	memcpy(m, buf, len);
	at = find_key(m, len, "general.architecture");
	CHECK(at > 0, "key found");
	memcpy(m + at + 4 + 8, "gemma", 5);
	expect_refusal(m, len, TFM_EUNSUPPORTED, "GGUF architecture \"gemma\" is not supported");
	/* the alignment */
	memcpy(m, buf, len);
	at = find_key(m, len, "general.alignment");
	m[at + 4] = 33;
	expect_refusal(m, len, TFM_EBADFILE, "general.alignment 33 is not a power of two");
	/* the block count says 3 layers: blk.2 missing */
	memcpy(m, buf, len);
	at = find_key(m, len, "llama.block_count");
	m[at + 4] = 3;
	expect_refusal(m, len, TFM_EBADFILE, "tensor \"model.layers.1.input_layernorm.weight\" is missing");
	/* head_count_kv 3 does not divide 4 */
	memcpy(m, buf, len);
	at = find_key(m, len, "llama.attention.head_count_kv");
	m[at + 4] = 3;
	expect_refusal(m, len, TFM_EBADFILE, "num_key_value_heads must divide");
	/* a tensor of an unknown type, of Q4_1, and one whose offset overlaps its neighbour */
	memcpy(m, buf, len);
	at = find_key(m, len, "blk.0.attn_norm.weight");
	CHECK(at > 0, "tensor found");
	m[at + 4 + 8] = 99;
	expect_refusal(m, len, TFM_EUNSUPPORTED, "ggml type 99");
	memcpy(m, buf, len);
	at = find_key(m, len, "blk.0.attn_q.weight");
	m[at + 4 + 16] = 10;
	expect_refusal(m, len, TFM_EUNSUPPORTED, "is of type Q2_K, which tfm does not import");
	memcpy(m, buf, len);
	put64(m + at + 4 + 16 + 4, 0);
	expect_refusal(m, len, TFM_EBADFILE, "overlap");
	memcpy(m, buf, len);
	put64(m + at + 4 + 16 + 4, 8);
	expect_refusal(m, len, TFM_EBADFILE, "not a multiple of the alignment 32");
	memcpy(m, buf, len);
	put64(m + at + 4 + 16 + 4, (uint64_t) 1 << 62);
	expect_refusal(m, len, TFM_EBADFILE, "runs past the end of the file");
	/* a shape the metadata does not give */
	memcpy(m, buf, len);
	put64(m + at + 4, 128);
	expect_refusal(m, len, TFM_EBADFILE, "");
	/* the data cut short */
	expect_refusal(buf, len - 1, TFM_EBADFILE, "runs past the end of the file");
	free(m);
	free(buf);
}

/* ---- fuzzing ---- */
static long fuzz_cases,
			fuzz_parsed;

static void
fuzz_one(const uint8_t *src, size_t len)
{
	uint8_t    *copy = malloc(len ? len : 1);
	tfm_gguf_file *f = NULL;
	tfm_status	st = {0};
	int			rc;

	memcpy(copy, src, len);
	fuzz_cases++;
	rc = tfm_gguf_parse(&f, copy, len, len, &st);
	CHECK(rc == 0 ? f != NULL : (f == NULL && st.msg[0] != '\0'),
		  "fuzz: failure %d without a message", rc);
	if (rc == 0)
	{
		tfm_gguf_vocab *v = NULL;
		tfm_hf_params p;
		tfm_model  *m;

		fuzz_parsed++;
		st.msg[0] = '\0';
		rc = tfm_gguf_vocab_read(&v, f, 1000, &st);
		CHECK(rc == 0 || st.msg[0] != '\0', "fuzz: vocabulary failure %d without a message", rc);
		tfm_gguf_vocab_free(v);
		st.msg[0] = '\0';
		m = import_gguf_keep(copy, len, &p, &st, true);
		CHECK(m != NULL || st.msg[0] != '\0', "fuzz: import failure without a message");
		if (m && tfm_model_int4_kept_columns(m) > 0)
		{
			/* what it keeps runs: gguf copies of its K-quant / Q8_0 blocks, one step */
			int32_t		id = 0;
			tfm_batch	bt = {.B = 1, .T = 1, .input = &id};

			CHECK(tfm_model_set_precision(m, TFM_PREC_GGUF) == 0 && tfm_model_forward(m, &bt, false, 0) == 0,
				  "fuzz: a kept model does not run at gguf");
		}
		tfm_model_free(m);
	}
	tfm_gguf_free(f);
	free(copy);
}

static void
test_fuzz(const char *file)
{
	size_t		len;
	uint8_t    *buf = check_fixture(file, &len);
	uint8_t    *m;
	tfm_gguf_file *f;
	tfm_status	st = {0};
	tfm_rng		rng;
	uint64_t	hdr;
	int			quick = quick_mode();
	int			flips = quick ? 150 : 3000;

	if (!buf)
		return;
	CHECK(tfm_gguf_parse(&f, buf, len, len, &st) == 0, "%s", st.msg);
	hdr = f->data_start;
	tfm_rng_seed(&rng, 2026);
	m = malloc(len);
	/* every truncation of the header, then the data's tensor boundaries */
	for (uint64_t k = 0; k <= hdr; k += quick ? 97 : 1)
		fuzz_one(buf, (size_t) k);
	for (uint64_t i = 0; i < f->n_tensors; i++)
	{
		fuzz_one(buf, (size_t) (hdr + f->tensors[i].offset));
		fuzz_one(buf, (size_t) (hdr + f->tensors[i].offset + f->tensors[i].bytes - 1));
	}
	/* byte flips in the header (1 to 4 at once) */
	for (int c = 0; c < flips; c++)
	{
		int			nf = 1 + (int) (tfm_rng_next(&rng) % 4);

		memcpy(m, buf, len);
		for (int k = 0; k < nf; k++)
			m[tfm_rng_next(&rng) % hdr] ^= (uint8_t) (1 + tfm_rng_next(&rng) % 255);
		fuzz_one(m, len);
	}
	/* huge or odd numbers over every 8-byte-aligned field position */
	{
		static const uint64_t odd[] = {UINT64_MAX, (uint64_t) 1 << 63, (uint64_t) 1 << 32,
			0xFFFFFFFFull, 0, 1, 255};

		for (uint64_t at = 4; at + 8 <= hdr; at += quick ? 61 : 3)
		{
			memcpy(m, buf, len);
			put64(m + at, odd[tfm_rng_next(&rng) % 7]);
			fuzz_one(m, len);
		}
	}
	printf("GGUF fuzzing of %s: %ld cases, %ld parsed, every failure with a message\n",
		   file, fuzz_cases, fuzz_parsed);
	fuzz_cases = fuzz_parsed = 0;
	tfm_gguf_free(f);
	free(m);
	free(buf);
}

int
main(void)
{
	test_reference_hashes();
	test_twins();
	test_rope_freqs();
	test_kept();
	test_tokenizer();
	test_tokenizer_bpe();
	test_refusals();
	test_fuzz("gguf/llama_bf16.gguf");	/* a "llama" tokenizer */
	test_fuzz("gguf/llama3_tok.gguf");	/* a "gpt2" one */
	test_fuzz("gguf/gpt2_q8_0.gguf");	/* the gpt2 architecture, Q8_0 blocks */
	test_fuzz("gguf/llama_q4_k_m.gguf");	/* Q4_K and Q6_K blocks */
	test_fuzz("gguf/phi3_f32.gguf");	/* phi3: longrope's tensors and keys */
	test_fuzz("gguf/gemma3_f32.gguf");	/* gemma3: its keys, the norms plus 1 */
	return check_summary("test_gguf");
}
