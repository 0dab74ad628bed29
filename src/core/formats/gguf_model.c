/*
 * gguf_model.c — a GGUF file read as a Hugging Face checkpoint: the
 * architecture's metadata as the hyper-parameters of a config.json (llama,
 * qwen2 and qwen3 here, phi3's own keys and names in gguf_phi3.c,
 * gemma3's in gguf_gemma3.c, gpt2 in gguf_gpt2.c), tensor names as the
 * Hugging Face ones, and
 * each tensor's values made the float32 tensor tfm_hf_load_tensor takes:
 * the rows of a llama's attn_q and attn_k put back in Hugging Face's order
 * (llama.cpp's convert_hf_to_gguf.py permutes them for ggml's rope, which
 * pairs dimensions 2i and 2i+1 where rotate_half pairs i and i + d/2), a
 * GPT-2's Conv1D weights transposed back to (in, out), a Gemma 3's norm
 * weights less the 1 the converter added; a Llama 3's rope_freqs.weight
 * read as its "llama3" rope_scaling.
 */
#include "tfm/gguf.h"
#include "tfm/gguf_quants.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfm/layers_llama.h"
#include "tfm/limits.h"
#include "gguf_internal.h"

/*
 * rope_freqs.weight, the divisors of the rotary frequencies that llama.cpp's
 * converter writes for a Llama 3.1 or 3.2 ("rope_type": "llama3"): F32, one
 * per frequency of a head.  Its values (read later, tfm_gguf_rope_check)
 * must be Llama 3's scaling with the published low_freq_factor 1 and
 * high_freq_factor 4, the original context of
 * llama.rope.scaling.original_context_length (8192, every Llama 3.1 and
 * 3.2's, when absent: the converter writes none) and the factor of its
 * last (lowest) frequency; here p is marked for that check.
 */
static int
llama3_rope_freqs(tfm_hf_params *p, const tfm_gguf_file *f, tfm_status *st)
{
	const tfm_gguf_tensor *t = tfm_gguf_find_tensor(f, "rope_freqs.weight");
	uint64_t	half;

	if (!t)
		return TFM_OK;
	half = p->heads > 0 && p->d_model % p->heads == 0 ? (uint64_t) (p->d_model / p->heads / 2) : 0;
	if (t->type != TFM_GGML_F32 || t->ndim != 1 || t->ne[0] != half || half == 0)
		return tfm_status_set(st, TFM_EBADFILE, "rope_freqs.weight must be F32 and hold %llu values, one per rotary frequency",
							  (unsigned long long) half);
	p->rope_type = TFM_ROPE_LLAMA3;
	p->rope_factor = 0.0f;		/* its last value (tfm_gguf_rope_check) */
	p->rope_low_freq = 1.0f;
	p->rope_high_freq = 4.0f;
	p->rope_orig_max = 8192;
	return tfm_gguf_get_range(&p->rope_orig_max, f, "llama.rope.scaling.original_context_length", false,
							  1, TFM_ROPE_ORIG_MAX, st);
}

int
tfm_gguf_rope_check(tfm_hf_params *p, const float *ff, int n, tfm_status *st)
{
	float		base[TFM_ROPE_MAX_HALF],
				inv[TFM_ROPE_MAX_HALF];

	if (n < 1 || n > TFM_ROPE_MAX_HALF || 2 * n != p->d_model / p->heads)
		return tfm_status_set(st, TFM_EBADFILE, "rope_freqs.weight holds %d values, not half a head", n);
	if (!(ff[n - 1] >= 1.0f && ff[n - 1] <= (float) TFM_ROPE_FACTOR_MAX))
		return tfm_status_set(st, TFM_EUNSUPPORTED, "rope_freqs.weight's last factor %g is not between 1 and %d",
							  (double) ff[n - 1], TFM_ROPE_FACTOR_MAX);
	p->rope_factor = ff[n - 1];
	tfm_rope_freqs_default(base, 2 * n, p->rope_theta);
	memcpy(inv, base, sizeof(float) * n);
	tfm_rope_llama3(inv, n, p->rope_factor, p->rope_low_freq, p->rope_high_freq, p->rope_orig_max);
	for (int i = 0; i < n; i++)
	{
		double		want = (double) base[i] / inv[i];

		if (!(fabs(ff[i] - want) <= 1e-4 * want))
			return tfm_status_set(st, TFM_EUNSUPPORTED,
								  "rope_freqs.weight is not Llama 3's rope scaling (factor %g, low_freq_factor 1, high_freq_factor 4, original context %d): value %d is %g, not %g",
								  (double) p->rope_factor, p->rope_orig_max, i, (double) ff[i], want);
	}
	return TFM_OK;
}

/* "<arch>.<suffix>" in one of 4 rotating buffers (each used before the 4th next call) */
static const char *
akey(char (*buf)[80], int *slot, const char *arch, const char *suffix)
{
	char	   *k = buf[(*slot)++ % 4];

	snprintf(k, 80, "%s.%s", arch, suffix);
	return k;
}

/*
 * llama.* (or qwen3.*: Qwen3's q/k norms, head_dim its key_length, q and k
 * rows in Hugging Face's order; qwen2.*: Qwen2's q/k/v biases, rows as
 * Hugging Face's; phi3.*: gguf_phi3.c; gemma3.*: head_dim as qwen3's, the
 * rest in gguf_gemma3.c): a Hugging Face Llama's hyper-parameters
 */
static int
llama_params(tfm_hf_params *p, int64_t *capped, const tfm_gguf_file *f, const char *a,
			 tfm_status *st)
{
	char		kb[4][80];
	int			ks = 0;
	bool		qwen3 = strcmp(a, "qwen3") == 0,
				phi3 = strcmp(a, "phi3") == 0,
				qwen2 = strcmp(a, "qwen2") == 0,
				gemma3 = strcmp(a, "gemma3") == 0;
	const char *s;
	size_t		slen;
	double		eps,
				theta = 10000.0;
	int			rc,
				rope_dims = 0,
				experts = 0;
	int64_t		ctx = 2048;
	const tfm_gguf_tensor *emb;
	const int	big = 1 << 30;

#define K(sfx) akey(kb, &ks, a, sfx)
	p->arch = TFM_HF_LLAMA;
	p->qk_norm = qwen3;
	p->gguf_neox = qwen3 || qwen2;	/* the converter permutes q and k only for llama */
	p->qkv_bias = qwen2;
	if ((rc = tfm_gguf_get_range(&p->d_model, f, K("embedding_length"), true, 1, big, st)) != 0 ||
		(rc = tfm_gguf_get_range(&p->layers, f, K("block_count"), true, 1, big, st)) != 0 ||
		(rc = tfm_gguf_get_range(&p->d_ff, f, K("feed_forward_length"), true, 1, big, st)) != 0 ||
		(rc = tfm_gguf_get_range(&p->heads, f, K("attention.head_count"), true, 1, big, st)) != 0)
		return rc;
	p->kv_heads = p->heads;
	if ((rc = tfm_gguf_get_range(&p->kv_heads, f, K("attention.head_count_kv"), false, 1, big, st)) != 0 ||
		(rc = tfm_gguf_get_range(&rope_dims, f, K("rope.dimension_count"), false, 0, big, st)) != 0 ||
		(rc = tfm_gguf_get_range(&experts, f, K("expert_count"), false, 0, big, st)) != 0)
		return rc;
	if (experts > 0)
		return tfm_status_set(st, TFM_EUNSUPPORTED, "mixture-of-experts %s files (%s %d) are not supported",
							  a, K("expert_count"), experts);
	if ((rc = tfm_gguf_get_int(&ctx, f, K("context_length"), false, st)) != 0)
		return rc;
	if (ctx < TFM_LEN_MIN)
		return tfm_status_set(st, TFM_EBADFILE, "metadata \"%s\" is %lld (at least %d)",
							  K("context_length"), (long long) ctx, TFM_LEN_MIN);
	p->max_len = (int) (ctx > TFM_LEN_MAX ? TFM_LEN_MAX : ctx);
	if (ctx > TFM_LEN_MAX)
		*capped = ctx;
	if (gemma3)
		theta = 1000000.0;		/* Gemma3TextConfig's rope_theta */
	if ((rc = tfm_gguf_get_float(&eps, f, K("attention.layer_norm_rms_epsilon"), true, st)) != 0 ||
		(rc = tfm_gguf_get_float(&theta, f, K("rope.freq_base"), false, st)) != 0)
		return rc;
	p->ln_eps = (float) eps;
	p->rope_theta = (float) theta;
	/* (gemma3's linear scaling: gguf_gemma3.c) */
	if (!gemma3 && tfm_gguf_get_str(&s, &slen, f, K("rope.scaling.type"), false, NULL) == TFM_OK &&
		tfm_gguf_find(f, K("rope.scaling.type")) && !(slen == 4 && memcmp(s, "none", 4) == 0))
		return tfm_status_set(st, TFM_EUNSUPPORTED, "rope scaling \"%.*s\" is not supported",
							  (int) tfm_utf8_cut(s, slen < 32 ? slen : 32), s);
	if (qwen3 || gemma3)
	{
		/* a head's width: key_length (Qwen3-0.6B's 128 over 1024 / 16, Gemma 3's 256), value_length the same */
		int			hd = p->d_model / p->heads,
					vlen;

		if ((rc = tfm_gguf_get_range(&hd, f, K("attention.key_length"), false, 2, TFM_D_MODEL_MAX, st)) != 0)
			return rc;
		vlen = hd;
		if ((rc = tfm_gguf_get_range(&vlen, f, K("attention.value_length"), false, 1, big, st)) != 0)
			return rc;
		if (vlen != hd || (rope_dims != 0 && rope_dims != hd))
			return tfm_status_set(st, TFM_EUNSUPPORTED, "%s and %s must be %s (%d)", K("attention.value_length"),
								  K("rope.dimension_count"), K("attention.key_length"), hd);
		p->head_dim = hd;
		if (tfm_gguf_find_tensor(f, "rope_freqs.weight"))
			return tfm_status_set(st, TFM_EUNSUPPORTED, "rope_freqs.weight in a %s file is not supported", a);
		if (gemma3 && (rc = tfm_gguf_gemma3_params(p, f, st)) != 0)
			return rc;
	}
	else if (phi3)
	{
		if ((rc = tfm_gguf_phi3_params(p, f, rope_dims, ctx, st)) != 0)
			return rc;
		rope_dims = 0;			/* checked there: the rotated part of a head */
	}
	else if ((rc = llama3_rope_freqs(p, f, st)) != 0)
		return rc;
	if (!qwen3 && !gemma3 && p->heads > 0 && p->d_model % p->heads == 0)
	{
		int			hd = p->d_model / p->heads;
		const char *keys[] = {K("attention.key_length"), K("attention.value_length")};

		if (rope_dims != 0 && rope_dims != hd)
			return tfm_status_set(st, TFM_EUNSUPPORTED,
								  "%s %d is not the head size %d", K("rope.dimension_count"), rope_dims, hd);
		for (int k = 0; k < 2; k++)
		{
			int			len = hd;

			if ((rc = tfm_gguf_get_range(&len, f, keys[k], false, 1, big, st)) != 0)
				return rc;
			if (len != hd)
				return tfm_status_set(st, TFM_EUNSUPPORTED, "%s %d is not the head size %d", keys[k],
									  len, hd);
		}
	}
	/* the vocabulary: token_embd's rows (<arch>.vocab_size, if given, must agree) */
	emb = tfm_gguf_find_tensor(f, "token_embd.weight");
	if (!emb || emb->ndim != 2 || emb->ne[0] != (uint64_t) p->d_model || emb->ne[1] > (uint64_t) big)
		return tfm_status_set(st, TFM_EBADFILE, "token_embd.weight is missing or not (%d, vocab)",
							  p->d_model);
	p->vocab = (int) emb->ne[1];
	{
		int			v = p->vocab;

		if ((rc = tfm_gguf_get_range(&v, f, K("vocab_size"), false, 1, big, st)) != 0)
			return rc;
		if (v != p->vocab)
			return tfm_status_set(st, TFM_EBADFILE, "%s %d is not token_embd.weight's %d rows",
								  K("vocab_size"), v, p->vocab);
	}
	p->tie = tfm_gguf_find_tensor(f, "output.weight") == NULL;
	return TFM_OK;
#undef K
}

int
tfm_gguf_params(tfm_hf_params *p, int64_t *capped, const tfm_gguf_file *f, tfm_status *st)
{
	const char *arch;
	size_t		alen;
	int			rc;

	memset(p, 0, sizeof(*p));
	*capped = 0;
	if ((rc = tfm_gguf_get_str(&arch, &alen, f, "general.architecture", true, st)) != 0)
		return rc;
	if (alen == 5 && memcmp(arch, "llama", 5) == 0)
		return llama_params(p, capped, f, "llama", st);
	if (alen == 5 && memcmp(arch, "qwen3", 5) == 0)
		return llama_params(p, capped, f, "qwen3", st);
	if (alen == 4 && memcmp(arch, "phi3", 4) == 0)
		return llama_params(p, capped, f, "phi3", st);
	if (alen == 5 && memcmp(arch, "qwen2", 5) == 0)
		return llama_params(p, capped, f, "qwen2", st);
	if (alen == 6 && memcmp(arch, "gemma3", 6) == 0)
		return llama_params(p, capped, f, "gemma3", st);
	if (alen == 4 && memcmp(arch, "gpt2", 4) == 0)
		return tfm_gguf_gpt2_params(p, f, st);
	return tfm_status_set(st, TFM_EUNSUPPORTED,
						  "GGUF architecture \"%.*s\" is not supported (tfm imports llama, qwen2, qwen3, gemma3, phi3 and gpt2)",
						  (int) tfm_utf8_cut(arch, alen < 64 ? alen : 64), arch);
}

static const char *const llama_top[][2] = {
	{"token_embd.weight", "model.embed_tokens.weight"},
	{"output_norm.weight", "model.norm.weight"},
	{"output.weight", "lm_head.weight"},
	{NULL, NULL}
};
static const char *const llama_blk[][2] = {
	{"attn_norm.weight", "input_layernorm.weight"},
	{"attn_q.weight", "self_attn.q_proj.weight"},
	{"attn_k.weight", "self_attn.k_proj.weight"},
	{"attn_v.weight", "self_attn.v_proj.weight"},
	{"attn_q.bias", "self_attn.q_proj.bias"},	/* qwen2 */
	{"attn_k.bias", "self_attn.k_proj.bias"},
	{"attn_v.bias", "self_attn.v_proj.bias"},
	{"attn_q_norm.weight", "self_attn.q_norm.weight"},	/* qwen3 */
	{"attn_k_norm.weight", "self_attn.k_norm.weight"},
	{"attn_output.weight", "self_attn.o_proj.weight"},
	{"ffn_norm.weight", "post_attention_layernorm.weight"},
	{"ffn_gate.weight", "mlp.gate_proj.weight"},
	{"ffn_up.weight", "mlp.up_proj.weight"},
	{"ffn_down.weight", "mlp.down_proj.weight"},
	{NULL, NULL}
};

int
tfm_gguf_hf_name(char *name, size_t cap, const tfm_hf_params *p, const tfm_gguf_tensor *t,
				 tfm_status *st)
{
	bool		gpt2 = p->arch == TFM_HF_GPT2,
				phi3 = p->arch == TFM_HF_PHI3,
				gemma3 = p->gemma;	/* the one Gemma GGUF architecture tfm reads */
	const char *const (*top)[2] = gpt2 ? tfm_gguf_gpt2_top : phi3 ? tfm_gguf_phi3_top :
		gemma3 ? tfm_gguf_gemma3_top : llama_top;
	const char *const (*blk)[2] = gpt2 ? tfm_gguf_gpt2_blk : phi3 ? tfm_gguf_phi3_blk :
		gemma3 ? tfm_gguf_gemma3_blk : llama_blk;
	const char *layers = gpt2 ? "transformer.h" : "model.layers";
	unsigned	layer;
	int			used = 0;

	/* Llama 3's frequency divisors, checked against the config before the
	 * model is built (tfm_gguf_rope_check): a buffer's values, not stored */
	if (!gpt2 && strcmp(t->name, "rope_freqs.weight") == 0)
	{
		snprintf(name, cap, "model.layers.0.self_attn.rotary_emb.inv_freq");
		return TFM_OK;
	}
	for (size_t i = 0; top[i][0]; i++)
		if (strcmp(t->name, top[i][0]) == 0)
		{
			snprintf(name, cap, "%s", top[i][1]);
			return TFM_OK;
		}
	/* "blk." then a layer number in plain decimal (no sign, no leading 0) then "." */
	if (strncmp(t->name, "blk.", 4) == 0)
	{
		const char *c = t->name + 4;

		layer = 0;
		while (*c >= '0' && *c <= '9' && c - t->name < 10)
			layer = layer * 10 + (unsigned) (*c++ - '0');
		used = (int) (c - t->name);
		if (used > 4 && *c == '.' && !(t->name[4] == '0' && used > 5))
			for (size_t i = 0; blk[i][0]; i++)
				if (strcmp(c + 1, blk[i][0]) == 0)
				{
					snprintf(name, cap, "%s.%u.%s", layers, layer, blk[i][1]);
					return TFM_OK;
				}
	}
	return tfm_status_set(st, TFM_EBADFILE, "unexpected tensor \"%.*s\" in a %s GGUF file",
						  TFM_GGUF_SHOWN(t->name, t->name_len), gpt2 ? "gpt2" : phi3 ? "phi3" : gemma3 ? "gemma3" : "llama");
}

/* is t one of a GPT-2's Conv1D weights, stored transposed as (out, in)? */
static bool
gpt2_transposed(const tfm_hf_params *p, const tfm_gguf_tensor *t)
{
	static const char *const w[] = {".attn_qkv.weight", ".attn_output.weight", ".ffn_up.weight",
	".ffn_down.weight"};
	size_t		n = t->name_len;

	if (p->arch != TFM_HF_GPT2 || t->ndim != 2)
		return false;
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		if (n > strlen(w[i]) && strcmp(t->name + n - strlen(w[i]), w[i]) == 0)
			return true;
	return false;
}

/* the Hugging Face shape of t: its dimensions outermost first, a Conv1D's (in, out) */
static void
hf_shape(uint64_t *dims, const tfm_hf_params *p, const tfm_gguf_tensor *t)
{
	bool		tr = gpt2_transposed(p, t);

	for (int k = 0; k < t->ndim; k++)
		dims[k] = tr ? t->ne[k] : t->ne[t->ndim - 1 - k];
}

/* dst (cols, rows) = src (rows, cols) transposed */
static void
transpose(float *dst, const float *src, uint64_t rows, uint64_t cols)
{
	for (uint64_t r = 0; r < rows; r++)
		for (uint64_t c = 0; c < cols; c++)
			dst[c * rows + r] = src[r * cols + c];
}

void
tfm_gguf_unpermute_rows(void *dst, const void *src, uint64_t rows, size_t row_bytes, int n_head)
{
	uint64_t	hd = rows / (uint64_t) n_head,
				half = hd / 2;

	for (uint64_t h = 0; h < (uint64_t) n_head; h++)
		for (uint64_t i = 0; i < half; i++)
			for (uint64_t j = 0; j < 2; j++)
				memcpy((char *) dst + (h * hd + j * half + i) * row_bytes,
					   (const char *) src + (h * hd + 2 * i + j) * row_bytes, row_bytes);
}

/* a llama's attn_q or attn_k: its heads (rows in rope order), else 0 */
static int
rope_heads(const tfm_hf_params *p, const tfm_gguf_tensor *t)
{
	if (p->arch != TFM_HF_LLAMA || p->gguf_neox)
		return 0;
	return strstr(t->name, ".attn_q.weight") ? p->heads :
		strstr(t->name, ".attn_k.weight") ? p->kv_heads : 0;
}

int
tfm_gguf_tensor_f32(float *out, tfm_st_tensor *sh, const tfm_gguf_tensor *t, const uint8_t *src,
					  const tfm_hf_params *p, tfm_status *st)
{
	int			n_head = rope_heads(p, t);
	bool		is_q = n_head > 0 && strstr(t->name, ".attn_q.weight") != NULL,
				is_k = n_head > 0 && !is_q,
				tr = gpt2_transposed(p, t);
	float	   *tmp = out;

	memset(sh, 0, sizeof(*sh));
	sh->dtype = TFM_ST_F32;
	sh->ndim = t->ndim;
	hf_shape(sh->dims, p, t);
	sh->n_values = t->n_values;
	sh->begin = 0;
	sh->end = t->n_values * sizeof(float);
	if ((is_q || is_k) &&
		(t->ndim != 2 || n_head < 1 || t->ne[1] % (2 * (uint64_t) n_head) != 0))
		return tfm_status_set(st, TFM_EBADFILE, "tensor \"%.*s\" is not (%d heads of an even size, in)",
							  TFM_GGUF_SHOWN(t->name, t->name_len), n_head);
	if (is_q || is_k || tr)
	{
		tmp = malloc(t->n_values * sizeof(float));
		if (!tmp)
			return tfm_status_set(st, TFM_ENOMEM, "out of memory converting tensor \"%.*s\"", TFM_GGUF_SHOWN(t->name, t->name_len));
	}
	if (tfm_gguf_to_f32(tmp, src, t->type, t->n_values) != TFM_OK)
	{
		if (tmp != out)
			free(tmp);
		return tfm_status_set(st, TFM_EUNSUPPORTED,
							  "tensor \"%.*s\" is of type %s, which tfm does not import (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K)",
							  TFM_GGUF_SHOWN(t->name, t->name_len), tfm_gguf_type_name(t->type));
	}
	if (tr)
		transpose(out, tmp, t->ne[1], t->ne[0]);
	else if (tmp != out)
		tfm_gguf_unpermute_rows(out, tmp, t->ne[1], t->ne[0] * sizeof(float), n_head);
	if (tfm_gguf_gemma3_norm(p, t))
		tfm_gguf_gemma3_norms(out, t->n_values);
	if (tmp != out)
		free(tmp);
	return TFM_OK;
}

int
tfm_gguf_load(tfm_model *m, tfm_hf_map *map, const tfm_hf_params *p,
					const tfm_gguf_tensor *t, const uint8_t *src, tfm_status *st)
{
	char		hf[96],
				err[512];
	tfm_hf_entry *e;
	tfm_st_tensor sh;
	float	   *vals,
			   *place;
	int			rc;

	if ((rc = tfm_gguf_hf_name(hf, sizeof(hf), p, t, st)) != 0)
		return rc;
	e = tfm_hf_match(map, hf, strlen(hf));
	if (!e)
		return tfm_status_set(st, TFM_EBADFILE, "unexpected tensor \"%.*s\" for this model's metadata",
							  TFM_GGUF_SHOWN(t->name, t->name_len));
	if (t->n_values > TFM_TENSOR_MAX)
		return tfm_status_set(st, TFM_ELIMIT, "tensor \"%.*s\" has %llu values (at most %zu)",
							  TFM_GGUF_SHOWN(t->name, t->name_len), (unsigned long long) t->n_values, (size_t) TFM_TENSOR_MAX);
	/* a tensor copied as it is (an embedding) converted straight into its place */
	place = tfm_hf_copy_place(m, e, (size_t) t->n_values);
	vals = place ? place : malloc(t->n_values * sizeof(float));
	if (!vals)
		return tfm_status_set(st, TFM_ENOMEM, "out of memory converting tensor \"%.*s\"", TFM_GGUF_SHOWN(t->name, t->name_len));
	if ((rc = tfm_gguf_tensor_f32(vals, &sh, t, src, p, st)) == 0)
	{
		sh.name = t->name;
		sh.name_len = t->name_len;
		if (tfm_hf_load_tensor(m, map, e, &sh, (const uint8_t *) vals, err, sizeof(err)) != 0)
			rc = tfm_status_set(st, TFM_EBADFILE, "%s", err);
	}
	if (vals != place)
		free(vals);
	return rc;
}

int
tfm_gguf_rows_begin(float **place, tfm_model *m, tfm_hf_map *map, const tfm_hf_params *p,
					const tfm_gguf_tensor *t, tfm_status *st)
{
	char		hf[96],
				err[512];
	tfm_hf_entry *e;
	tfm_st_tensor sh;
	uint64_t	bv,
				bb;

	*place = NULL;
	tfm_gguf_block(t->type, &bv, &bb);
	if (t->ndim != 2 || bv == 0 || t->ne[0] % bv != 0 || rope_heads(p, t) != 0 ||
		gpt2_transposed(p, t) || tfm_gguf_gemma3_norm(p, t) || t->n_values > TFM_TENSOR_MAX ||
		tfm_gguf_hf_name(hf, sizeof(hf), p, t, st) != 0 || !(e = tfm_hf_match(map, hf, strlen(hf))))
		return TFM_OK;			/* tfm_gguf_load says what is wrong, if anything */
	if (!(*place = tfm_hf_copy_place(m, e, (size_t) t->n_values)))
		return TFM_OK;
	memset(&sh, 0, sizeof(sh));
	sh.name = t->name;
	sh.name_len = t->name_len;
	sh.dtype = TFM_ST_F32;
	sh.ndim = t->ndim;
	hf_shape(sh.dims, p, t);
	sh.n_values = t->n_values;
	if (tfm_hf_claim(map, e, &sh, err, sizeof(err)) != 0)
	{
		*place = NULL;
		return tfm_status_set(st, TFM_EBADFILE, "%s", err);
	}
	return TFM_OK;
}

int
tfm_gguf_load_rows(float *place, const tfm_gguf_tensor *t, const uint8_t *src, uint64_t r0,
				   uint64_t r1, tfm_status *st)
{
	const uint64_t K = t->ne[0],
				row_bytes = t->bytes / t->ne[1];
	float	   *dst = place + r0 * K;
	size_t		bad;

	if (r0 > r1 || r1 > t->ne[1])
		return tfm_status_set(st, TFM_EINVAL, "rows %llu to %llu of tensor \"%.*s\" (%llu rows)",
							  (unsigned long long) r0, (unsigned long long) r1,
							  TFM_GGUF_SHOWN(t->name, t->name_len), (unsigned long long) t->ne[1]);
	if (tfm_gguf_to_f32(dst, src + r0 * row_bytes, t->type, (r1 - r0) * K) != TFM_OK)
		return tfm_status_set(st, TFM_EUNSUPPORTED,
							  "tensor \"%.*s\" is of type %s, which tfm does not import (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K)",
							  TFM_GGUF_SHOWN(t->name, t->name_len), tfm_gguf_type_name(t->type));
	if (tfm_st_find_nonfinite(&bad, dst, (size_t) ((r1 - r0) * K)))
		return tfm_status_set(st, TFM_EBADFILE, "tensor \"%.*s\" holds %s at index %llu",
							  TFM_GGUF_SHOWN(t->name, t->name_len), isnan(dst[bad]) ? "NaN" : "an infinity",
							  (unsigned long long) (r0 * K + bad));
	return TFM_OK;
}

int
tfm_gguf_check(tfm_hf_map *map, const tfm_hf_params *p, const tfm_gguf_file *f, tfm_status *st)
{
	bool	   *seen = calloc(map->n + 1, sizeof(bool));
	int			rc = TFM_OK;

	if (!seen)
		return tfm_status_set(st, TFM_ENOMEM, "out of memory");
	for (uint64_t i = 0; i < f->n_tensors && !rc; i++)
	{
		const tfm_gguf_tensor *t = &f->tensors[i];
		char		hf[96];
		tfm_hf_entry *e;
		bool		same;

		uint64_t	dims[TFM_GGUF_MAX_DIMS];

		if ((rc = tfm_gguf_hf_name(hf, sizeof(hf), p, t, st)) != 0)
			break;
		e = tfm_hf_match(map, hf, strlen(hf));
		/* a buffer only as Llama 3's rope_freqs.weight (tfm_gguf_hf_name), Phi-3's factors */
		if (!e || (e->use == TFM_HF_BUFFER && strcmp(t->name, "rope_freqs.weight") != 0 &&
				   strncmp(t->name, "rope_factors_", 13) != 0))
		{
			rc = tfm_status_set(st, TFM_EBADFILE, "unexpected tensor \"%.*s\" for this model's metadata",
								TFM_GGUF_SHOWN(t->name, t->name_len));
			break;
		}
		hf_shape(dims, p, t);
		same = e->ndim == t->ndim;
		for (int k = 0; same && k < t->ndim; k++)
			same = e->dims[k] < 0 || (uint64_t) e->dims[k] == dims[k];
		if (!same)
		{
			rc = tfm_status_set(st, TFM_EBADFILE,
								"tensor \"%.*s\" has shape ne = [%llu, %llu], not the one the metadata gives",
								TFM_GGUF_SHOWN(t->name, t->name_len), (unsigned long long) t->ne[0],
								(unsigned long long) (t->ndim > 1 ? t->ne[1] : 1));
			break;
		}
		seen[e - map->entries] = true;
	}
	for (int i = 0; i < map->n && !rc; i++)
	{
		const tfm_hf_entry *e = &map->entries[i];

		if (e->required && !seen[i] && e->use != TFM_HF_BUFFER && e->use != TFM_HF_TIED)
			rc = tfm_status_set(st, TFM_EBADFILE, "tensor \"%s%s\" is missing",
								e->prefixable && map->prefix ? map->prefix : "", e->name);
	}
	free(seen);
	return rc;
}

/* t's entry in the map (NULL: none) */
static const tfm_hf_entry *
entry_of(tfm_hf_map *map, const tfm_hf_params *p, const tfm_gguf_tensor *t)
{
	char		hf[96];

	if (tfm_gguf_hf_name(hf, sizeof(hf), p, t, NULL) != 0)
		return NULL;
	return tfm_hf_match(map, hf, strlen(hf));
}

const char *
tfm_gguf_target(tfm_hf_map *map, const tfm_hf_params *p, const tfm_gguf_tensor *t)
{
	const tfm_hf_entry *e = entry_of(map, p, t);

	return e && e->target[0] ? e->target : NULL;
}

int
tfm_gguf_kept_place(tfm_int4_kept *k, int *heads, const tfm_model *m, tfm_hf_map *map,
					const tfm_hf_params *p, const tfm_gguf_tensor *t)
{
	const tfm_hf_entry *e;
	const tfm_param_info *pi;
	bool		rows_are_columns;

	if (!tfm_gguf_kept(t->type) || t->ndim != 2 || t->ne[0] > INT32_MAX || t->ne[1] > INT32_MAX ||
		!(e = entry_of(map, p, t)) || !(pi = tfm_model_find(m, e->target)))
		return 0;
	/*
	 * The file's rows are a matrix's output columns where tfm stores the
	 * tensor transposed (nn.Linear's (out, in) as (in, out), whole or as
	 * columns of a fused one), or as it is where the tensor is a Conv1D
	 * stored (out, in) in the file or the embedding (the tied head reads it
	 * transposed).
	 */
	switch (e->use)
	{
		case TFM_HF_SLICE:
		case TFM_HF_TRANSPOSE:
		case TFM_HF_TRANSPOSE_COLS:
			rows_are_columns = !gpt2_transposed(p, t);
			break;
		case TFM_HF_COPY:
			rows_are_columns = gpt2_transposed(p, t) || strcmp(e->target, "tok_emb") == 0 ||
				strcmp(e->target, "tgt_emb") == 0;
			break;
		default:
			rows_are_columns = false;
	}
	if (!rows_are_columns)
		return 0;
	*k = (tfm_int4_kept) {pi->offset, (int) t->ne[0],
		e->use == TFM_HF_COPY || e->use == TFM_HF_TRANSPOSE ? 0 : (int) e->col0, (int) t->ne[1], NULL,
	t->type, false};
	*heads = rope_heads(p, t);
	return tfm_model_int4_fits(m, k) ? 1 : 0;
}

int
tfm_gguf_rows_place(tfm_int4_kept *k, const tfm_model *m, tfm_hf_map *map, const tfm_hf_params *p,
					const tfm_gguf_tensor *t)
{
	const tfm_hf_entry *e;
	const tfm_param_info *pi;

	if (!tfm_gguf_kept(t->type) || t->ndim != 2 || t->ne[0] > INT32_MAX || t->ne[1] > INT32_MAX ||
		!(e = entry_of(map, p, t)) || e->use != TFM_HF_COPY || gpt2_transposed(p, t) ||
		rope_heads(p, t) != 0 || !(pi = tfm_model_find(m, e->target)) || pi->ndim != 2 ||
		(uint64_t) pi->dims[0] != t->ne[1] || (uint64_t) pi->dims[1] != t->ne[0])
		return 0;
	/* the file's rows are the tensor's rows, each a row of blocks */
	*k = (tfm_int4_kept) {pi->offset, (int) t->ne[0], 0, (int) t->ne[1], NULL, t->type, true};
	return tfm_kept_bytes(k) > 0 ? 1 : 0;
}
