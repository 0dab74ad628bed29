/*
 * tok_internal.h — what the files of src/core/tokenizer share and the
 * rest of tfm need not see: allocation and error helpers, growable
 * buffers, the interned-string table, the 64-bit key map, the layouts of
 * the counter and the tokenizer, and the pre-tokenizers.
 */
#ifndef TFM_TOK_INTERNAL_H
#define TFM_TOK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tfm/status.h"
#include "tfm/tokenizer.h"
#include "../util/grow.h"

/* ---- allocation and errors (tok_util.c) ---------------------------------- */
void *tfm_tok_alloc(size_t n);
void *tfm_tok_calloc(size_t n, size_t size);          /* zeroed, overflow-checked */
void  tfm_tok_dealloc(void *p);                       /* p may be NULL */

int   tfm_tok_oom(tfm_status *err);

uint64_t tfm_tok_hash(const uint8_t *s, size_t n);

/* ---- growable arrays ------------------------------------------------------- */
typedef struct tfm_tok_bytes
{
	uint8_t *data;
	size_t   len, cap;
} tfm_tok_bytes;

typedef struct tfm_tok_ivec
{
	int32_t *data;
	size_t   len, cap;
} tfm_tok_ivec;

int  tfm_tok_bytes_append(tfm_tok_bytes *b, const void *p, size_t n);
int  tfm_tok_ivec_push(tfm_tok_ivec *v, int32_t x);
void tfm_tok_bytes_free(tfm_tok_bytes *b);
void tfm_tok_ivec_free(tfm_tok_ivec *v);

/* ---- interned byte strings: entry index is dense, insertion-ordered ------- */
typedef struct tfm_tok_strtab
{
	uint8_t  *pool;       /* key bytes */
	size_t    pool_len, pool_cap;
	uint64_t *off;        /* entry i: pool[off[i] .. off[i] + len[i]) */
	uint32_t *len;
	uint32_t *hash;       /* low 32 bits of the key's hash */
	int32_t   n;          /* entries */
	size_t    cap;        /* room in off/len/hash */
	int32_t  *slots;      /* open addressing: entry index, -1 = empty */
	size_t    mask;       /* slots - 1 (power of two), 0 before first insert */
} tfm_tok_strtab;

void    tfm_tok_strtab_free(tfm_tok_strtab *s);
void    tfm_tok_strtab_clear(tfm_tok_strtab *s);   /* keeps the memory */
int32_t tfm_tok_strtab_find(const tfm_tok_strtab *s, const uint8_t *k, size_t n);
/* finds or appends; *idx = entry, *added = 1 when new (added may be NULL) */
int     tfm_tok_strtab_intern(int32_t *idx, int *added, tfm_tok_strtab *s,
							  const uint8_t *k, size_t n);
size_t  tfm_tok_strtab_memory(const tfm_tok_strtab *s);
/* piece i of a vocabulary appended to s; else s is freed and the error
 * returned (out of memory, or the piece of an earlier id) */
int     tfm_tok_vocab_add(tfm_tok_strtab *s, const uint8_t *piece, size_t len, int32_t i,
						  tfm_status *err);

static inline const uint8_t *
tfm_tok_strtab_key(const tfm_tok_strtab *s, int32_t i)
{
	return s->pool + s->off[i];
}

/* ---- 64-bit key -> int32 map (pairs of ids) ------------------------------- */
typedef struct tfm_tok_u64map
{
	uint64_t *keys;       /* UINT64_MAX = empty */
	int32_t  *vals;
	size_t    mask, n;
} tfm_tok_u64map;

void    tfm_tok_u64map_free(tfm_tok_u64map *m);
int32_t tfm_tok_u64map_get(const tfm_tok_u64map *m, uint64_t key);  /* -1 if none */
int     tfm_tok_u64map_put(tfm_tok_u64map *m, uint64_t key, int32_t val);

static inline uint64_t
tfm_tok_pair_key(int32_t left, int32_t right)
{
	return ((uint64_t) (uint32_t) left << 32) | (uint32_t) right;
}

/* ---- counter (tok_counter.c) ------------------------------------------------ */
struct tfm_tok_counter
{
	tfm_tok_options opt;
	tfm_tok_strtab  keys;     /* pre-tokens, words or characters */
	int64_t        *counts;   /* per key */
	size_t          counts_cap;
	int64_t         rows;
	tfm_tok_bytes   scratch;  /* lower-cased word */
};

/* ---- tokenizer (tok_vocab.c) ------------------------------------------------ */
struct tfm_tokenizer
{
	tfm_tok_info   info;
	int          (*poll)(void *arg);   /* tfm_tok_set_poll; NULL: never */
	void          *poll_arg;
	uint8_t       *piece_pool;     /* piece of id i: piece_pool[piece_off[i] .. piece_off[i+1]) */
	uint64_t      *piece_off;      /* vocab_size + 1 */
	size_t         max_piece_len;
	tfm_tok_strtab lookup;         /* distinct pieces */
	int32_t       *lookup_id;      /* entry -> id (lowest non-special id wins) */
	int32_t        byte_id[256];   /* id of each one-byte piece, -1 if none */
	int32_t       *merge_left, *merge_right, *merge_result;   /* by rank */
	tfm_tok_u64map merge_rank;     /* pair -> v: rank v < n_merges, else alias v - n_merges */
	tfm_tok_ivec   alias_rank;     /* GPT2_JS aliases: rank and result of each */
	tfm_tok_ivec   alias_result;
	uint8_t       *is_special;     /* by id */
	int32_t        fallback_id[256];   /* SPIECE: id of <0xNN>, -1 if none */
	int32_t        space_id;       /* SPIECE: id of "▁", -1 if none */
	struct tfm_tok_unigram *uni;   /* UNIGRAM: scores, pipeline, trie (unigram/tok_unigram_model.h) */
	void         (*uni_free)(struct tfm_tok_unigram *u);   /* set with uni by its loader */
	struct tfm_tok_added *added;   /* bpe: added tokens found in text (tok_added.c) */

	/* encode state (mutable) */
	tfm_tok_strtab cache;          /* bpe: pre-token -> ids */
	uint32_t      *cache_start;    /* per cache entry: first id in cache_ids */
	uint16_t      *cache_len;
	size_t         cache_meta_cap;
	tfm_tok_ivec   cache_ids;
	tfm_tok_ivec   work;           /* bpe symbols */
	tfm_tok_ivec   work2;
	tfm_tok_ivec   work3;
	tfm_tok_bytes  wbuf;           /* lower-cased word, "##" piece */
	struct tfm_tok_splits *splits; /* SPLIT: the rules (tok_split_pcre.c) */
	tfm_tok_bytes  nbuf;           /* NFC: the normalized text ... */
	size_t        *nalign;         /* ... and each byte's input offset */
	size_t         nalign_cap;
};

/* byte kind: byte b has id TFM_TOK_N_SPECIALS + b */
#define TFM_TOK_BYTE_BASE TFM_TOK_N_SPECIALS

static inline size_t
tfm_tok_piece_len(const tfm_tokenizer *t, int32_t id)
{
	return (size_t) (t->piece_off[id + 1] - t->piece_off[id]);
}

static inline const uint8_t *
tfm_tok_piece_ptr(const tfm_tokenizer *t, int32_t id)
{
	return t->piece_pool + t->piece_off[id];
}

/* ---- pre-tokenizers (tok_pretok.c) ------------------------------------------ */
/* length in bytes of the GPT-2 pre-token at the start of s (n >= 1) */
size_t tfm_tok_gpt2_next(const uint8_t *s, size_t n);
/* the same for Llama 3's (cl100k's) pattern */
size_t tfm_tok_llama3_next(const uint8_t *s, size_t n);

/* Word splitter (word, wordpiece): from *pos, skips whitespace and returns 1
 * with the next token [*start, *start + *len): a run of letters, marks and
 * numbers, or one other character, or one invalid unit (*invalid = 1).
 * Returns 0 at the end. */
int tfm_tok_word_next(size_t *start, size_t *len, int *invalid,
					  const uint8_t *s, size_t n, size_t *pos);

/* appends the simple lower-case form of valid UTF-8 s to b */
int tfm_tok_lower_append(tfm_tok_bytes *b, const uint8_t *s, size_t n);

/* ---- BERT's normalizer and pre-tokenizer (tok_bert.c) ---------------------- */
/* called with each normalized word, the input offset of its first
 * character and, for each of its len bytes, the offset from there of the
 * input character it came from: returns 1 to go on, 0 to stop, -1 on
 * out-of-memory */
typedef int (*tfm_tok_bert_cb)(void *arg, const uint8_t *word, size_t len, size_t off,
							   const int32_t *rel);
/* scratch holds the word being built; lower and strip say whether to
 * lower-case and to strip accents; returns TFM_OK or TFM_ENOMEM */
int tfm_tok_bert_words(tfm_tok_bytes *scratch, const uint8_t *s, size_t len,
					   int lower, int strip, tfm_tok_bert_cb cb, void *arg);
/* ---- training pieces (tok_bpe_train.c) --------------------------------------- */
typedef struct tfm_tok_bpe_job
{
	tfm_tok_strtab *vocab;          /* piece of id i = entry i; grows */
	const int32_t  *syms;           /* initial symbols of all words, concatenated */
	const size_t   *word_start;     /* n_words + 1 */
	const int64_t  *word_count;
	int32_t         n_words;
	int32_t         target;         /* vocabulary size to reach */
	int64_t         min_count;
	int             wordpiece;      /* a merge drops the "##" of its right piece */
	tfm_tok_progress_fn progress;
	void           *progress_arg;
	tfm_tok_ivec   *merges;         /* out: left, right pairs by rank */
} tfm_tok_bpe_job;

int tfm_tok_bpe_learn(tfm_tok_bpe_job *job, tfm_status *err);

/* ---- building (tok_vocab.c) ---------------------------------------------------- */
/* the rows' pieces (ids 0 .. vocab_size-1) into tab; on error tab is freed */
int tfm_tok_rows_strtab(tfm_tok_strtab *tab, const tfm_tok_info *info,
						const uint8_t *const *pieces, const size_t *piece_lens, tfm_status *err);
/* pieces from a strtab (entry i = id i) */
int tfm_tok_build_from_strtab(tfm_tokenizer **out, const tfm_tok_info *info,
							  const tfm_tok_strtab *pieces,
							  const int32_t *merge_lr, tfm_status *err);

/* ---- added tokens found in text (tok_added.c) ------------------------------ */
void tfm_tok_added_free(struct tfm_tok_added *a);
/* a list of n tokens of t (ids, TFM_TOK_ADDED_* flags) to find in text, any kind */
int  tfm_tok_added_build(struct tfm_tok_added **out, const tfm_tokenizer *t, const int32_t *ids,
						 const uint8_t *flags, int32_t n, tfm_status *err);
/* the first token of list ad of pass (0: normalized false, 1: true) in
 * s[from..len), specials skipped if asked: 1 with its id and the span
 * [*a, *b) it takes (with the White_Space lstrip / rstrip take, never
 * before from), 0 if none, -1 when t's poll said stop */
int  tfm_tok_added_find(int32_t *id, size_t *a, size_t *b, const struct tfm_tok_added *ad,
						const tfm_tokenizer *t, int pass, int skip_specials, const uint8_t *s,
						size_t len, size_t from);

/* ---- SentencePiece-style BPE (tok_spiece.c) ---------------------------------- */
/* emits ids (and byte offsets) of text; *n_out ids, at most cap */
int  tfm_tok_spiece_encode(int32_t *ids, size_t *offs, size_t cap, size_t *n_out,
						   tfm_tokenizer *t, const uint8_t *s, size_t len);
int  tfm_tok_spiece_decode(char *out, size_t cap, size_t *n_out, const tfm_tokenizer *t,
						   const int32_t *ids, size_t n_ids, uint32_t flags, tfm_status *err);
/* raw[0..len) into out (*n_out bytes), invalid UTF-8 as U+FFFD with
 * TFM_TOK_DECODE_REPLACE; TFM_ELIMIT if cap is too small (SentencePiece's
 * and Unigram's decode) */
int  tfm_tok_put_text(char *out, size_t cap, size_t *n_out, const uint8_t *raw, size_t len,
					  uint32_t flags, tfm_status *err);

/* ---- SentencePiece Unigram (tok_unigram.c) ------------------------------------ */
int  tfm_tok_unigram_encode(int32_t *ids, size_t *offs, size_t cap, size_t *n_out,
							tfm_tokenizer *t, const uint8_t *s, size_t len);
int  tfm_tok_unigram_decode(char *out, size_t cap, size_t *n_out, const tfm_tokenizer *t,
							const int32_t *ids, size_t n_ids, uint32_t flags, tfm_status *err);
/* the bytes the normalizer and pre-tokenizer make of s (SIZE_MAX if they cannot) */
size_t tfm_tok_unigram_normalized_len(tfm_tokenizer *t, const uint8_t *s, size_t len);

/* ---- GPT-2's printable byte mapping (tok_gpt2.c) ------------------------------ */
/* dec[cp] = the byte that code point cp stands for, -1 if none */
void tfm_tok_byte_decoder(int16_t dec[324]);
/* the raw bytes of the printable form s[0..n) into out (replacing its
 * contents); TFM_EFORMAT for a character outside the mapping */
int  tfm_tok_byte_unmap(tfm_tok_bytes *out, const int16_t dec[324], const uint8_t *s, size_t n);

/* ---- bpe encoding of one pre-token (tok_bpe_encode.c) ------------------------ */
/* merge sym[0..n) in place, lowest rank first, leftmost among equals (a heap
 * of (rank, position) over the list next/prev, which it sets); aliases: the
 * ranks of Hugging Face's alias pieces too.  Polls t's cancel hook. */
int tfm_tok_merge_all(const tfm_tokenizer *t, int32_t *sym, int32_t *next, int32_t *prev,
					  size_t n, int aliases);
int tfm_tok_bpe_encode_word(tfm_tok_ivec *out, tfm_tokenizer *t,
							const uint8_t *s, size_t n);

/* ---- a binary min-heap of (rank << 32 | position), for BPE merges -------- */
static inline void
tfm_tok_heap_push(uint64_t *h, size_t *n, uint64_t x)
{
	size_t i = (*n)++;

	while (i > 0)
	{
		size_t p = (i - 1) / 2;

		if (h[p] <= x)
			break;
		h[i] = h[p];
		i = p;
	}
	h[i] = x;
}

static inline uint64_t
tfm_tok_heap_pop(uint64_t *h, size_t *n)
{
	uint64_t top = h[0], x = h[--(*n)];
	size_t i = 0;

	for (;;)
	{
		size_t c = 2 * i + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1] < h[c])
			c++;
		if (x <= h[c])
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n > 0)
		h[i] = x;
	return top;
}

#endif /* TFM_TOK_INTERNAL_H */
