/*
 * status.c — the core's one error convention (see tfm/status.h): the codes'
 * names and the filling of a tfm_status.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "tfm/status.h"

const char *
tfm_code_name(int code)
{
	switch (code)
	{
		case TFM_OK:
			return "ok";
		case TFM_ENOMEM:
			return "out of memory";
		case TFM_EBADID:
			return "an id outside the vocabulary";
		case TFM_ECANCELED:
			return "canceled";
		case TFM_EINVAL:
			return "invalid argument";
		case TFM_EFORMAT:
			return "malformed data";
		case TFM_EBADFILE:
			return "invalid file";
		case TFM_EUNSUPPORTED:
			return "not supported";
		case TFM_ERANGE:
			return "value out of range";
		case TFM_ELIMIT:
			return "size limit exceeded";
	}
	return "unknown status";
}

size_t
tfm_utf8_cut(const char *s, size_t n)
{
	size_t		k = n;

	/* back over continuation bytes, then drop the lead byte if incomplete */
	while (k > 0 && ((unsigned char) s[k - 1] & 0xC0) == 0x80)
		k--;
	if (k > 0 && ((unsigned char) s[k - 1] & 0x80))
	{
		unsigned char c = (unsigned char) s[k - 1];
		size_t		want = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;

		if (n - (k - 1) < want)
			k--;
		else
			k = n;
	}
	else
		k = n;
	return k;
}

int
tfm_status_set(tfm_status *st, int code, const char *fmt,...)
{
	if (st)
	{
		va_list		ap;
		int			n;

		st->code = (tfm_code) code;
		va_start(ap, fmt);
		n = vsnprintf(st->msg, sizeof(st->msg), fmt, ap);
		va_end(ap);
		if (n >= (int) sizeof(st->msg))
			st->msg[tfm_utf8_cut(st->msg, sizeof(st->msg) - 1)] = '\0';
	}
	return code;
}

const char *
tfm_status_msg(const tfm_status *st, int code)
{
	return st && st->msg[0] ? st->msg : tfm_code_name(code);
}

/* length of the strict UTF-8 sequence at s (n > 0 bytes left), or 0 */
size_t
tfm_utf8_seq(const uint8_t *s, size_t n)
{
	uint8_t		c = s[0],
				lo = 0x80,
				hi = 0xBF;
	size_t		len;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		len = 2;
	else if (c >= 0xE0 && c <= 0xEF)
	{
		len = 3;
		if (c == 0xE0)
			lo = 0xA0;			/* no overlongs */
		else if (c == 0xED)
			hi = 0x9F;			/* no surrogates */
	}
	else if (c >= 0xF0 && c <= 0xF4)
	{
		len = 4;
		if (c == 0xF0)
			lo = 0x90;
		else if (c == 0xF4)
			hi = 0x8F;			/* <= U+10FFFF */
	}
	else
		return 0;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if ((s[i] & 0xC0) != 0x80)
			return 0;
	return len;
}
