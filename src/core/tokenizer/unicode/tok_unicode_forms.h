/*
 * tok_unicode_forms.h — the Unicode normalization forms NFC, NFD, NFKC and
 * NFKD (UAX #15) and the General_Category Mark test of StripAccents,
 * internal to src/core/tokenizer (tok_unicode_forms.c): what the byte-level
 * BPE encoder's NFC (tok_encode.c), the Unigram normalizer steps
 * (tok_unigram_norm.c) and the unit tests call.
 */
#ifndef TFM_TOK_UNICODE_FORMS_H
#define TFM_TOK_UNICODE_FORMS_H

#include "../tok_internal.h"

#define TFM_TOK_UFORM_COMPOSE 1u   /* compose after decomposing (NFC, NFKC) */
#define TFM_TOK_UFORM_COMPAT  2u   /* compatibility decomposition (NFKC, NFKD) */
#define TFM_TOK_UFORM_NFC  TFM_TOK_UFORM_COMPOSE
#define TFM_TOK_UFORM_NFD  0u
#define TFM_TOK_UFORM_NFKC (TFM_TOK_UFORM_COMPOSE | TFM_TOK_UFORM_COMPAT)
#define TFM_TOK_UFORM_NFKD TFM_TOK_UFORM_COMPAT

extern const char tfm_uforms_unicode_version[];

/*
 * The normalization form `form` (TFM_TOK_UFORM_*) of s[0..n) into out
 * (cleared first), with align[k] the offset in s of the character output
 * byte k comes from (a composed character: its first); offsets never
 * decrease.  *same is set, and out left empty, when s is unchanged by the
 * quick test (NFC: no character at or above U+0300; the other forms: ASCII
 * only).  Invalid UTF-8 units are copied as they are and compose with
 * nothing.  TFM_OK, TFM_ELIMIT (n over 4 GB) or TFM_ENOMEM.
 */
int tfm_tok_unicode_form(tfm_tok_bytes *out, size_t **align, size_t *align_cap, int *same,
						 const uint8_t *s, size_t n, unsigned form);

/* whether cp is of General_Category Mark (Mn, Mc, Me) */
int tfm_tok_is_mark(int32_t cp);

#endif /* TFM_TOK_UNICODE_FORMS_H */
