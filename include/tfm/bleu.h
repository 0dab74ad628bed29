/*
 * tfm/bleu.h: corpus BLEU exactly as sacreBLEU 2.x computes it with its
 * defaults (plain C, no postgres.h).
 *
 * sacreBLEU's defaults: tokenizer '13a' (mteval-v13a), case-sensitive,
 * n-grams of order 1 to 4, smoothing 'exp', effective order off, brevity
 * penalty against the closest reference length (ties: the shorter one).
 * Corpus BLEU is a function of ten integer counts summed over segments, in
 * sacreBLEU's order:
 *
 *   [0] sys_len     hypothesis tokens
 *   [1] ref_len     closest reference length, per segment
 *   [2..5]          clipped n-gram matches, n = 1..4
 *   [6..9]          hypothesis n-grams, n = 1..4
 *
 * so the SQL aggregate keeps them as its state, sums them to combine
 * partial states, and scores at the end:
 *
 *   tfm_bleu_add        one segment's counts, from raw text     (SFUNC)
 *   tfm_bleu_stats_add  a += b                                  (COMBINEFUNC)
 *   tfm_bleu_score      BLEU from the counts                    (FINALFUNC)
 *
 * The tokenizer is public for tests and other callers:
 *
 *   tfm_bleu_tokenize_13a  sacreBLEU's Tokenizer13a applied to text.rstrip()
 *
 * Text is UTF-8 (any ASCII-compatible bytes are accepted; whitespace is
 * recognised as Python's str.isspace() in UTF-8).  References that are NULL
 * pointers or empty strings are ignored, as sacreBLEU ignores None and ""
 * references; a segment needs at least one other (TFM_EINVAL).
 *
 * Nothing here prints, exits or asserts on user input.  tfm_bleu_add
 * mallocs its scratch memory and frees it before returning, whatever the
 * outcome: no caller code runs while it holds it.
 */
#ifndef TFM_BLEU_H
#define TFM_BLEU_H

#include <stddef.h>
#include <stdint.h>

#include "tfm/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TFM_BLEU_MAX_ORDER 4		/* n-gram orders 1..4 */
#define TFM_BLEU_N_STATS   10		/* 2 + 2 * TFM_BLEU_MAX_ORDER */

/* index of each count in the statistics array */
enum
{
	TFM_BLEU_SYS_LEN = 0,
	TFM_BLEU_REF_LEN = 1,
	TFM_BLEU_MATCHES = 2,			/* + n - 1 for order n */
	TFM_BLEU_TOTALS = 6				/* + n - 1 for order n */
};

/*
 * A host's cancel check, called every so often (between texts and every
 * 2^16 tokens, sort steps or n-grams): nonzero stops the work, which frees
 * its memory and returns TFM_ECANCELED with stats unchanged.  It must
 * return (not longjmp): the counting holds malloc'd memory.
 */
typedef int (*tfm_bleu_poll_fn) (void *arg);

/* ---- tokenization ---------------------------------------------------------- */

/* bytes `out` must hold for tfm_bleu_tokenize_13a of len bytes (NUL included) */
#define TFM_BLEU_TOKENIZED_MAX(len) (2 * (size_t) (len) + 1)

/*
 * sacreBLEU's 13a tokenization of text.rstrip(): removes "<skipped>" and
 * "-\n", turns "\n" into a space, unescapes &quot; &amp; &lt; &gt; (in that
 * order, one pass each), pads the line with a space each side, then applies
 * the four regular expressions of mteval-v13a in turn:
 *
 *   ([\{-\~\[-\` -\&\(-\+\:-\@\/])  ->  " \1 "    (punctuation and symbols)
 *   ([^0-9])([\.,])                 ->  "\1 \2 "  (. and , not after a digit)
 *   ([\.,])([^0-9])                 ->  " \1 \2"  (. and , not before a digit)
 *   ([0-9])(-)                      ->  "\1 \2 "  (- after a digit)
 *
 * and joins the whitespace-separated tokens with single spaces.  Writes that
 * line, NUL-terminated, to out (TFM_BLEU_TOKENIZED_MAX(len) bytes, not
 * overlapping text; the tail of out serves as scratch) and returns its length.
 */
size_t		tfm_bleu_tokenize_13a(char *out, const char *text, size_t len);
/* the same calling poll(arg) every 64 kB or so: SIZE_MAX once it returned nonzero */
size_t		tfm_bleu_tokenize_13a_polled(char *out, const char *text, size_t len,
										 tfm_bleu_poll_fn poll, void *arg);

/* ---- counting ------------------------------------------------------------- */

/*
 * Adds to stats the counts of one segment from raw text: tokenizes hyp and
 * each usable reference (refs[i] not NULL and ref_lens[i] > 0) with
 * tfm_bleu_tokenize_13a, then counts (tokens are the runs of bytes other
 * than ' '; matches clip each hypothesis n-gram's count by its largest
 * count in any one reference).  TFM_EINVAL when no reference is
 * usable.  On any error stats is unchanged.
 */
int			tfm_bleu_add(int64_t stats[TFM_BLEU_N_STATS],
						 const char *hyp, size_t hyp_len,
						 const char *const *refs, const size_t *ref_lens, int n_refs);
/* tfm_bleu_add that calls poll(arg) regularly (NULL: never) */
int			tfm_bleu_add_polled(int64_t stats[TFM_BLEU_N_STATS],
								const char *hyp, size_t hyp_len,
								const char *const *refs, const size_t *ref_lens, int n_refs,
								tfm_bleu_poll_fn poll, void *arg);

/* ---- statistics ------------------------------------------------------------ */

/* TFM_OK if s could be a sum of segment counts, else TFM_EFORMAT:
 * every count >= 0, sys_len == unigram total, totals do not grow with the
 * order, matches <= totals */
int			tfm_bleu_stats_check(const int64_t s[TFM_BLEU_N_STATS]);

/* a += b; TFM_ERANGE (a unchanged) if a count would overflow */
int			tfm_bleu_stats_add(int64_t a[TFM_BLEU_N_STATS], const int64_t b[TFM_BLEU_N_STATS]);

/* ---- score ---------------------------------------------------------------- */

typedef struct tfm_bleu_result
{
	double		score;			/* BLEU in [0, 100] */
	double		precisions[TFM_BLEU_MAX_ORDER]; /* percent, smoothed; 0 after an order with no n-grams */
	double		bp;				/* brevity penalty */
	double		ratio;			/* sys_len / ref_len, 0 when ref_len is 0 */
} tfm_bleu_result;

/*
 * sacreBLEU's BLEU.compute_bleu with smooth_method 'exp' and effective order
 * off, operation for operation (so the double results are the same bits as
 * Python's on the same libm):
 *
 *   bp = sys_len < ref_len ? (sys_len > 0 ? exp(1 - ref_len / sys_len) : 0) : 1
 *   no match at any order: score 0, precisions 0
 *   for n = 1..4, stopping at the first order with no n-grams (its precision
 *   and the later ones stay 0):
 *     matches > 0: p_n = 100 * matches / totals
 *     matches = 0: p_n = 100 / (2^k * totals), k-th such order ('exp')
 *   score = bp * exp((log p_1 + ... + log p_4) / 4), with log 0 := -9999999999
 */
void		tfm_bleu_score(tfm_bleu_result *out, const int64_t stats[TFM_BLEU_N_STATS]);

#ifdef __cplusplus
}
#endif

#endif							/* TFM_BLEU_H */
