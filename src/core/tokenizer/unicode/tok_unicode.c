/*
 * tok_unicode.c: strict UTF-8 decoding with WHATWG error units, class
 * lookup (binary search in the generated ranges) and lower-casing.
 */
#include "tok_unicode.h"
#include "tfm/tokenizer.h"

/* ASCII classes, the same as the generated tables give */
const uint8_t tfm_tok_ascii_class[128] = {
	/* 0x00 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 0, 0,
	/* 0x10 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	/* 0x20 */ 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	/* 0x30 */ 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0,
	/* 0x40 */ 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	/* 0x50 */ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0,
	/* 0x60 */ 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	/* 0x70 */ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0,
};

const char *
tfm_tok_unicode_version_str(void)
{
	return tfm_tok_unicode_version;
}

int
tfm_tok_uclass_slow(uint32_t cp)
{
	int32_t lo = 0, hi = tfm_tok_uclass_n - 1;

	/* last range whose start <= cp */
	while (lo < hi)
	{
		int32_t mid = lo + (hi - lo + 1) / 2;

		if (tfm_tok_uclass_start[mid] <= cp)
			lo = mid;
		else
			hi = mid - 1;
	}
	return tfm_tok_uclass_cls[lo];
}

uint32_t
tfm_tok_lower(uint32_t cp)
{
	int32_t lo = 0, hi = tfm_tok_lower_n - 1;

	if (cp < 128)
		return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
	while (lo <= hi)
	{
		int32_t mid = lo + (hi - lo) / 2;

		if (tfm_tok_lower_from[mid] == cp)
			return tfm_tok_lower_to[mid];
		if (tfm_tok_lower_from[mid] < cp)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return cp;
}

size_t
tfm_tok_utf8_next_slow(int32_t *cp, const uint8_t *s, size_t n)
{
	uint32_t c = s[0], v;
	size_t need, i;
	uint8_t lo = 0x80, hi = 0xBF;

	if (c < 0x80)
	{
		*cp = (int32_t) c;
		return 1;
	}
	if (c >= 0xC2 && c <= 0xDF)
	{
		need = 1;
		v = c & 0x1F;
	}
	else if (c >= 0xE0 && c <= 0xEF)
	{
		need = 2;
		v = c & 0x0F;
		if (c == 0xE0)
			lo = 0xA0;
		else if (c == 0xED)
			hi = 0x9F;
	}
	else if (c >= 0xF0 && c <= 0xF4)
	{
		need = 3;
		v = c & 0x07;
		if (c == 0xF0)
			lo = 0x90;
		else if (c == 0xF4)
			hi = 0x8F;
	}
	else
	{
		*cp = -1;
		return 1;
	}
	for (i = 1; i <= need; i++)
	{
		uint8_t b;

		if (i >= n)
		{
			*cp = -1;
			return i;
		}
		b = s[i];
		if (b < lo || b > hi)
		{
			*cp = -1;
			return i;
		}
		lo = 0x80;
		hi = 0xBF;
		v = (v << 6) | (b & 0x3F);
	}
	*cp = (int32_t) v;
	return need + 1;
}

size_t
tfm_tok_utf8_put(uint8_t *out, uint32_t cp)
{
	if (cp < 0x80)
	{
		out[0] = (uint8_t) cp;
		return 1;
	}
	if (cp < 0x800)
	{
		out[0] = (uint8_t) (0xC0 | (cp >> 6));
		out[1] = (uint8_t) (0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000)
	{
		out[0] = (uint8_t) (0xE0 | (cp >> 12));
		out[1] = (uint8_t) (0x80 | ((cp >> 6) & 0x3F));
		out[2] = (uint8_t) (0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (uint8_t) (0xF0 | (cp >> 18));
	out[1] = (uint8_t) (0x80 | ((cp >> 12) & 0x3F));
	out[2] = (uint8_t) (0x80 | ((cp >> 6) & 0x3F));
	out[3] = (uint8_t) (0x80 | (cp & 0x3F));
	return 4;
}

int
tfm_tok_utf8_valid(const char *buf, size_t len)
{
	const uint8_t *s = (const uint8_t *) buf;
	size_t i = 0;

	while (i < len)
	{
		int32_t cp;

		if (s[i] < 0x80)
		{
			i++;
			continue;
		}
		i += tfm_tok_utf8_next_slow(&cp, s + i, len - i);
		if (cp < 0)
			return 0;
	}
	return 1;
}
