/*
 * tok_split_pcre.c: the Split pre-tokenizer of a Hugging Face
 * tokenizer.json on PCRE2 — any regular expression, with the behaviours
 * and invert the file gives, as tokenizers (Rust) applies them.
 *
 * A rule is compiled once, when it is added to the tokenizer, with UTF and
 * UCP (so \s, \w, \d and the POSIX classes are Unicode's, as in Oniguruma
 * and Python's regex) and MATCH_INVALID_UTF (a byte that is not UTF-8
 * matches nothing and ends up in a gap); to machine code by PCRE2's JIT
 * where the library and the CPU have it, else interpreted.  Every match
 * runs under limits, so a pattern written to backtrack for ever fails with
 * TFM_ELIMIT instead of holding the backend: TFM_TOK_SPLIT_MATCH_LIMIT
 * steps and TFM_TOK_SPLIT_HEAP_KB of backtracking memory a match (the JIT
 * stack at most TFM_TOK_SPLIT_JIT_STACK bytes); between matches the
 * tokenizer's cancel check is polled.  Patterns are at most
 * TFM_TOK_MAX_SPLIT_PATTERN_BYTES long, and a tokenizer has at most
 * TFM_TOK_MAX_SPLITS rules.
 *
 * One rule over one piece (tokenizers' NormalizedString::split): the
 * matches, left to right (after an empty match the next one may not be
 * empty at the same place: PCRE2's and Python's rule), and the gaps between
 * them; invert swaps the two; then Isolated keeps every one as a piece,
 * Removed drops the matches, MergedWithPrevious joins a match to the piece
 * before it, MergedWithNext to the piece after it, Contiguous joins
 * neighbours of the same kind; empty pieces are dropped.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "tok_split.h"

typedef struct split_rule
{
	char	   *pattern;		/* as given, NUL-terminated */
	size_t		len;
	tfm_tok_split_behavior behavior;
	int			invert;
	pcre2_code *code;
	int			jit;
} split_rule;

typedef struct span
{
	size_t		start,
				end;
	int			flag;			/* a match (then: removed) */
} span;

struct tfm_tok_splits
{
	int			n;
	split_rule	rule[TFM_TOK_MAX_SPLITS];
	pcre2_match_data *md;
	pcre2_match_context *mctx;
	pcre2_jit_stack *jstack;
	/* per text: pieces (start, end pairs) in two arrays used in turn, and
	 * one piece's matches and gaps */
	size_t	   *buf[2];
	size_t		cap[2];
	span	   *spans;
	size_t		spans_cap;
};

static const char *const behavior_names[] = {
	"Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous"
};

const char *
tfm_tok_split_behavior_name(tfm_tok_split_behavior b)
{
	return (unsigned) b < sizeof(behavior_names) / sizeof(behavior_names[0]) ? behavior_names[b] : NULL;
}

int
tfm_tok_split_behavior_parse(tfm_tok_split_behavior *b, const char *name)
{
	for (unsigned i = 0; i < sizeof(behavior_names) / sizeof(behavior_names[0]); i++)
		if (strcmp(name, behavior_names[i]) == 0)
		{
			*b = (tfm_tok_split_behavior) i;
			return TFM_OK;
		}
	return TFM_EINVAL;
}

void
tfm_tok_splits_free(tfm_tok_splits *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->n; i++)
	{
		pcre2_code_free(s->rule[i].code);
		tfm_tok_dealloc(s->rule[i].pattern);
	}
	pcre2_match_data_free(s->md);
	pcre2_match_context_free(s->mctx);
	pcre2_jit_stack_free(s->jstack);
	tfm_tok_dealloc(s->buf[0]);
	tfm_tok_dealloc(s->buf[1]);
	tfm_tok_dealloc(s->spans);
	tfm_tok_dealloc(s);
}

/* the splits of t, created with their match context the first time */
static int
splits_of(tfm_tok_splits **out, tfm_tokenizer *t)
{
	tfm_tok_splits *s = t->splits;

	if (!s)
	{
		s = tfm_tok_calloc(1, sizeof(*s));
		if (!s)
			return TFM_ENOMEM;
		s->md = pcre2_match_data_create(1, NULL);
		s->mctx = pcre2_match_context_create(NULL);
		s->jstack = pcre2_jit_stack_create(32 * 1024, TFM_TOK_SPLIT_JIT_STACK, NULL);
		if (!s->md || !s->mctx)
		{
			tfm_tok_splits_free(s);
			return TFM_ENOMEM;
		}
		pcre2_set_match_limit(s->mctx, TFM_TOK_SPLIT_MATCH_LIMIT);
		pcre2_set_depth_limit(s->mctx, TFM_TOK_SPLIT_MATCH_LIMIT);
		pcre2_set_heap_limit(s->mctx, TFM_TOK_SPLIT_HEAP_KB);
		if (s->jstack)
			pcre2_jit_stack_assign(s->mctx, NULL, s->jstack);
		t->splits = s;
	}
	*out = s;
	return TFM_OK;
}

int
tfm_tok_add_split(tfm_tokenizer *t, const char *pattern, size_t len,
				  tfm_tok_split_behavior behavior, int invert, tfm_status *err)
{
	tfm_tok_splits *s;
	split_rule *r;
	int			ecode;
	PCRE2_SIZE	eoff;
	PCRE2_UCHAR msg[256];

	if (!(t->info.flags & TFM_TOK_INFO_SPLIT))
		return tfm_status_set(err, TFM_EINVAL, "this tokenizer has no Split pre-tokenizer");
	if (!tfm_tok_split_behavior_name(behavior))
		return tfm_status_set(err, TFM_EINVAL, "unknown Split behavior %d", (int) behavior);
	if (len == 0 || len > TFM_TOK_MAX_SPLIT_PATTERN_BYTES)
		return tfm_status_set(err, TFM_ELIMIT, "a Split pattern must be 1 to %d bytes long, not %zu",
							  TFM_TOK_MAX_SPLIT_PATTERN_BYTES, len);
	if (memchr(pattern, '\0', len) || !tfm_tok_utf8_valid(pattern, len))
		return tfm_status_set(err, TFM_EINVAL, "a Split pattern must be UTF-8 text without NUL");
	if (splits_of(&s, t) != TFM_OK)
		return tfm_tok_oom(err);
	if (s->n >= TFM_TOK_MAX_SPLITS)
		return tfm_status_set(err, TFM_ELIMIT, "a tokenizer has at most %d Split rules",
							  TFM_TOK_MAX_SPLITS);
	r = &s->rule[s->n];
	memset(r, 0, sizeof(*r));
	r->code = pcre2_compile((PCRE2_SPTR) pattern, len,
							PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &ecode, &eoff, NULL);
	if (!r->code)
	{
		pcre2_get_error_message(ecode, msg, sizeof(msg));
		return tfm_status_set(err, TFM_EINVAL, "Split pattern error at byte %zu: %s",
							  (size_t) eoff, (const char *) msg);
	}
	r->pattern = tfm_tok_alloc(len + 1);
	if (!r->pattern)
	{
		pcre2_code_free(r->code);
		return tfm_tok_oom(err);
	}
	memcpy(r->pattern, pattern, len);
	r->pattern[len] = '\0';
	r->len = len;
	r->behavior = behavior;
	r->invert = invert != 0;
	/* machine code where PCRE2 can; interpreted otherwise (same matches) */
	r->jit = s->jstack && getenv("TFM_NO_PCRE2_JIT") == NULL &&
		pcre2_jit_compile(r->code, PCRE2_JIT_COMPLETE) == 0;
	s->n++;
	return TFM_OK;
}

int
tfm_tok_n_splits(const tfm_tokenizer *t)
{
	return t->splits ? t->splits->n : 0;
}

int
tfm_tok_get_split(const char **pattern, size_t *len, tfm_tok_split_behavior *behavior, int *invert,
				  const tfm_tokenizer *t, int i)
{
	const split_rule *r;

	if (i < 0 || i >= tfm_tok_n_splits(t))
		return TFM_ERANGE;
	r = &t->splits->rule[i];
	*pattern = r->pattern;
	*len = r->len;
	*behavior = r->behavior;
	*invert = r->invert;
	return TFM_OK;
}

int
tfm_tok_split_jit(const tfm_tokenizer *t, int i)
{
	return i >= 0 && i < tfm_tok_n_splits(t) && t->splits->rule[i].jit;
}

static int
push_span(tfm_tok_splits *s, size_t *n, size_t start, size_t end, int flag)
{
	if (tfm_grow((void **) &s->spans, &s->spans_cap, *n + 1, sizeof(span)))
		return TFM_ENOMEM;
	s->spans[*n].start = start;
	s->spans[*n].end = end;
	s->spans[*n].flag = flag;
	(*n)++;
	return TFM_OK;
}

/* the matches and gaps of rule r over subject[0..len) into s->spans (offsets
 * relative to the subject), flag = is a match (after invert) */
static int
find_spans(size_t *n_out, tfm_tok_splits *s, const split_rule *r, tfm_tokenizer *t,
		   const uint8_t *subject, size_t len, tfm_status *err)
{
	size_t		prev = 0,
				at = 0,
				n = 0;
	uint32_t	opts = 0;
	int			count = 0;

	while (at <= len)
	{
		int			rc;
		PCRE2_SIZE *ov;

		if ((++count & 4095) == 0 && t->poll && t->poll(t->poll_arg) != 0)
			return tfm_status_set(err, TFM_ECANCELED, "encoding canceled");
		rc = pcre2_match(r->code, subject, len, at, opts, s->md, s->mctx);
		if (rc == PCRE2_ERROR_NOMATCH)
		{
			if (opts == 0)
				break;
			/* no non-empty match where the empty one was: one character on */
			at++;
			while (at < len && (subject[at] & 0xC0) == 0x80)
				at++;
			opts = 0;
			continue;
		}
		if (rc < 0)
		{
			PCRE2_UCHAR msg[256];

			pcre2_get_error_message(rc, msg, sizeof(msg));
			return tfm_status_set(err, (rc == PCRE2_ERROR_NOMEMORY) ? TFM_ENOMEM : TFM_ELIMIT,
								  "the Split pattern \"%.40s\" failed on a text: %s",
								  r->pattern, (const char *) msg);
		}
		ov = pcre2_get_ovector_pointer(s->md);
		if (ov[0] > prev && push_span(s, &n, prev, ov[0], r->invert))
			return TFM_ENOMEM;
		if (push_span(s, &n, ov[0], ov[1], !r->invert))
			return TFM_ENOMEM;
		prev = ov[1];
		at = ov[1];
		opts = (ov[0] == ov[1]) ? (PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED) : 0;
		if (ov[0] == ov[1] && at >= len)
			break;
	}
	if (prev < len && push_span(s, &n, prev, len, r->invert))
		return TFM_ENOMEM;
	*n_out = n;
	return TFM_OK;
}

/* the behaviour applied to spans[0..n) in place: *n_out pieces, flag =
 * removed (tokenizers' fold over (offsets, is_match)) */
static size_t
apply_behavior(span *sp, size_t n, tfm_tok_split_behavior b)
{
	size_t		k = 0;
	int			prev = 0;

	switch (b)
	{
		case TFM_TOK_SPLIT_ISOLATED:
			for (size_t i = 0; i < n; i++)
				sp[i].flag = 0;
			return n;
		case TFM_TOK_SPLIT_REMOVED:
			return n;
		case TFM_TOK_SPLIT_CONTIGUOUS:
		case TFM_TOK_SPLIT_MERGED_WITH_PREVIOUS:
			for (size_t i = 0; i < n; i++)
			{
				int			m = sp[i].flag;
				int			join = (b == TFM_TOK_SPLIT_CONTIGUOUS) ? (m == prev) : (m && !prev);

				if (join && k > 0)
					sp[k - 1].end = sp[i].end;
				else
				{
					sp[k] = sp[i];
					sp[k++].flag = 0;
				}
				prev = m;
			}
			return k;
		case TFM_TOK_SPLIT_MERGED_WITH_NEXT:
			/* from the right: a match joins the piece after it; the kept
			 * pieces fill the array from its end, then move down */
			k = n;
			for (size_t i = n; i-- > 0;)
			{
				int			m = sp[i].flag;

				if (m && !prev && k < n)
					sp[k].start = sp[i].start;
				else
				{
					sp[--k] = sp[i];
					sp[k].flag = 0;
				}
				prev = m;
			}
			memmove(sp, sp + k, (n - k) * sizeof(span));
			return n - k;
	}
	return n;
}

int
tfm_tok_split_run(const size_t **pieces, size_t *n_pieces, tfm_tokenizer *t,
				  const uint8_t *s, size_t n, tfm_status *err)
{
	tfm_tok_splits *sp = t->splits;
	size_t		have = 0;
	int			cur = 0,
				st;

	*pieces = NULL;
	*n_pieces = 0;
	if (!sp || sp->n == 0)
		return tfm_status_set(err, TFM_EFORMAT, "the tokenizer's Split rules are missing");
	if (n == 0)
		return TFM_OK;
	if (tfm_grow((void **) &sp->buf[0], &sp->cap[0], 2, sizeof(size_t)))
		return tfm_tok_oom(err);
	sp->buf[0][0] = 0;
	sp->buf[0][1] = n;
	have = 1;
	for (int ri = 0; ri < sp->n; ri++)
	{
		const split_rule *r = &sp->rule[ri];
		int			nxt = 1 - cur;
		size_t		got = 0;

		for (size_t p = 0; p < have; p++)
		{
			size_t		a = sp->buf[cur][2 * p],
						b = sp->buf[cur][2 * p + 1],
						ns,
						kept;

			if ((st = find_spans(&ns, sp, r, t, s + a, b - a, err)) != TFM_OK)
				return st == TFM_ENOMEM ? tfm_tok_oom(err) : st;
			kept = apply_behavior(sp->spans, ns, r->behavior);
			if (tfm_grow((void **) &sp->buf[nxt], &sp->cap[nxt], 2 * (got + kept), sizeof(size_t)))
				return tfm_tok_oom(err);
			for (size_t i = 0; i < kept; i++)
				if (!sp->spans[i].flag && sp->spans[i].end > sp->spans[i].start)
				{
					sp->buf[nxt][2 * got] = a + sp->spans[i].start;
					sp->buf[nxt][2 * got + 1] = a + sp->spans[i].end;
					got++;
				}
		}
		cur = nxt;
		have = got;
	}
	*pieces = sp->buf[cur];
	*n_pieces = have;
	return TFM_OK;
}
