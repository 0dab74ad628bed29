/*
 * bleu.c: sacreBLEU's corpus BLEU (defaults: 13a, exp smoothing, order 4):
 * the 13a tokenizer, n-gram counting of one segment, the score from the
 * summed counts.  See include/tfm/bleu.h for the contract.
 *
 * The tokenizer.  sacreBLEU runs Python string replacements and four
 * re.sub passes over the whole line.  Here:
 *
 *   - the string replacements (which never lengthen the line) run in place
 *     on a copy, left to right and non-overlapping like str.replace;
 *   - every whitespace character (Python's str.isspace(): ASCII 09-0D,
 *     1C-1F, space, and U+0085 U+00A0 U+1680 U+2000-200A U+2028 U+2029
 *     U+202F U+205F U+3000) then becomes one ASCII space.  No pattern
 *     matches any of them except the first, which pads the ASCII space;
 *     in the later patterns they are all [^0-9] and not [.,-], so swapping
 *     one for another, or one for a run of spaces, changes no match and
 *     only the amount of whitespace between tokens, which the final
 *     split drops;
 *   - each re.sub pass is a transducer with one byte of look-back (all
 *     four patterns match one or two characters), chained so that each
 *     pass's output streams into the next and the last one splits tokens.
 *     Python's re.sub tries a match at position i and, on failure, copies
 *     s[i] and tries i + 1; after a match it continues after it.  A stage
 *     holding s[i] and receiving s[i + 1] does exactly that.  Working on
 *     UTF-8 bytes instead of code points gives the same output: the
 *     patterns' literal characters are ASCII, a multi-byte character can
 *     only be the [^0-9] side, and splitting it into bytes that are each
 *     [^0-9] and not [.,-] moves no match boundary.
 *
 * The output (tokens joined by single spaces) never needs more than 2 bytes
 * per input byte (each token byte is an input byte; one separator before
 * each token but the first), so the preprocessed copy lives in the tail of
 * the caller's buffer and is overwritten only after it has been read.
 *
 * Counting.  Tokens of the hypothesis and of every reference are interned
 * to integer ids by sorting them; n-grams become keys of 4 ids (unused
 * places 0) that are sorted per order, and each distinct hypothesis n-gram's
 * count is clipped by its largest count in any one reference, found by
 * merging sorted lists.  O(T log T) in the segment's tokens T.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tfm/bleu.h"

/* ---- the 13a tokenizer ------------------------------------------------------ */

/* byte length of the Python whitespace character at s (n > 0 bytes left), or 0 */
static size_t
ws_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];

	if (c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f))
		return 1;
	if (c == 0xc2 && n >= 2 && (s[1] == 0x85 || s[1] == 0xa0))
		return 2;				/* U+0085, U+00A0 */
	if (n < 3)
		return 0;
	if (c == 0xe1 && s[1] == 0x9a && s[2] == 0x80)
		return 3;				/* U+1680 */
	if (c == 0xe2 && s[1] == 0x80 &&
		((s[2] >= 0x80 && s[2] <= 0x8a) || s[2] == 0xa8 || s[2] == 0xa9 || s[2] == 0xaf))
		return 3;				/* U+2000-200A, U+2028, U+2029, U+202F */
	if (c == 0xe2 && s[1] == 0x81 && s[2] == 0x9f)
		return 3;				/* U+205F */
	if (c == 0xe3 && s[1] == 0x80 && s[2] == 0x80)
		return 3;				/* U+3000 */
	return 0;
}

/* length of s[0..n) without trailing whitespace (Python's str.rstrip()) */
static size_t
rstrip_len(const unsigned char *s, size_t n)
{
	while (n > 0)
	{
		if (ws_len(s + n - 1, 1) == 1)
			n--;
		else if (n >= 2 && ws_len(s + n - 2, 2) == 2)
			n -= 2;
		else if (n >= 3 && ws_len(s + n - 3, 3) == 3)
			n -= 3;
		else
			break;
	}
	return n;
}

/* str.replace(pat, rep) in place, for len(rep) <= len(pat); returns the new length */
static size_t
replace_all(char *s, size_t n, const char *pat, const char *rep)
{
	size_t		pn = strlen(pat),
				rn = strlen(rep),
				r = 0,
				w = 0;

	while (r < n)
	{
		if (n - r >= pn && s[r] == pat[0] && memcmp(s + r, pat, pn) == 0)
		{
			memcpy(s + w, rep, rn);
			w += rn;
			r += pn;
		}
		else
			s[w++] = s[r++];
	}
	return w;
}

/* every whitespace character -> one ASCII space, in place */
static size_t
spaces_to_ascii(char *s, size_t n)
{
	size_t		r = 0,
				w = 0;

	while (r < n)
	{
		size_t		k = ws_len((const unsigned char *) s + r, n - r);

		if (k)
		{
			s[w++] = ' ';
			r += k;
		}
		else
			s[w++] = s[r++];
	}
	return w;
}

static inline int
is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static inline int
is_dot_comma(int c)
{
	return c == '.' || c == ',';
}

/* [\{-\~\[-\` -\&\(-\+\:-\@\/]: space ! " # $ % & ( ) * + / : ; < = > ? @ [ \ ] ^ _ ` { | } ~ */
static inline int
is_pad_class(int c)
{
	return (c >= 0x7b && c <= 0x7e) || (c >= 0x5b && c <= 0x60) ||
		(c >= 0x20 && c <= 0x26) || (c >= 0x28 && c <= 0x2b) ||
		(c >= 0x3a && c <= 0x40) || c == '/';
}

/* the chained re.sub passes 2..4 and the final split; pend[k] = -1: none */
typedef struct tok_stream
{
	char	   *out;
	size_t		n;				/* bytes written */
	int			in_token;		/* the last byte written belongs to a token still open */
	int			pend2,
				pend3,
				pend4;
} tok_stream;

/* ' '.join(line.split()) */
static void
st_split(tok_stream *ts, int c)
{
	if (c == ' ')
	{
		ts->in_token = 0;
		return;
	}
	if (!ts->in_token && ts->n > 0)
		ts->out[ts->n++] = ' ';
	ts->out[ts->n++] = (char) c;
	ts->in_token = 1;
}

/* ([0-9])(-) -> \1 \2 */
static void
st4(tok_stream *ts, int c)
{
	int			p = ts->pend4;

	if (p < 0)
	{
		ts->pend4 = c;
		return;
	}
	if (is_digit(p) && c == '-')
	{
		st_split(ts, p);
		st_split(ts, ' ');
		st_split(ts, '-');
		st_split(ts, ' ');
		ts->pend4 = -1;
	}
	else
	{
		st_split(ts, p);
		ts->pend4 = c;
	}
}

/* ([\.,])([^0-9]) ->  \1 \2 */
static void
st3(tok_stream *ts, int c)
{
	int			p = ts->pend3;

	if (p < 0)
	{
		ts->pend3 = c;
		return;
	}
	if (is_dot_comma(p) && !is_digit(c))
	{
		st4(ts, ' ');
		st4(ts, p);
		st4(ts, ' ');
		st4(ts, c);
		ts->pend3 = -1;
	}
	else
	{
		st4(ts, p);
		ts->pend3 = c;
	}
}

/* ([^0-9])([\.,]) -> \1 \2 */
static void
st2(tok_stream *ts, int c)
{
	int			p = ts->pend2;

	if (p < 0)
	{
		ts->pend2 = c;
		return;
	}
	if (!is_digit(p) && is_dot_comma(c))
	{
		st3(ts, p);
		st3(ts, ' ');
		st3(ts, c);
		st3(ts, ' ');
		ts->pend2 = -1;
	}
	else
	{
		st3(ts, p);
		ts->pend2 = c;
	}
}

/* ([\{-\~\[-\` -\&\(-\+\:-\@\/]) ->  \1 */
static void
st1(tok_stream *ts, int c)
{
	if (is_pad_class(c))
	{
		st2(ts, ' ');
		st2(ts, c);
		st2(ts, ' ');
	}
	else
		st2(ts, c);
}

static void
st_flush(tok_stream *ts)
{
	if (ts->pend2 >= 0)
	{
		int			p = ts->pend2;

		ts->pend2 = -1;
		st3(ts, p);
	}
	if (ts->pend3 >= 0)
	{
		int			p = ts->pend3;

		ts->pend3 = -1;
		st4(ts, p);
	}
	if (ts->pend4 >= 0)
	{
		int			p = ts->pend4;

		ts->pend4 = -1;
		st_split(ts, p);
	}
}

/* ---- the caller's poll ------------------------------------------------------- */

#define POLL_EVERY 65536		/* units of work (tokens, bytes / 16, sort steps) */

typedef struct bleu_poller
{
	tfm_bleu_poll_fn fn;
	void	   *arg;
	size_t		work;			/* since the last call */
	int			stopped;
} bleu_poller;

/* counts work; calls the poll every POLL_EVERY units: nonzero once told to stop */
static int
tick(bleu_poller *pp, size_t work)
{
	if (pp->stopped)
		return 1;
	if (!pp->fn)
		return 0;
	pp->work += work;
	if (pp->work >= POLL_EVERY)
	{
		pp->work = 0;
		pp->stopped = pp->fn(pp->arg) != 0;
	}
	return pp->stopped;
}

/*
 * The tokenization, polling every POLL_EVERY bytes of each pass (pp NULL:
 * never); SIZE_MAX once the poll said stop.
 */
static size_t
tokenize_polled(char *out, const char *text, size_t len, bleu_poller *pp)
{
	char	   *work = out + len + 1;	/* len bytes at the tail of out */
	size_t		n = rstrip_len((const unsigned char *) text, len);
	tok_stream	ts = {out, 0, 0, -1, -1, -1};
	static const char *const pats[7][2] = {
		{"<skipped>", ""}, {"-\n", ""}, {"\n", " "}, {"&quot;", "\""}, {"&amp;", "&"},
		{"&lt;", "<"}, {"&gt;", ">"}
	};

	if (n > 0)
		memcpy(work, text, n);
	for (int k = 0; k < 7; k++)
	{
		n = replace_all(work, n, pats[k][0], pats[k][1]);
		if (pp && tick(pp, n))
			return SIZE_MAX;
	}
	n = spaces_to_ascii(work, n);

	/* " {} ".format(line), streamed through the four passes */
	st1(&ts, ' ');
	for (size_t i = 0; i < n; i++)
	{
		st1(&ts, (unsigned char) work[i]);
		if ((i & (POLL_EVERY - 1)) == POLL_EVERY - 1 && pp && tick(pp, POLL_EVERY))
			return SIZE_MAX;
	}
	st1(&ts, ' ');
	st_flush(&ts);
	out[ts.n] = '\0';
	return ts.n;
}

size_t
tfm_bleu_tokenize_13a(char *out, const char *text, size_t len)
{
	return tokenize_polled(out, text, len, NULL);
}

size_t
tfm_bleu_tokenize_13a_polled(char *out, const char *text, size_t len, tfm_bleu_poll_fn poll,
							 void *arg)
{
	bleu_poller pp = {poll, arg, 0, 0};

	return tokenize_polled(out, text, len, &pp);
}

/* ---- counting ---------------------------------------------------------------- */

typedef struct tok_span
{
	const char *p;
	uint32_t	len;
	uint32_t	pos;			/* index among all tokens of the segment */
} tok_span;

typedef struct ngram_key
{
	uint32_t	w[TFM_BLEU_MAX_ORDER];	/* token ids (>= 1), 0 past the order */
} ngram_key;

static int
span_cmp(const void *a, const void *b)
{
	const tok_span *x = a,
			   *y = b;
	uint32_t	m = x->len < y->len ? x->len : y->len;
	int			c = memcmp(x->p, y->p, m);

	if (c != 0)
		return c;
	return (x->len > y->len) - (x->len < y->len);
}

static int
key_cmp(const void *a, const void *b)
{
	const ngram_key *x = a,
			   *y = b;

	for (int i = 0; i < TFM_BLEU_MAX_ORDER; i++)
		if (x->w[i] != y->w[i])
			return x->w[i] < y->w[i] ? -1 : 1;
	return 0;
}

/* tokens (runs of non-' ' bytes) of s[0..n) */
static size_t
count_tokens(const char *s, size_t n)
{
	size_t		k = 0;

	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && (i == 0 || s[i - 1] == ' '))
			k++;
	return k;
}

/* appends the tokens of s[0..n) to spans from index *at */
static void
split_tokens(tok_span *spans, size_t *at, const char *s, size_t n)
{
	size_t		i = 0;

	while (i < n)
	{
		size_t		j;

		while (i < n && s[i] == ' ')
			i++;
		if (i == n)
			break;
		j = i;
		while (j < n && s[j] != ' ')
			j++;
		spans[*at].p = s + i;
		spans[*at].len = (uint32_t) (j - i);
		spans[*at].pos = (uint32_t) *at;
		(*at)++;
		i = j;
	}
}

#define SORT_RUN 32
#define SORT_MAX_SIZE 32

/*
 * A stable merge sort that polls between runs and merges (qsort cannot be
 * interrupted): TFM_OK, TFM_ECANCELED or TFM_ENOMEM, base
 * then in some order.  Elements are at most SORT_MAX_SIZE bytes.
 */
static int
psort(void *base, size_t n, size_t size, int (*cmp) (const void *, const void *),
	  bleu_poller *pp)
{
	char	   *a = base,
			   *tmp,
			   *src,
			   *dst;
	char		el[SORT_MAX_SIZE];

	if (n < 2)
		return TFM_OK;
	/* runs of SORT_RUN by insertion */
	for (size_t lo = 0; lo < n; lo += SORT_RUN)
	{
		size_t		hi = lo + SORT_RUN < n ? lo + SORT_RUN : n;

		for (size_t i = lo + 1; i < hi; i++)
		{
			size_t		j = i;

			memcpy(el, a + i * size, size);
			while (j > lo && cmp(a + (j - 1) * size, el) > 0)
			{
				memcpy(a + j * size, a + (j - 1) * size, size);
				j--;
			}
			memcpy(a + j * size, el, size);
		}
		if (tick(pp, (hi - lo) * 4))
			return TFM_ECANCELED;
	}
	if (n <= SORT_RUN)
		return TFM_OK;
	tmp = malloc(n * size);
	if (tmp == NULL)
		return TFM_ENOMEM;
	src = a;
	dst = tmp;
	for (size_t w = SORT_RUN; w < n; w *= 2)
	{
		char	   *t;

		for (size_t lo = 0; lo < n; lo += 2 * w)
		{
			size_t		mid = lo + w < n ? lo + w : n,
						hi = lo + 2 * w < n ? lo + 2 * w : n,
						i = lo,
						j = mid,
						k = lo;

			while (i < mid && j < hi)
			{
				/* ties take the left run: stable */
				if (cmp(src + j * size, src + i * size) < 0)
					memcpy(dst + (k++) * size, src + (j++) * size, size);
				else
					memcpy(dst + (k++) * size, src + (i++) * size, size);
			}
			if (i < mid)
				memcpy(dst + k * size, src + i * size, (mid - i) * size);
			else if (j < hi)
				memcpy(dst + k * size, src + j * size, (hi - j) * size);
			if (tick(pp, hi - lo))
			{
				free(tmp);
				return TFM_ECANCELED;
			}
		}
		t = src;
		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, n * size);
	free(tmp);
	return TFM_OK;
}

/* keys of the order-n n-grams of ids[0..len), sorted, in *k; a psort status */
static int
make_keys(ngram_key *keys, size_t *k_out, const uint32_t *ids, size_t len, int n,
		  bleu_poller *pp)
{
	size_t		k = len >= (size_t) n ? len - (size_t) n + 1 : 0;

	*k_out = k;
	for (size_t i = 0; i < k; i++)
		for (int j = 0; j < TFM_BLEU_MAX_ORDER; j++)
			keys[i].w[j] = j < n ? ids[i + (size_t) j] : 0;
	if (tick(pp, k))
		return TFM_ECANCELED;
	return psort(keys, k, sizeof(ngram_key), key_cmp, pp);
}

/* sacreBLEU's _get_closest_ref_len: the nearest length, ties to the shorter */
static int64_t
closest_ref_len(int64_t hyp_len, const size_t *lens, int n)
{
	int64_t		best = -1,
				best_diff = -1;

	for (int i = 0; i < n; i++)
	{
		int64_t		r = (int64_t) lens[i];
		int64_t		d = hyp_len > r ? hyp_len - r : r - hyp_len;

		if (best_diff < 0 || d < best_diff)
		{
			best_diff = d;
			best = r;
		}
		else if (d == best_diff && r < best)
			best = r;
	}
	return best;
}

static int
bleu_count(int64_t stats[TFM_BLEU_N_STATS], const char *hyp, size_t hyp_len,
		   const char *const *refs, const size_t *ref_lens, int n_refs, bleu_poller *pp)
{
	int64_t		seg[TFM_BLEU_N_STATS] = {0};
	size_t		lh,
				total,
				max_lr = 0,
				at = 0,
				nbytes;
	size_t	   *lr;
	tok_span   *spans;
	uint32_t   *ids,
			   *cnt,
			   *maxref;
	ngram_key  *hkeys,
			   *rkeys;
	char	   *mem;
	uint32_t	id = 0;
	int			status;

	if (n_refs < 1)
		return TFM_EINVAL;

	/* token counts: hypothesis, each reference */
	lh = count_tokens(hyp, hyp_len);
	total = lh;
	lr = malloc(sizeof(size_t) * (size_t) n_refs);
	if (lr == NULL)
		return TFM_ENOMEM;
	for (int r = 0; r < n_refs; r++)
	{
		lr[r] = count_tokens(refs[r], ref_lens[r]);
		if (lr[r] > max_lr)
			max_lr = lr[r];
		total += lr[r];			/* each <= its text's bytes: no wrap */
	}
	if (total >= UINT32_MAX)
	{
		free(lr);
		return TFM_ELIMIT;
	}

	/* one block: spans[total], hkeys[lh], rkeys[max_lr], ids[total], cnt[lh], maxref[lh] */
	nbytes = sizeof(tok_span) * total + sizeof(ngram_key) * (lh + max_lr) +
		sizeof(uint32_t) * (total + 2 * lh) + 1;
	mem = malloc(nbytes);
	if (mem == NULL)
	{
		free(lr);
		return TFM_ENOMEM;
	}
	spans = (tok_span *) mem;
	hkeys = (ngram_key *) (spans + total);
	rkeys = hkeys + lh;
	ids = (uint32_t *) (rkeys + max_lr);
	cnt = ids + total;
	maxref = cnt + lh;

	/* intern: equal tokens get equal ids >= 1 */
	split_tokens(spans, &at, hyp, hyp_len);
	status = tick(pp, hyp_len / 16) ? TFM_ECANCELED : TFM_OK;
	for (int r = 0; r < n_refs && status == TFM_OK; r++)
	{
		split_tokens(spans, &at, refs[r], ref_lens[r]);
		if (tick(pp, ref_lens[r] / 16))
			status = TFM_ECANCELED;
	}
	if (status == TFM_OK)
		status = psort(spans, total, sizeof(tok_span), span_cmp, pp);
	for (size_t i = 0; i < total && status == TFM_OK; i++)
	{
		if (i == 0 || span_cmp(&spans[i - 1], &spans[i]) != 0)
			id++;
		ids[spans[i].pos] = id;
		if ((i & (POLL_EVERY - 1)) == POLL_EVERY - 1 && tick(pp, POLL_EVERY))
			status = TFM_ECANCELED;
	}

	for (int n = 1; n <= TFM_BLEU_MAX_ORDER && status == TFM_OK; n++)
	{
		size_t		nh,
					nd = 0,
					off = lh;
		int64_t		matches = 0;

		status = make_keys(hkeys, &nh, ids, lh, n, pp);
		if (status != TFM_OK)
			break;
		seg[TFM_BLEU_TOTALS + n - 1] = (int64_t) nh;
		if (nh == 0)
			continue;
		/* distinct hypothesis n-grams and their counts */
		for (size_t i = 0; i < nh; i++)
		{
			if (nd > 0 && key_cmp(&hkeys[nd - 1], &hkeys[i]) == 0)
				cnt[nd - 1]++;
			else
			{
				hkeys[nd] = hkeys[i];
				cnt[nd] = 1;
				maxref[nd] = 0;
				nd++;
			}
		}
		/* the largest count of each in any one reference */
		for (int r = 0; r < n_refs && status == TFM_OK; r++)
		{
			size_t		nr,
						i = 0,
						j = 0;

			status = make_keys(rkeys, &nr, ids + off, lr[r], n, pp);
			if (status != TFM_OK)
				break;
			off += lr[r];
			while (i < nd && j < nr)
			{
				int			c = key_cmp(&hkeys[i], &rkeys[j]);

				if (c < 0)
					i++;
				else if (c > 0)
					j++;
				else
				{
					uint32_t	k = 0;

					while (j < nr && key_cmp(&hkeys[i], &rkeys[j]) == 0)
					{
						k++;
						j++;
					}
					if (k > maxref[i])
						maxref[i] = k;
					i++;
				}
			}
		}
		if (status != TFM_OK)
			break;
		for (size_t i = 0; i < nd; i++)
			matches += cnt[i] < maxref[i] ? cnt[i] : maxref[i];
		seg[TFM_BLEU_MATCHES + n - 1] = matches;
	}
	seg[TFM_BLEU_SYS_LEN] = (int64_t) lh;
	seg[TFM_BLEU_REF_LEN] = closest_ref_len((int64_t) lh, lr, n_refs);

	free(mem);
	free(lr);
	if (status != TFM_OK)
		return status;
	return tfm_bleu_stats_add(stats, seg);
}

int
tfm_bleu_add(int64_t stats[TFM_BLEU_N_STATS], const char *hyp, size_t hyp_len,
			 const char *const *refs, const size_t *ref_lens, int n_refs)
{
	return tfm_bleu_add_polled(stats, hyp, hyp_len, refs, ref_lens, n_refs, NULL, NULL);
}

int
tfm_bleu_add_polled(int64_t stats[TFM_BLEU_N_STATS], const char *hyp, size_t hyp_len,
					const char *const *refs, const size_t *ref_lens, int n_refs,
					tfm_bleu_poll_fn poll, void *arg)
{
	bleu_poller pp = {poll, arg, 0, 0};

	size_t		nbytes,
				hn;
	int			usable = 0,
				k = 0,
				status;
	char	   *mem,
			   *p;
	const char **tr;
	size_t	   *tl;

	/* sizes cannot wrap: no text is near SIZE_MAX / 4 bytes in a real address space */
	if (hyp_len > SIZE_MAX / 8)
		return TFM_ENOMEM;
	nbytes = TFM_BLEU_TOKENIZED_MAX(hyp_len);
	for (int r = 0; r < n_refs; r++)
	{
		if (refs[r] == NULL || ref_lens[r] == 0)
			continue;
		if (ref_lens[r] > SIZE_MAX / 8 || nbytes > SIZE_MAX / 2)
			return TFM_ENOMEM;
		nbytes += TFM_BLEU_TOKENIZED_MAX(ref_lens[r]);
		usable++;
	}
	if (usable == 0)
		return TFM_EINVAL;

	tr = malloc((sizeof(const char *) + sizeof(size_t)) * (size_t) usable);
	mem = malloc(nbytes);
	if (tr == NULL || mem == NULL)
	{
		free(tr);
		free(mem);
		return TFM_ENOMEM;
	}
	tl = (size_t *) (tr + usable);

	hn = tokenize_polled(mem, hyp, hyp_len, &pp);
	p = mem + TFM_BLEU_TOKENIZED_MAX(hyp_len);
	status = hn == SIZE_MAX || tick(&pp, hyp_len / 16) ? TFM_ECANCELED : TFM_OK;
	for (int r = 0; r < n_refs && status == TFM_OK; r++)
	{
		if (refs[r] == NULL || ref_lens[r] == 0)
			continue;
		tr[k] = p;
		tl[k] = tokenize_polled(p, refs[r], ref_lens[r], &pp);
		p += TFM_BLEU_TOKENIZED_MAX(ref_lens[r]);
		if (tl[k] == SIZE_MAX || tick(&pp, ref_lens[r] / 16))
			status = TFM_ECANCELED;
		k++;
	}
	if (status == TFM_OK)
		status = bleu_count(stats, mem, hn, tr, tl, usable, &pp);
	free(mem);
	free(tr);
	return status;
}

/* ---- statistics and score ------------------------------------------------------ */

int
tfm_bleu_stats_check(const int64_t s[TFM_BLEU_N_STATS])
{
	for (int i = 0; i < TFM_BLEU_N_STATS; i++)
		if (s[i] < 0)
			return TFM_EFORMAT;
	if (s[TFM_BLEU_SYS_LEN] != s[TFM_BLEU_TOTALS])
		return TFM_EFORMAT;
	for (int n = 0; n < TFM_BLEU_MAX_ORDER; n++)
	{
		if (s[TFM_BLEU_MATCHES + n] > s[TFM_BLEU_TOTALS + n])
			return TFM_EFORMAT;
		if (n > 0 && s[TFM_BLEU_TOTALS + n] > s[TFM_BLEU_TOTALS + n - 1])
			return TFM_EFORMAT;
	}
	return TFM_OK;
}

int
tfm_bleu_stats_add(int64_t a[TFM_BLEU_N_STATS], const int64_t b[TFM_BLEU_N_STATS])
{
	int64_t		sum[TFM_BLEU_N_STATS];

	for (int i = 0; i < TFM_BLEU_N_STATS; i++)
		if (__builtin_add_overflow(a[i], b[i], &sum[i]))
			return TFM_ERANGE;
	memcpy(a, sum, sizeof(sum));
	return TFM_OK;
}

void
tfm_bleu_score(tfm_bleu_result *out, const int64_t stats[TFM_BLEU_N_STATS])
{
	const int64_t *correct = stats + TFM_BLEU_MATCHES,
			   *total = stats + TFM_BLEU_TOTALS;
	int64_t		sys_len = stats[TFM_BLEU_SYS_LEN],
				ref_len = stats[TFM_BLEU_REF_LEN];
	double		smooth_mteval = 1.0,
				sum = 0.0;
	int			any = 0;

	memset(out, 0, sizeof(*out));
	out->ratio = ref_len ? (double) sys_len / (double) ref_len : 0.0;
	if (sys_len < ref_len)
		out->bp = sys_len > 0 ? exp(1.0 - (double) ref_len / (double) sys_len) : 0.0;
	else
		out->bp = 1.0;

	for (int n = 0; n < TFM_BLEU_MAX_ORDER; n++)
		any |= correct[n] != 0;
	if (!any)
		return;					/* score 0, precisions 0 */

	for (int n = 0; n < TFM_BLEU_MAX_ORDER; n++)
	{
		if (total[n] == 0)
			break;
		if (correct[n] == 0)
		{
			smooth_mteval *= 2.0;
			out->precisions[n] = 100.0 / (smooth_mteval * (double) total[n]);
		}
		else
			out->precisions[n] = 100.0 * (double) correct[n] / (double) total[n];
	}
	/* Python's sum() from 0, left to right; my_log(0) is -9999999999 */
	for (int n = 0; n < TFM_BLEU_MAX_ORDER; n++)
		sum += out->precisions[n] == 0.0 ? -9999999999.0 : log(out->precisions[n]);
	out->score = out->bp * exp(sum / (double) TFM_BLEU_MAX_ORDER);
}
