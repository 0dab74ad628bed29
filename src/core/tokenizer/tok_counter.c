/*
 * tok_counter.c: the training state of the aggregate: counts of what the
 * kind learns from (GPT-2 pre-tokens for bpe, words for word and wordpiece,
 * characters for char, nothing for byte), merge of two states and a
 * versioned byte image.
 *
 * Image (little endian):
 *   "TFMTOKC1" | u32 version | u32 kind | i32 vocab_size | i32 min_count |
 *   u32 flags | i64 rows | u64 n_entries | n_entries * (varint len, bytes,
 *   varint count)
 * Memory grows with the distinct keys only; a 10 MB row adds at most its
 * own bytes.
 */
#include "tok_internal.h"
#include "unicode/tok_unicode.h"

#define COUNTER_MAGIC   "TFMTOKC1"
#define COUNTER_VERSION 1u
#define COUNTER_HEADER  (8 + 4 + 4 + 4 + 4 + 4 + 8 + 8)

void
tfm_tok_options_init(tfm_tok_options *opt, tfm_tok_kind kind)
{
	memset(opt, 0, sizeof(*opt));
	opt->kind = kind;
}

static int
check_options(const tfm_tok_options *opt, tfm_status *err)
{
	if (!tfm_tok_kind_name(opt->kind))
		return tfm_status_set(err, TFM_EINVAL, "unknown tokenizer kind %d", (int) opt->kind);
	if (opt->kind == TFM_TOK_UNIGRAM)
		return tfm_status_set(err, TFM_EINVAL,
							"unigram tokenizers are imported from a tokenizer.json, not trained");
	if (opt->vocab_size < 0 || opt->vocab_size > TFM_TOK_MAX_VOCAB_SIZE)
		return tfm_status_set(err, TFM_EINVAL,
							"vocab_size %d is out of range (0 for the default, or up to %d)",
							(int) opt->vocab_size, TFM_TOK_MAX_VOCAB_SIZE);
	if (opt->vocab_size > 0 && opt->vocab_size < TFM_TOK_MIN_VOCAB_SIZE)
		return tfm_status_set(err, TFM_EINVAL,
							"vocab_size %d is too small: %d special tokens need at least %d",
							(int) opt->vocab_size, TFM_TOK_N_SPECIALS, TFM_TOK_MIN_VOCAB_SIZE);
	if (opt->min_count < 0)
		return tfm_status_set(err, TFM_EINVAL, "min_count %d must not be negative",
							(int) opt->min_count);
	if (opt->flags & ~TFM_TOK_OPT_LOWERCASE)
		return tfm_status_set(err, TFM_EINVAL, "unknown option flags 0x%x",
							(unsigned) opt->flags);
	if ((opt->flags & TFM_TOK_OPT_LOWERCASE) && opt->kind != TFM_TOK_WORD &&
		opt->kind != TFM_TOK_WORDPIECE)
		return tfm_status_set(err, TFM_EINVAL,
							"lower-casing applies to word and wordpiece tokenizers only, not %s",
							tfm_tok_kind_name(opt->kind));
	return TFM_OK;
}

int
tfm_tok_counter_create(tfm_tok_counter **out, const tfm_tok_options *opt, tfm_status *err)
{
	tfm_tok_counter *c;
	int st;

	*out = NULL;
	if ((st = check_options(opt, err)) != TFM_OK)
		return st;
	c = tfm_tok_calloc(1, sizeof(*c));
	if (!c)
		return tfm_tok_oom(err);
	c->opt = *opt;
	*out = c;
	return TFM_OK;
}

void
tfm_tok_counter_free(tfm_tok_counter *c)
{
	if (!c)
		return;
	tfm_tok_strtab_free(&c->keys);
	tfm_tok_dealloc(c->counts);
	tfm_tok_bytes_free(&c->scratch);
	tfm_tok_dealloc(c);
}

static int
count_key(tfm_tok_counter *c, const uint8_t *k, size_t n, int64_t by)
{
	int32_t idx;
	int added, st;

	if (n > TFM_TOK_MAX_PIECE_BYTES * (size_t) 1024)
		return TFM_ELIMIT;
	if ((st = tfm_tok_strtab_intern(&idx, &added, &c->keys, k, n)) != TFM_OK)
		return st;
	if (added)
	{
		if ((size_t) idx >= c->counts_cap &&
			tfm_grow((void **) &c->counts, &c->counts_cap, (size_t) idx + 1, sizeof(int64_t)))
			return TFM_ENOMEM;
		c->counts[idx] = 0;
	}
	c->counts[idx] += by;
	return TFM_OK;
}

int
tfm_tok_counter_add(tfm_tok_counter *c, const char *text, size_t len, tfm_status *err)
{
	const uint8_t *s = (const uint8_t *) text;
	size_t pos = 0;
	int st = TFM_OK;

	c->rows++;
	switch (c->opt.kind)
	{
		case TFM_TOK_BYTE:
		case TFM_TOK_UNIGRAM:		/* refused by the options check */
			break;
		case TFM_TOK_CHAR:
			while (pos < len && st == TFM_OK)
			{
				int32_t cp;
				size_t ul = tfm_tok_utf8_next(&cp, s + pos, len - pos);

				if (cp >= 0)       /* invalid units are <unk>, never learned */
					st = count_key(c, s + pos, ul, 1);
				pos += ul;
			}
			break;
		case TFM_TOK_BPE:
			while (pos < len && st == TFM_OK)
			{
				size_t pl = tfm_tok_gpt2_next(s + pos, len - pos);

				st = count_key(c, s + pos, pl, 1);
				pos += pl;
			}
			break;
		case TFM_TOK_WORD:
		case TFM_TOK_WORDPIECE:
			{
				size_t start, wl;
				int invalid;

				while (st == TFM_OK &&
					   tfm_tok_word_next(&start, &wl, &invalid, s, len, &pos))
				{
					if (invalid)
						continue;
					if (c->opt.flags & TFM_TOK_OPT_LOWERCASE)
					{
						c->scratch.len = 0;
						if ((st = tfm_tok_lower_append(&c->scratch, s + start, wl)) != TFM_OK)
							break;
						st = count_key(c, c->scratch.data, c->scratch.len, 1);
					}
					else
						st = count_key(c, s + start, wl, 1);
				}
			}
			break;
	}
	if (st == TFM_ENOMEM)
		return tfm_tok_oom(err);
	if (st == TFM_ELIMIT)
		return tfm_status_set(err, st, "too many or too long distinct tokens to count");
	return st;
}

static int
same_options(const tfm_tok_options *a, const tfm_tok_options *b)
{
	return a->kind == b->kind && a->vocab_size == b->vocab_size &&
		a->min_count == b->min_count && a->flags == b->flags;
}

int
tfm_tok_counter_merge(tfm_tok_counter *dst, const tfm_tok_counter *src, tfm_status *err)
{
	int32_t e;

	if (!same_options(&dst->opt, &src->opt))
		return tfm_status_set(err, TFM_EINVAL,
							"cannot merge tokenizer counts trained with different options");
	for (e = 0; e < src->keys.n; e++)
	{
		int st = count_key(dst, tfm_tok_strtab_key(&src->keys, e), src->keys.len[e],
						   src->counts[e]);

		if (st == TFM_ENOMEM)
			return tfm_tok_oom(err);
		if (st != TFM_OK)
			return tfm_status_set(err, st, "too many distinct tokens to count");
	}
	dst->rows += src->rows;
	return TFM_OK;
}

void
tfm_tok_counter_get_options(tfm_tok_options *opt, const tfm_tok_counter *c)
{
	*opt = c->opt;
}

size_t
tfm_tok_counter_n_entries(const tfm_tok_counter *c)
{
	return (size_t) c->keys.n;
}

size_t
tfm_tok_counter_memory(const tfm_tok_counter *c)
{
	return sizeof(*c) + tfm_tok_strtab_memory(&c->keys) + c->counts_cap * sizeof(int64_t) +
		c->scratch.cap;
}

/* ---- byte image ------------------------------------------------------------ */

static size_t
varint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80)
	{
		v >>= 7;
		n++;
	}
	return n;
}

static uint8_t *
put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80)
	{
		*p++ = (uint8_t) (v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t) v;
	return p;
}

static uint8_t *
put_u32(uint8_t *p, uint32_t v)
{
	int i;

	for (i = 0; i < 4; i++)
		*p++ = (uint8_t) (v >> (8 * i));
	return p;
}

static uint8_t *
put_u64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		*p++ = (uint8_t) (v >> (8 * i));
	return p;
}

static uint64_t
get_le(const uint8_t *p, int bytes)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < bytes; i++)
		v |= (uint64_t) p[i] << (8 * i);
	return v;
}

/* reads a varint at *pp below end; 0 on success */
static int
get_varint(uint64_t *v, const uint8_t **pp, const uint8_t *end)
{
	const uint8_t *p = *pp;
	uint64_t r = 0;
	int shift = 0;

	while (p < end && shift < 64)
	{
		uint8_t b = *p++;

		r |= (uint64_t) (b & 0x7F) << shift;
		if (!(b & 0x80))
		{
			*v = r;
			*pp = p;
			return 0;
		}
		shift += 7;
	}
	return -1;
}

size_t
tfm_tok_counter_serialized_size(const tfm_tok_counter *c)
{
	size_t n = COUNTER_HEADER;
	int32_t e;

	for (e = 0; e < c->keys.n; e++)
		n += varint_size(c->keys.len[e]) + c->keys.len[e] + varint_size((uint64_t) c->counts[e]);
	return n;
}

int
tfm_tok_counter_serialize(uint8_t *out, size_t cap, const tfm_tok_counter *c, tfm_status *err)
{
	uint8_t *p = out;
	int32_t e;

	if (cap < tfm_tok_counter_serialized_size(c))
		return tfm_status_set(err, TFM_ELIMIT, "buffer too small for the tokenizer counts");
	memcpy(p, COUNTER_MAGIC, 8);
	p += 8;
	p = put_u32(p, COUNTER_VERSION);
	p = put_u32(p, (uint32_t) c->opt.kind);
	p = put_u32(p, (uint32_t) c->opt.vocab_size);
	p = put_u32(p, (uint32_t) c->opt.min_count);
	p = put_u32(p, c->opt.flags);
	p = put_u64(p, (uint64_t) c->rows);
	p = put_u64(p, (uint64_t) c->keys.n);
	for (e = 0; e < c->keys.n; e++)
	{
		p = put_varint(p, c->keys.len[e]);
		memcpy(p, tfm_tok_strtab_key(&c->keys, e), c->keys.len[e]);
		p += c->keys.len[e];
		p = put_varint(p, (uint64_t) c->counts[e]);
	}
	return TFM_OK;
}

int
tfm_tok_counter_deserialize(tfm_tok_counter **out, const uint8_t *buf, size_t len,
							tfm_status *err)
{
	tfm_tok_options opt;
	tfm_tok_counter *c;
	const uint8_t *p, *end = buf + len;
	uint64_t n, i;
	uint32_t version;
	int st;

	*out = NULL;
	if (len < COUNTER_HEADER || memcmp(buf, COUNTER_MAGIC, 8) != 0)
		return tfm_status_set(err, TFM_EFORMAT, "not a tfm tokenizer counting state");
	version = (uint32_t) get_le(buf + 8, 4);
	if (version != COUNTER_VERSION)
		return tfm_status_set(err, TFM_EFORMAT,
							"tokenizer counting state has version %u, expected %u",
							version, COUNTER_VERSION);
	opt.kind = (tfm_tok_kind) (int32_t) get_le(buf + 12, 4);
	opt.vocab_size = (int32_t) get_le(buf + 16, 4);
	opt.min_count = (int32_t) get_le(buf + 20, 4);
	opt.flags = (uint32_t) get_le(buf + 24, 4);
	if ((st = tfm_tok_counter_create(&c, &opt, err)) != TFM_OK)
		return st == TFM_ENOMEM ? st : TFM_EFORMAT;
	c->rows = (int64_t) get_le(buf + 28, 8);
	n = get_le(buf + 36, 8);
	p = buf + COUNTER_HEADER;
	if (n > len)
		goto bad;
	for (i = 0; i < n; i++)
	{
		uint64_t kl, cnt;
		int32_t before = c->keys.n;
		const uint8_t *key;

		if (get_varint(&kl, &p, end) || kl > (uint64_t) (end - p))
			goto bad;
		key = p;
		p += kl;
		if (get_varint(&cnt, &p, end) || cnt > INT64_MAX)
			goto bad;
		st = count_key(c, key, (size_t) kl, (int64_t) cnt);
		if (st != TFM_OK)
		{
			tfm_tok_counter_free(c);
			return st == TFM_ENOMEM ? tfm_tok_oom(err)
				: tfm_status_set(err, st, "too many distinct tokens to count");
		}
		if (c->keys.n == before)     /* duplicate key */
			goto bad;
	}
	if (p != end)
		goto bad;
	*out = c;
	return TFM_OK;
bad:
	tfm_tok_counter_free(c);
	return tfm_status_set(err, TFM_EFORMAT, "corrupt tokenizer counting state");
}
