/*
 * json_match.c — the recognizer of a compiled schema's language: a stack
 * of frames, one per value being written (an object's property value or an
 * array's item pushes one), stepped one byte at a time.
 *
 * A frame answers a byte with TAKE (it keeps it), DONE (it keeps it and its
 * value is finished: a closing quote, brace or bracket, or a literal with
 * no longer candidate), PASS (its value is complete and the byte is not
 * its own: a number or a literal followed by ',' — the frame is popped and
 * its parent gets the byte), RETRY (it pushed a child or became one of its
 * anyOf alternatives, which gets the byte) or NO.  JSON's syntax makes this
 * deterministic: the bytes that continue a number or a literal are never
 * structural.  No prefix accepted is a dead end (every accepted prefix has
 * a completion): a number never grows past TFM_JSON_MAX_NUMBER bytes with a
 * digit still owed (nor its exponent past TFM_JSON_MAX_EXPONENT digits), and a \u escape is refused at its second digit when it
 * would be a surrogate.
 */
#include <string.h>

#include "json_internal.h"

enum
{
	R_TAKE, R_DONE, R_PASS, R_RETRY, R_NO
};

/* object phases */
enum
{
	O_START, O_OPEN, O_KEY, O_COLON, O_AFTER, O_KEYQ
};

/* array phases */
enum
{
	A_START, A_OPEN, A_AFTER
};

/* string phases */
enum
{
	S_START, S_IN, S_UTF, S_ESC, S_U
};

/* number phases */
enum
{
	N_START, N_SIGN, N_ZERO, N_INT, N_DOT, N_FRAC, N_E, N_ESIGN, N_EXP
};

void
tfm_jstate_init(const tfm_jschema *s, tfm_jstate *st)
{
	st->depth = 1;
	memset(&st->f[0], 0, sizeof(tfm_jframe));
	st->f[0].node = s->root;
	st->f[0].c = -1;
}

void
tfm_jstate_copy(tfm_jstate *dst, const tfm_jstate *src)
{
	dst->depth = src->depth;
	memcpy(dst->f, src->f, sizeof(tfm_jframe) * (size_t) src->depth);
}

static bool
push(tfm_jstate *st, int32_t node)
{
	tfm_jframe *f;

	if (st->depth >= TFM_JSON_MAX_DEPTH + 2)
		return false;
	f = &st->f[st->depth++];
	memset(f, 0, sizeof(*f));
	f->node = node;
	f->c = -1;
	return true;
}

/* no required property at or after index next of object n */
static bool
may_close(const tfm_jschema *s, const jn_node *n, int32_t next)
{
	for (int32_t k = next; k < n->n; k++)
		if (s->props[n->first + k].required)
			return false;
	return true;
}

static int
step_object(const tfm_jschema *s, tfm_jstate *st, tfm_jframe *f, const jn_node *n, uint8_t c)
{
	switch (f->phase)
	{
		case O_START:
			if (c != '{')
				return R_NO;
			f->phase = O_OPEN;
			f->a = 0;
			return R_TAKE;
		case O_OPEN:
		case O_AFTER:
			if (c == '}')
				return may_close(s, n, f->a) ? R_DONE : R_NO;
			if (f->phase == O_OPEN ? c != '"' : c != ',')
				return R_NO;
			if (f->a >= n->n)
				return R_NO;
			f->phase = f->phase == O_OPEN ? O_KEY : O_KEYQ;
			f->b = 0;
			f->c = -1;
			return R_TAKE;
		case O_KEYQ:
			if (c != '"')
				return R_NO;
			f->phase = O_KEY;
			f->b = 0;
			f->c = -1;
			return R_TAKE;
		case O_KEY:
			{
				const char *pre = f->c >= 0 ? s->pool + s->props[n->first + f->c].key_off : NULL;

				/* candidates: from the next property up to the first required one */
				for (int32_t k = f->a; k < n->n; k++)
				{
					const jn_prop *p = &s->props[n->first + k];
					const char *key = s->pool + p->key_off;

					if ((size_t) f->b <= p->key_len && (f->b == 0 || memcmp(key, pre, (size_t) f->b) == 0))
					{
						if (c == '"' && p->key_len == (size_t) f->b)
						{
							f->phase = O_COLON;
							f->c = k;
							return R_TAKE;
						}
						if (c != '"' && (size_t) f->b < p->key_len && (uint8_t) key[f->b] == c)
						{
							f->c = k;
							f->b++;
							return R_TAKE;
						}
					}
					if (p->required)
						break;
				}
				return R_NO;
			}
		case O_COLON:
			if (c != ':')
				return R_NO;
			f->phase = O_AFTER;
			f->a = f->c + 1;
			return push(st, s->props[n->first + f->c].node) ? R_TAKE : R_NO;
	}
	return R_NO;
}

static int
step_array(const tfm_jschema *s, tfm_jstate *st, tfm_jframe *f, const jn_node *n, uint8_t c)
{
	(void) s;
	switch (f->phase)
	{
		case A_START:
			if (c != '[')
				return R_NO;
			f->phase = A_OPEN;
			f->a = 0;
			return R_TAKE;
		case A_OPEN:
			if (c == ']')
				return n->lo == 0 ? R_DONE : R_NO;
			if (n->hi == 0)
				return R_NO;
			f->phase = A_AFTER;
			f->a = 1;
			return push(st, n->items) ? R_RETRY : R_NO;
		case A_AFTER:
			if (c == ']')
				return f->a >= n->lo ? R_DONE : R_NO;
			if (c != ',' || (n->hi >= 0 && f->a >= n->hi))
				return R_NO;
			f->a++;
			return push(st, n->items) ? R_TAKE : R_NO;
	}
	return R_NO;
}

static int
hexval(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* one more character (a code point or an escape) fits maxLength */
static inline bool
room(const jn_node *n, const tfm_jframe *f)
{
	return n->hi < 0 || f->a < n->hi;
}

static int
step_string(tfm_jframe *f, const jn_node *n, uint8_t c)
{
	switch (f->phase)
	{
		case S_START:
			if (c != '"')
				return R_NO;
			f->phase = S_IN;
			f->a = 0;
			return R_TAKE;
		case S_IN:
			if (c == '"')
				return f->a >= n->lo ? R_DONE : R_NO;
			if (c < 0x20 || !room(n, f))
				return R_NO;
			if (c == '\\')
			{
				f->phase = S_ESC;
				return R_TAKE;
			}
			if (c < 0x80)
			{
				f->a++;
				return R_TAKE;
			}
			/* a UTF-8 lead byte: how many continuation bytes, the next one's range */
			if (c >= 0xC2 && c <= 0xDF)
				f->b = 1, f->c = 0x80BF;
			else if (c == 0xE0)
				f->b = 2, f->c = 0xA0BF;
			else if (c == 0xED)
				f->b = 2, f->c = 0x809F;
			else if (c >= 0xE1 && c <= 0xEF)
				f->b = 2, f->c = 0x80BF;
			else if (c == 0xF0)
				f->b = 3, f->c = 0x90BF;
			else if (c >= 0xF1 && c <= 0xF3)
				f->b = 3, f->c = 0x80BF;
			else if (c == 0xF4)
				f->b = 3, f->c = 0x808F;
			else
				return R_NO;
			f->a++;
			f->phase = S_UTF;
			return R_TAKE;
		case S_UTF:
			if (c < (f->c >> 8) || c > (f->c & 0xFF))
				return R_NO;
			f->c = 0x80BF;
			if (--f->b == 0)
				f->phase = S_IN;
			return R_TAKE;
		case S_ESC:
			if (c == 'u')
			{
				f->phase = S_U;
				f->b = 0;
				f->c = 0;
				return R_TAKE;
			}
			if (!strchr("\"\\/bfnrt", c) || c == 0)
				return R_NO;
			f->a++;
			f->phase = S_IN;
			return R_TAKE;
		case S_U:
			{
				int			h = hexval(c);

				if (h < 0)
					return R_NO;
				f->c = f->c * 16 + h;
				f->b++;
				/* jsonb refuses surrogates (lone or paired in an escape) and \u0000 */
				if (f->b == 2 && f->c >= 0xD8 && f->c <= 0xDF)
					return R_NO;
				if (f->b == 4)
				{
					if (f->c == 0)
						return R_NO;
					f->a++;
					f->phase = S_IN;
				}
				return R_TAKE;
			}
	}
	return R_NO;
}

static bool
number_complete(int32_t phase)
{
	return phase == N_ZERO || phase == N_INT || phase == N_FRAC || phase == N_EXP;
}

static int
step_number(tfm_jframe *f, const jn_node *n, uint8_t c)
{
	bool		digit = c >= '0' && c <= '9';
	bool		integer = n->kind == JN_INTEGER;
	int32_t		next = -1;

	switch (f->phase)
	{
		case N_START:
			next = c == '-' ? N_SIGN : c == '0' ? N_ZERO : digit ? N_INT : -1;
			break;
		case N_SIGN:
			next = c == '0' ? N_ZERO : digit ? N_INT : -1;
			break;
		case N_ZERO:
		case N_INT:
			if (digit && f->phase == N_INT)
				next = N_INT;
			else if (!integer && c == '.')
				next = N_DOT;
			else if (!integer && (c == 'e' || c == 'E'))
				next = N_E;
			break;
		case N_DOT:
		case N_FRAC:
			if (digit)
				next = N_FRAC;
			else if (f->phase == N_FRAC && (c == 'e' || c == 'E'))
				next = N_E;
			break;
		case N_E:
			next = (c == '+' || c == '-') ? N_ESIGN : digit ? N_EXP : -1;
			break;
		case N_ESIGN:
		case N_EXP:
			/* at most TFM_JSON_MAX_EXPONENT digits: jsonb's numeric holds the value */
			next = digit && f->b < TFM_JSON_MAX_EXPONENT ? N_EXP : -1;
			break;
	}
	if (next < 0)
		return number_complete(f->phase) ? R_PASS : R_NO;
	/* within the length, with room for a digit still owed */
	if (f->a + 1 + (number_complete(next) ? 0 : 1) > TFM_JSON_MAX_NUMBER)
		return number_complete(f->phase) ? R_PASS : R_NO;
	f->a++;
	if (next == N_EXP)
		f->b++;
	f->phase = next;
	return R_TAKE;
}

/* does a literal of n of exactly f->b bytes share f's prefix? */
static bool
literal_complete(const tfm_jschema *s, const tfm_jframe *f, const jn_node *n)
{
	const char *pre;

	if (f->b == 0)
		return false;
	pre = s->pool + s->lits[n->first + f->c].off;
	for (int32_t k = 0; k < n->n; k++)
	{
		const jn_lit *l = &s->lits[n->first + k];

		if (l->len == (size_t) f->b && memcmp(s->pool + l->off, pre, l->len) == 0)
			return true;
	}
	return false;
}

static int
step_literals(const tfm_jschema *s, tfm_jframe *f, const jn_node *n, uint8_t c)
{
	const char *pre = f->b > 0 ? s->pool + s->lits[n->first + f->c].off : NULL;
	bool		longer = false;
	int32_t		hit = -1;

	for (int32_t k = 0; k < n->n && hit < 0; k++)
	{
		const jn_lit *l = &s->lits[n->first + k];
		const char *t = s->pool + l->off;

		if (l->len > (size_t) f->b && (f->b == 0 || memcmp(t, pre, (size_t) f->b) == 0) &&
			(uint8_t) t[f->b] == c)
			hit = k;
	}
	if (hit < 0)
		return literal_complete(s, f, n) ? R_PASS : R_NO;
	f->c = hit;
	f->b++;
	pre = s->pool + s->lits[n->first + hit].off;
	for (int32_t k = 0; k < n->n && !longer; k++)
	{
		const jn_lit *l = &s->lits[n->first + k];

		longer = l->len > (size_t) f->b && memcmp(s->pool + l->off, pre, (size_t) f->b) == 0;
	}
	return longer ? R_TAKE : R_DONE;
}

bool
tfm_jstate_step(const tfm_jschema *s, tfm_jstate *st, uint8_t c)
{
	for (;;)
	{
		tfm_jframe *f;
		const jn_node *n;
		int			r;

		if (st->depth == 0)
			return false;
		f = &st->f[st->depth - 1];
		n = &s->nodes[f->node];
		switch (n->kind)
		{
			case JN_OBJECT:
				r = step_object(s, st, f, n, c);
				break;
			case JN_ARRAY:
				r = step_array(s, st, f, n, c);
				break;
			case JN_STRING:
				r = step_string(f, n, c);
				break;
			case JN_NUMBER:
			case JN_INTEGER:
				r = step_number(f, n, c);
				break;
			case JN_LITERALS:
				r = step_literals(s, f, n, c);
				break;
			case JN_ANYOF:
				r = R_NO;
				for (int32_t k = 0; k < n->n; k++)
				{
					int32_t		alt = s->alts[n->first + k];

					if (jn_has_first(&s->nodes[alt], c))
					{
						memset(f, 0, sizeof(*f));
						f->node = alt;
						f->c = -1;
						r = R_RETRY;
						break;
					}
				}
				break;
			default:
				r = R_NO;
		}
		switch (r)
		{
			case R_TAKE:
				return true;
			case R_DONE:
				/* the frame that took the byte is popped (a push may sit above it) */
				st->depth--;
				return true;
			case R_PASS:
				st->depth--;
				continue;
			case R_RETRY:
				continue;
			default:
				return false;
		}
	}
}

bool
tfm_jstate_closed(const tfm_jstate *st)
{
	return st->depth == 0;
}

bool
tfm_jstate_complete(const tfm_jschema *s, const tfm_jstate *st)
{
	const tfm_jframe *f;
	const jn_node *n;

	if (st->depth == 0)
		return true;
	if (st->depth > 1)
		return false;
	f = &st->f[0];
	n = &s->nodes[f->node];
	if (n->kind == JN_NUMBER || n->kind == JN_INTEGER)
		return number_complete(f->phase);
	if (n->kind == JN_LITERALS)
		return literal_complete(s, f, n);
	return false;
}

int
tfm_jschema_accepts(const tfm_jschema *s, const char *text, size_t len)
{
	tfm_jstate	st;

	tfm_jstate_init(s, &st);
	for (size_t i = 0; i < len; i++)
		if (!tfm_jstate_step(s, &st, (uint8_t) text[i]))
			return 0;
	return tfm_jstate_complete(s, &st) ? 1 : 0;
}
