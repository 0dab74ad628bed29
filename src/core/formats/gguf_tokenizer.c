/*
 * gguf_tokenizer.c — the merges of a GGUF "llama" (SentencePiece BPE)
 * vocabulary, which stores scores instead: llama.cpp's SPM tokenizer joins,
 * at each step, the adjacent pair whose concatenation is the piece of
 * highest score.  As ranked merges (what tfm's SentencePiece-style BPE
 * runs), that is every split of a piece into two pieces of the vocabulary,
 * pieces taken by score, highest first (ties by id).  A "gpt2" (byte-level
 * BPE) vocabulary stores its merges as text: "a b", made pairs of ids;
 * its tokenizer.ggml.pre names the pre-tokenizer (bpe_pre).
 */
#include "tfm/gguf.h"

#include <stdlib.h>
#include <string.h>

#include "tfm/tokenizer.h"

/* an open-addressing table of piece bytes -> id */
typedef struct piece_table
{
	int32_t    *slot;			/* -1 empty */
	uint64_t	mask;
	const uint8_t *const *pieces;
	const size_t *lens;
} piece_table;

static uint64_t
hash_bytes(const uint8_t *p, size_t n)
{
	uint64_t	h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

static int32_t
table_get(const piece_table *t, const uint8_t *p, size_t n)
{
	for (uint64_t i = hash_bytes(p, n) & t->mask;; i = (i + 1) & t->mask)
	{
		int32_t		id = t->slot[i];

		if (id < 0)
			return -1;
		if (t->lens[id] == n && memcmp(t->pieces[id], p, n) == 0)
			return id;
	}
}

/* the sort order: score descending, then id */
static const float *sort_scores;

static int
by_score(const void *a, const void *b)
{
	int32_t		x = *(const int32_t *) a,
				y = *(const int32_t *) b;

	if (sort_scores[x] != sort_scores[y])
		return sort_scores[x] > sort_scores[y] ? -1 : 1;
	return (x > y) - (x < y);
}

/* the table of n pieces (the first id of a piece given twice wins, as
 * llama.cpp's token_to_id); false if out of memory */
static bool
table_init(piece_table *t, const uint8_t *const *pieces, const size_t *lens, int32_t n)
{
	uint64_t	cap = 16;

	while (cap < 2 * (uint64_t) n)
		cap <<= 1;
	t->slot = malloc(cap * sizeof(int32_t));
	if (!t->slot)
		return false;
	memset(t->slot, 0xff, cap * sizeof(int32_t));
	t->mask = cap - 1;
	t->pieces = pieces;
	t->lens = lens;
	for (int32_t id = 0; id < n; id++)
	{
		uint64_t	i = hash_bytes(pieces[id], lens[id]) & t->mask;

		if (table_get(t, pieces[id], lens[id]) >= 0)
			continue;
		while (t->slot[i] >= 0)
			i = (i + 1) & t->mask;
		t->slot[i] = id;
	}
	return true;
}

int
tfm_gguf_spm_merges(int32_t **merge_lr, int32_t *n_merges, const uint8_t *const *pieces,
					const size_t *lens, const float *scores, const int32_t *types, int32_t n,
					tfm_status *st)
{
	piece_table t = {0};
	int32_t    *order = NULL,
			   *out = NULL;
	size_t		n_out = 0,
				out_cap = 0;

	*merge_lr = NULL;
	*n_merges = 0;
	order = malloc((size_t) (n > 0 ? n : 1) * sizeof(int32_t));
	if (!order || !table_init(&t, pieces, lens, n))
		goto nomem;
	for (int32_t id = 0; id < n; id++)
		order[id] = id;
	sort_scores = scores;
	qsort(order, (size_t) n, sizeof(int32_t), by_score);
	for (int32_t k = 0; k < n; k++)
	{
		int32_t		id = order[k];
		const uint8_t *p = pieces[id];

		if ((types[id] != 1 && types[id] != 4) || table_get(&t, p, lens[id]) != id)
			continue;
		for (size_t cut = 1; cut < lens[id]; cut++)
		{
			int32_t		l,
						r;

			if ((p[cut] & 0xC0) == 0x80)	/* inside a UTF-8 character */
				continue;
			l = table_get(&t, p, cut);
			r = l < 0 ? -1 : table_get(&t, p + cut, lens[id] - cut);
			if (r < 0)
				continue;
			if (n_out == (size_t) TFM_TOK_MAX_VOCAB_SIZE)
			{
				free(t.slot);
				free(order);
				free(out);
				return tfm_status_set(st, TFM_ELIMIT, "the vocabulary's pieces make more than %d merges",
									  TFM_TOK_MAX_VOCAB_SIZE);
			}
			if (n_out == out_cap)
			{
				size_t		nc = out_cap ? 2 * out_cap : 1024;
				int32_t    *grown = realloc(out, nc * 2 * sizeof(int32_t));

				if (!grown || nc > (size_t) INT32_MAX)
				{
					free(grown ? grown : out);
					out = NULL;
					goto nomem;
				}
				out = grown;
				out_cap = nc;
			}
			out[2 * n_out] = l;
			out[2 * n_out + 1] = r;
			n_out++;
		}
	}
	free(t.slot);
	free(order);
	*merge_lr = out;
	*n_merges = (int32_t) n_out;
	return TFM_OK;
nomem:
	free(t.slot);
	free(order);
	free(out);
	return tfm_status_set(st, TFM_ENOMEM, "out of memory deriving the merges of a GGUF vocabulary");
}

/* a typed array key of n elements (n from the first array read when *n < 0) */
static int
get_array(const tfm_gguf_kv **kv, const tfm_gguf_file *f, const char *key, uint32_t elem,
		  int64_t *n, int64_t max, tfm_status *st)
{
	*kv = tfm_gguf_find(f, key);
	if (!*kv)
		return tfm_status_set(st, TFM_EBADFILE, "metadata key \"%s\" is missing", key);
	if ((*kv)->type != TFM_GGUF_ARRAY || (*kv)->elem != elem)
		return tfm_status_set(st, TFM_EBADFILE, "metadata \"%s\" is not an array of the right type", key);
	if (*n < 0)
	{
		if ((*kv)->n < 1 || (*kv)->n > (uint64_t) max)
			return tfm_status_set(st, TFM_ELIMIT, "metadata \"%s\" has %llu elements (1 to %lld)", key,
								  (unsigned long long) (*kv)->n, (long long) max);
		*n = (int64_t) (*kv)->n;
	}
	else if ((*kv)->n != (uint64_t) *n)
		return tfm_status_set(st, TFM_EBADFILE, "metadata \"%s\" has %llu elements, not %lld", key,
							  (unsigned long long) (*kv)->n, (long long) *n);
	return TFM_OK;
}

/* an id key among n tokens; absent: dflt (-1: none) */
static int
get_id(int32_t *id, const tfm_gguf_file *f, const char *key, int32_t dflt, int64_t n,
	   tfm_status *st)
{
	int64_t		v = dflt;
	int			rc = tfm_gguf_get_int(&v, f, key, false, st);

	if (rc)
		return rc;
	if (v == -1 && dflt == -1 && !tfm_gguf_find(f, key))
	{
		*id = -1;
		return TFM_OK;
	}
	if (v < 0 || v >= n)
		return tfm_status_set(st, TFM_EBADFILE, "metadata \"%s\" is %lld, not an id of the %lld tokens",
							  key, (long long) v, (long long) n);
	*id = (int32_t) v;
	return TFM_OK;
}

void
tfm_gguf_vocab_free(tfm_gguf_vocab *v)
{
	if (!v)
		return;
	free(v->pieces);
	free(v->lens);
	free(v->scores);
	free(v->types);
	free(v->literal);
	free(v->merge_lr);
	free(v);
}

/* tokenizer.ggml.merges ("a b", in rank order) as pairs of ids */
static int
bpe_merges(tfm_gguf_vocab *v, const tfm_gguf_file *f, tfm_status *st)
{
	const tfm_gguf_kv *kv;
	int64_t		n = -1;
	piece_table t = {0};
	const uint8_t *p;
	int			rc;

	if ((rc = get_array(&kv, f, "tokenizer.ggml.merges", TFM_GGUF_STRING, &n,
						TFM_TOK_MAX_VOCAB_SIZE, st)) != 0)
		return rc;
	v->merge_lr = malloc(sizeof(int32_t) * 2 * n);
	if (!v->merge_lr || !table_init(&t, v->pieces, v->lens, v->n))
	{
		free(t.slot);
		return tfm_status_set(st, TFM_ENOMEM, "out of memory");
	}
	p = kv->val;
	for (int64_t i = 0; i < n && !rc; i++)
	{
		const char *m,
				   *sp;
		size_t		len;
		int32_t		l = -1,
					r = -1;

		p = tfm_gguf_next_str(p, &m, &len);
		sp = memchr(m, ' ', len);
		if (sp)
		{
			l = table_get(&t, (const uint8_t *) m, (size_t) (sp - m));
			r = table_get(&t, (const uint8_t *) sp + 1, len - (size_t) (sp - m) - 1);
		}
		if (l < 0 || r < 0)
			rc = tfm_status_set(st, TFM_EBADFILE,
								"tokenizer.ggml.merges %lld (\"%.*s\") is not two tokens of the vocabulary",
								(long long) i, (int) tfm_utf8_cut(m, len < 48 ? len : 48), m);
		v->merge_lr[2 * i] = l;
		v->merge_lr[2 * i + 1] = r;
	}
	free(t.slot);
	v->n_merges = (int32_t) n;
	return rc;
}

/*
 * Qwen2's (and Qwen2.5's, Qwen3's) pre-tokenizer: its tokenizer.json's one
 * Split rule (Isolated), after an NFC normalizer; llama.cpp's "qwen2" runs
 * the same pattern (its case-insensitive contractions spelled out) without
 * NFC, so on text that is not in NFC llama.cpp's ids differ from Hugging
 * Face's, which tfm gives
 */
#define QWEN2_SPLIT "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

/* tokenizer.ggml.pre as the flags (and Split pattern) of tfm's byte-level BPE */
static int
bpe_pre(tfm_gguf_vocab *v, const tfm_gguf_file *f, tfm_status *st)
{
	static const struct
	{
		const char *name;
		uint32_t	flags;
		const char *split;
	}			known[] = {
		{"default", 0, NULL}, {"gpt-2", 0, NULL},
		{"llama-bpe", TFM_TOK_INFO_LLAMA3 | TFM_TOK_INFO_IGNORE_MERGES, NULL},
		{"smollm", TFM_TOK_INFO_DIGITS, NULL},
		{"qwen2", TFM_TOK_INFO_SPLIT | TFM_TOK_INFO_NFC, QWEN2_SPLIT},
	};
	const char *pre = "default";
	size_t		len = 7;
	int			rc = tfm_gguf_get_str(&pre, &len, f, "tokenizer.ggml.pre", false, st);

	if (rc)
		return rc;
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strlen(known[i].name) == len && memcmp(known[i].name, pre, len) == 0)
		{
			v->flags = known[i].flags;
			v->split = known[i].split;
			return TFM_OK;
		}
	return tfm_status_set(st, TFM_EUNSUPPORTED,
						  "tokenizer.ggml.pre \"%.*s\" is not supported (tfm reads default, gpt-2, llama-bpe, smollm and qwen2)",
						  (int) tfm_utf8_cut(pre, len < 32 ? len : 32), pre);
}

int
tfm_gguf_vocab_read(tfm_gguf_vocab **out, const tfm_gguf_file *f, int64_t max_tokens,
					tfm_status *st)
{
	const char *model;
	size_t		mlen;
	const tfm_gguf_kv *tok,
			   *sc = NULL,
			   *ty;
	int64_t		n = -1;
	int			rc;
	tfm_gguf_vocab *v;
	const uint8_t *p;
	bool		spm;

	*out = NULL;
	if ((rc = tfm_gguf_get_str(&model, &mlen, f, "tokenizer.ggml.model", true, st)) != 0)
		return rc;
	spm = mlen == 5 && memcmp(model, "llama", 5) == 0;
	if (!spm && !(mlen == 4 && memcmp(model, "gpt2", 4) == 0))
		return tfm_status_set(st, TFM_EUNSUPPORTED,
							  "tokenizer.ggml.model \"%.*s\" is not supported (tfm reads \"llama\", SentencePiece BPE, and \"gpt2\", byte-level BPE)",
							  (int) tfm_utf8_cut(model, mlen < 32 ? mlen : 32), model);
	if ((rc = get_array(&tok, f, "tokenizer.ggml.tokens", TFM_GGUF_STRING, &n, max_tokens, st)) != 0 ||
		(spm && (rc = get_array(&sc, f, "tokenizer.ggml.scores", TFM_GGUF_F32V, &n, max_tokens, st)) != 0) ||
		(rc = get_array(&ty, f, "tokenizer.ggml.token_type", TFM_GGUF_I32, &n, max_tokens, st)) != 0)
		return rc;
	v = calloc(1, sizeof(*v));
	if (!v)
		return tfm_status_set(st, TFM_ENOMEM, "out of memory");
	v->kind = spm ? TFM_GGUF_TOK_SPM : TFM_GGUF_TOK_BPE;
	v->n = (int32_t) n;
	v->pieces = malloc(sizeof(uint8_t *) * n);
	v->lens = malloc(sizeof(size_t) * n);
	v->scores = malloc(sizeof(float) * n);
	v->types = malloc(sizeof(int32_t) * n);
	v->literal = calloc(n, 1);
	if (!v->pieces || !v->lens || !v->scores || !v->types || !v->literal)
	{
		tfm_gguf_vocab_free(v);
		return tfm_status_set(st, TFM_ENOMEM, "out of memory");
	}
	p = tok->val;
	for (int64_t i = 0; i < n; i++)
	{
		const char *s;
		uint32_t	u = 0;

		p = tfm_gguf_next_str(p, &s, &v->lens[i]);
		v->pieces[i] = (const uint8_t *) s;
		if (sc)
			memcpy(&u, sc->val + 4 * i, 4);
		memcpy(&v->scores[i], &u, 4);
		memcpy(&v->types[i], ty->val + 4 * i, 4);
		v->literal[i] = !spm && (v->types[i] == 3 || v->types[i] == 4);
		if (v->scores[i] != v->scores[i])
		{
			tfm_gguf_vocab_free(v);
			return tfm_status_set(st, TFM_EBADFILE, "tokenizer.ggml.scores holds NaN at %lld", (long long) i);
		}
	}
	v->add_bos = spm;
	v->unk = spm ? 0 : -1;
	v->bos = spm ? 1 : -1;
	v->eos = spm ? 2 : -1;
	v->pad = -1;
	if ((rc = get_id(&v->unk, f, "tokenizer.ggml.unknown_token_id", v->unk, n, st)) != 0 ||
		(rc = get_id(&v->bos, f, "tokenizer.ggml.bos_token_id", v->bos, n, st)) != 0 ||
		(rc = get_id(&v->eos, f, "tokenizer.ggml.eos_token_id", v->eos, n, st)) != 0 ||
		(rc = get_id(&v->pad, f, "tokenizer.ggml.padding_token_id", v->pad, n, st)) != 0 ||
		(rc = tfm_gguf_get_bool(&v->add_bos, f, "tokenizer.ggml.add_bos_token", false, st)) != 0 ||
		(rc = spm ? tfm_gguf_spm_merges(&v->merge_lr, &v->n_merges, v->pieces, v->lens, v->scores,
										 v->types, v->n, st) :
		 bpe_merges(v, f, st)) != 0 ||
		(!spm && (rc = bpe_pre(v, f, st)) != 0))
	{
		tfm_gguf_vocab_free(v);
		return rc;
	}
	if (v->add_bos && v->bos < 0)
	{
		tfm_gguf_vocab_free(v);
		return tfm_status_set(st, TFM_EBADFILE, "tokenizer.ggml.add_bos_token is true without a bos_token_id");
	}
	*out = v;
	return TFM_OK;
}
