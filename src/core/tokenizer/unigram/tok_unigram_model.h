/*
 * tok_unigram_model.h — what the SentencePiece Unigram files of the
 * tokenizer share (internal): the precompiled character map
 * (tok_precompiled.c), the normalizer and pre-tokenizer pipeline
 * (tok_unigram_norm.c) and the model (tok_unigram.c: import, scores, trie,
 * Viterbi; tok_unigram_data.c: its stored bytes; tok_unigram_decode.c).
 */
#ifndef TFM_TOK_UNIGRAM_MODEL_H
#define TFM_TOK_UNIGRAM_MODEL_H

#include "../tok_internal.h"

/* ---- the precompiled character map (tok_precompiled.c) ------------------- */
typedef struct tfm_tok_charsmap
{
	uint32_t      *units;      /* the double array, host order */
	uint32_t       n_units;
	const uint8_t *strs;       /* normalized strings (points into the step's copy of the blob) */
	size_t         strs_len;
} tfm_tok_charsmap;

int    tfm_tok_charsmap_parse(tfm_tok_charsmap *m, const uint8_t *blob, size_t len, tfm_status *err);
void   tfm_tok_charsmap_free(tfm_tok_charsmap *m);
/* normalizes the prefix of s[0..n) (n >= 1): returns the bytes consumed,
 * *out / *out_len the replacement (sentencepiece's NormalizePrefix) */
size_t tfm_tok_charsmap_prefix(const uint8_t **out, size_t *out_len, const tfm_tok_charsmap *m,
							   const uint8_t *s, size_t n);

/* ---- text with each byte's offset in the input ----------------------------- */
typedef struct tfm_tok_otext
{
	uint8_t *b;
	size_t  *orig;             /* by byte: offset in the original text */
	size_t   len, cap;
} tfm_tok_otext;

void tfm_tok_otext_free(tfm_tok_otext *x);

/* ---- the model ------------------------------------------------------------- */
typedef struct tfm_tok_uni_step
{
	int       kind;            /* TFM_TOK_NORM_* */
	int       left, right;     /* Strip */
	uint8_t  *a;               /* Precompiled: the map; Replace: pattern; Prepend: text */
	size_t    a_len;
	uint8_t  *b;               /* Replace: content */
	size_t    b_len;
	tfm_tok_charsmap map;      /* Precompiled, parsed */
} tfm_tok_uni_step;

#define TFM_TOK_UNI_NORMAL  0
#define TFM_TOK_UNI_CONTROL 1  /* never matched by the model (a special) */
#define TFM_TOK_UNI_BYTE    2  /* <0xNN> of a byte_fallback model */
#define TFM_TOK_UNI_KIND(type) ((type) & 0x0F)
#define TFM_TOK_UNI_T_LSTRIP 0x10 /* CONTROL found in text: takes the White_Space before it */
#define TFM_TOK_UNI_T_RSTRIP 0x20 /* ... and after it */

typedef struct tfm_tok_unigram
{
	int32_t   n;               /* the file's pieces (ids 0 .. n-1); tfm's added specials follow */
	float    *score;           /* by id < n */
	uint8_t  *type;            /* by id < n: TFM_TOK_UNI_* */
	int32_t   unk_id;
	int       byte_fallback;
	float     unk_score;       /* lowest normal score - 10 (sentencepiece's kUnkPenalty) */
	int32_t   byte_piece[256]; /* id of <0xNN>, -1 if none */
	int       n_steps;
	tfm_tok_uni_step step[TFM_TOK_UNI_MAX_NORMALIZERS];
	uint32_t  pretok;          /* TFM_TOK_PRETOK_* */
	int       prepend;         /* TFM_TOK_PREPEND_* */
	uint8_t   repl[4];         /* Metaspace's replacement character */
	size_t    repl_len;
	uint32_t  decoder;         /* TFM_TOK_UDEC_* */
	/* the trie of the matchable pieces: (node << 8 | byte) -> child node */
	tfm_tok_u64map trie;
	int32_t  *node_id;         /* by node: the piece ending there, -1 if none */
	size_t    n_nodes;
	/* the specials found in text (SPECIALS_IN_TEXT; built at the first
	 * encode by tok_added.c) */
	struct tfm_tok_added *specials;
} tfm_tok_unigram;

void tfm_tok_unigram_free(tfm_tok_unigram *u);
/* is p[0..l) a byte piece <0xNN> (upper-case hex), its byte in *b */
int  tfm_tok_uni_byte_piece(const uint8_t *p, size_t l, int *b);
/* a normalizer step checked and copied into u (its precompiled map parsed) */
int  tfm_tok_uni_add_step(tfm_tok_unigram *u, const tfm_tok_norm_step *s, tfm_status *err);
/* the pre-tokenizer and decoder options checked into u */
int  tfm_tok_uni_set_pipeline(tfm_tok_unigram *u, uint32_t pretok, int prepend,
							  const uint8_t *repl, size_t repl_len, uint32_t decoder,
							  tfm_status *err);
/* the trie of t's matchable pieces, its byte pieces and unk score */
int  tfm_tok_uni_prepare(tfm_tokenizer *t, tfm_status *err);

/* ---- the normalizer and pre-tokenizer (tok_unigram_norm.c) ----------------- */
/* normalizes s[0..len) into out, then pre-tokenizes it: out holds the
 * words one after another, word k at [starts[k], starts[k + 1]) */
int  tfm_tok_unigram_pretokenize(tfm_tok_otext *out, tfm_tok_ivec *starts,
								 const tfm_tok_unigram *u, const uint8_t *s, size_t len);
/* the same for a part of a text: byte i of s is at offset orig[i] of the
 * text (orig NULL: at base + i); Metaspace's "first" prepends only where
 * the offset is 0 */
int  tfm_tok_unigram_pretokenize_at(tfm_tok_otext *out, tfm_tok_ivec *starts,
									const tfm_tok_unigram *u, const uint8_t *s, size_t len,
									const size_t *orig, size_t base);

/* ---- a part of a text, normalised and segmented (tok_unigram.c) --------------- */
/* the ids of s[0..len) (byte i at offset orig[i] of the text, or base + i)
 * appended after the *n_out already in out_ids (counted past cap) */
int  tfm_tok_uni_encode_part(int32_t *out_ids, size_t *offs, size_t cap, size_t *n_out,
							 tfm_tokenizer *t, const uint8_t *s, size_t len,
							 const size_t *orig, size_t base);
/* the normalized length of s[0..len), SIZE_MAX when it cannot be had */
size_t tfm_tok_uni_part_len(tfm_tokenizer *t, const uint8_t *s, size_t len);

/* ---- what is found before the normalizer (tok_unigram_specials.c) ------------ */
/* tfm_tok_unigram_encode and tfm_tok_unigram_normalized_len are there too */
/* Marian's language codes: s without every ">>…<<" in out, byte k from
 * offset orig[k] of s (orig grown as out), and the id of the code at the
 * start of s in *code (-1: none; unk when it is no piece) */
int  tfm_tok_uni_lang_codes(tfm_tok_bytes *out, size_t **orig, size_t *orig_cap, int32_t *code,
							const tfm_tokenizer *t, const uint8_t *s, size_t len);

#endif /* TFM_TOK_UNIGRAM_MODEL_H */
