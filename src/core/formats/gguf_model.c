/*
 * gguf_model.c — a GGUF file read as a Hugging Face checkpoint: the
 * architecture's metadata as the hyper-parameters of a config.json (llama
 * here, gpt2 in gguf_gpt2.c), tensor names as the Hugging Face ones, and
 * each tensor's values made the float32 tensor tfm_hf_load_tensor takes:
 * the rows of a llama's attn_q and attn_k put back in Hugging Face's order
 * (llama.cpp's convert_hf_to_gguf.py permutes them for ggml's rope, which
 * pairs dimensions 2i and 2i+1 where rotate_half pairs i and i + d/2), a
 * GPT-2's Conv1D weights transposed back to (in, out).
 */
#include "tfm/gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfm/limits.h"
#include "gguf_internal.h"

/* llama.*: a Hugging Face Llama's hyper-parameters */
static int
llama_params(tfm_hf_params *p, int64_t *capped, const tfm_gguf_file *f, tfm_status *st)
{
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

	p->arch = TFM_HF_LLAMA;
	if ((rc = tfm_gguf_get_range(&p->d_model, f, "llama.embedding_length", true, 1, big, st)) != 0 ||
		(rc = tfm_gguf_get_range(&p->layers, f, "llama.block_count", true, 1, big, st)) != 0 ||
		(rc = tfm_gguf_get_range(&p->d_ff, f, "llama.feed_forward_length", true, 1, big, st)) != 0 ||
		(rc = tfm_gguf_get_range(&p->heads, f, "llama.attention.head_count", true, 1, big, st)) != 0)
		return rc;
	p->kv_heads = p->heads;
	if ((rc = tfm_gguf_get_range(&p->kv_heads, f, "llama.attention.head_count_kv", false, 1, big, st)) != 0 ||
		(rc = tfm_gguf_get_range(&rope_dims, f, "llama.rope.dimension_count", false, 0, big, st)) != 0 ||
		(rc = tfm_gguf_get_range(&experts, f, "llama.expert_count", false, 0, big, st)) != 0)
		return rc;
	if (experts > 0)
		return tfm_status_set(st, TFM_EUNSUPPORTED, "mixture-of-experts llama files (llama.expert_count %d) are not supported",
							  experts);
	if ((rc = tfm_gguf_get_int(&ctx, f, "llama.context_length", false, st)) != 0)
		return rc;
	if (ctx < TFM_LEN_MIN)
		return tfm_status_set(st, TFM_EBADFILE, "metadata \"llama.context_length\" is %lld (at least %d)",
							  (long long) ctx, TFM_LEN_MIN);
	if (ctx > TFM_LEN_MAX)
	{
		*capped = ctx;
		ctx = TFM_LEN_MAX;
	}
	p->max_len = (int) ctx;
	if ((rc = tfm_gguf_get_float(&eps, f, "llama.attention.layer_norm_rms_epsilon", true, st)) != 0 ||
		(rc = tfm_gguf_get_float(&theta, f, "llama.rope.freq_base", false, st)) != 0)
		return rc;
	p->ln_eps = (float) eps;
	p->rope_theta = (float) theta;
	if (tfm_gguf_get_str(&s, &slen, f, "llama.rope.scaling.type", false, NULL) == TFM_OK &&
		tfm_gguf_find(f, "llama.rope.scaling.type") && !(slen == 4 && memcmp(s, "none", 4) == 0))
		return tfm_status_set(st, TFM_EUNSUPPORTED, "rope scaling \"%.*s\" is not supported",
							  (int) tfm_utf8_cut(s, slen < 32 ? slen : 32), s);
	if (tfm_gguf_find_tensor(f, "rope_freqs.weight"))
		return tfm_status_set(st, TFM_EUNSUPPORTED, "rope frequency factors (rope_freqs.weight) are not supported");
	if (p->heads > 0 && p->d_model % p->heads == 0)
	{
		int			hd = p->d_model / p->heads;
		const char *keys[] = {"llama.attention.key_length", "llama.attention.value_length"};

		if (rope_dims != 0 && rope_dims != hd)
			return tfm_status_set(st, TFM_EUNSUPPORTED,
								  "llama.rope.dimension_count %d is not the head size %d", rope_dims, hd);
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
	/* the vocabulary: token_embd's rows (llama.vocab_size, if given, must agree) */
	emb = tfm_gguf_find_tensor(f, "token_embd.weight");
	if (!emb || emb->ndim != 2 || emb->ne[0] != (uint64_t) p->d_model || emb->ne[1] > (uint64_t) big)
		return tfm_status_set(st, TFM_EBADFILE, "token_embd.weight is missing or not (%d, vocab)",
							  p->d_model);
	p->vocab = (int) emb->ne[1];
	{
		int			v = p->vocab;

		if ((rc = tfm_gguf_get_range(&v, f, "llama.vocab_size", false, 1, big, st)) != 0)
			return rc;
		if (v != p->vocab)
			return tfm_status_set(st, TFM_EBADFILE, "llama.vocab_size %d is not token_embd.weight's %d rows",
								  v, p->vocab);
	}
	p->tie = tfm_gguf_find_tensor(f, "output.weight") == NULL;
	return TFM_OK;
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
		return llama_params(p, capped, f, st);
	if (alen == 4 && memcmp(arch, "gpt2", 4) == 0)
		return tfm_gguf_gpt2_params(p, f, st);
	return tfm_status_set(st, TFM_EUNSUPPORTED,
						  "GGUF architecture \"%.*s\" is not supported (tfm imports llama and gpt2)",
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
	bool		gpt2 = p->arch == TFM_HF_GPT2;
	const char *const (*top)[2] = gpt2 ? tfm_gguf_gpt2_top : llama_top;
	const char *const (*blk)[2] = gpt2 ? tfm_gguf_gpt2_blk : llama_blk;
	const char *layers = gpt2 ? "transformer.h" : "model.layers";
	unsigned	layer;
	int			used = 0;

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
						  TFM_GGUF_SHOWN(t->name, t->name_len), gpt2 ? "gpt2" : "llama");
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
	if (p->arch != TFM_HF_LLAMA)
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
	float	   *vals;
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
	vals = malloc(t->n_values * sizeof(float));
	if (!vals)
		return tfm_status_set(st, TFM_ENOMEM, "out of memory converting tensor \"%.*s\"", TFM_GGUF_SHOWN(t->name, t->name_len));
	if ((rc = tfm_gguf_tensor_f32(vals, &sh, t, src, p, st)) == 0)
	{
		sh.name = t->name;
		sh.name_len = t->name_len;
		if (tfm_hf_load_tensor(m, map, e, &sh, (const uint8_t *) vals, err, sizeof(err)) != 0)
			rc = tfm_status_set(st, TFM_EBADFILE, "%s", err);
	}
	free(vals);
	return rc;
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
		if (!e || e->use == TFM_HF_BUFFER)
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
		e->use == TFM_HF_COPY || e->use == TFM_HF_TRANSPOSE ? 0 : (int) e->col0, (int) t->ne[1], NULL};
	*heads = rope_heads(p, t);
	return tfm_model_int4_fits(m, k) ? 1 : 0;
}
