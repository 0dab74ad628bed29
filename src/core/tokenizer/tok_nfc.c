/*
 * tok_nfc.c: Unicode normalization form C (a tokenizer.json's NFC
 * normalizer, Qwen2's): canonical decomposition, canonical ordering of the
 * combining marks, canonical composition (UAX #15), with the tables of
 * tok_nfc_data.c (scripts/tokenizer/gen_nfc.py) and Hangul's arithmetic.
 * Each output byte remembers the input offset of its character (never
 * less than the byte before's), so the encoder's offsets stay the input's.
 */
#include "tok_split.h"
#include "tok_unicode.h"

extern const int32_t tfm_nfc_ccc_n;
extern const uint32_t tfm_nfc_ccc_start[], tfm_nfc_ccc_end[];
extern const uint8_t tfm_nfc_ccc_class[];
extern const int32_t tfm_nfc_dec_n;
extern const uint32_t tfm_nfc_dec_from[];
extern const uint16_t tfm_nfc_dec_off[];
extern const uint32_t tfm_nfc_dec_pool[];
extern const int32_t tfm_nfc_comp_n;
extern const uint64_t tfm_nfc_comp_key[];
extern const uint32_t tfm_nfc_comp_to[];

#define S_BASE 0xAC00
#define L_BASE 0x1100
#define V_BASE 0x1161
#define T_BASE 0x11A7
#define L_COUNT 19
#define V_COUNT 21
#define T_COUNT 28
#define S_COUNT (L_COUNT * V_COUNT * T_COUNT)

typedef struct unit
{
	int32_t		cp;				/* -1: an invalid unit, copied as is */
	uint32_t	src;			/* offset in the input of its character */
	uint8_t		ccc;
	uint8_t		raw_len;		/* invalid unit: its bytes */
} unit;

static int
ccc_of(int32_t cp)
{
	int32_t		lo = 0,
				hi = tfm_nfc_ccc_n - 1;

	if (cp < 0x300)
		return 0;
	while (lo <= hi)
	{
		int32_t		mid = (lo + hi) / 2;

		if ((uint32_t) cp < tfm_nfc_ccc_start[mid])
			hi = mid - 1;
		else if ((uint32_t) cp > tfm_nfc_ccc_end[mid])
			lo = mid + 1;
		else
			return tfm_nfc_ccc_class[mid];
	}
	return 0;
}

/* the full canonical decomposition of cp (*m, count), or 0 */
static int
decomposition(const uint32_t **m, int32_t cp)
{
	int32_t		lo = 0,
				hi = tfm_nfc_dec_n - 1;

	while (lo <= hi)
	{
		int32_t		mid = (lo + hi) / 2;

		if ((uint32_t) cp < tfm_nfc_dec_from[mid])
			hi = mid - 1;
		else if ((uint32_t) cp > tfm_nfc_dec_from[mid])
			lo = mid + 1;
		else
		{
			*m = tfm_nfc_dec_pool + tfm_nfc_dec_off[mid];
			return tfm_nfc_dec_off[mid + 1] - tfm_nfc_dec_off[mid];
		}
	}
	return 0;
}

/* the primary composite of a + b, or -1 */
static int32_t
compose(int32_t a, int32_t b)
{
	uint64_t	key;
	int32_t		lo = 0,
				hi = tfm_nfc_comp_n - 1;

	if (a < 0 || b < 0)
		return -1;
	if (a >= L_BASE && a < L_BASE + L_COUNT && b >= V_BASE && b < V_BASE + V_COUNT)
		return S_BASE + ((a - L_BASE) * V_COUNT + (b - V_BASE)) * T_COUNT;
	if (a >= S_BASE && a < S_BASE + S_COUNT && (a - S_BASE) % T_COUNT == 0 &&
		b > T_BASE && b < T_BASE + T_COUNT)
		return a + (b - T_BASE);
	key = ((uint64_t) a << 21) | (uint64_t) b;
	while (lo <= hi)
	{
		int32_t		mid = (lo + hi) / 2;

		if (key < tfm_nfc_comp_key[mid])
			hi = mid - 1;
		else if (key > tfm_nfc_comp_key[mid])
			lo = mid + 1;
		else
			return (int32_t) tfm_nfc_comp_to[mid];
	}
	return -1;
}

static int
push(unit **u, size_t *n, size_t *cap, int32_t cp, size_t src, int raw_len)
{
	if (tfm_grow((void **) u, cap, *n + 1, sizeof(unit)))
		return TFM_ENOMEM;
	(*u)[*n].cp = cp;
	(*u)[*n].src = (uint32_t) src;
	(*u)[*n].ccc = (uint8_t) (cp < 0 ? 0 : ccc_of(cp));
	(*u)[*n].raw_len = (uint8_t) raw_len;
	(*n)++;
	return TFM_OK;
}

int
tfm_tok_nfc(tfm_tok_bytes *out, size_t **align, size_t *align_cap, int *same,
			const uint8_t *s, size_t n)
{
	unit	   *u = NULL;
	size_t		nu = 0,
				cap = 0,
				i,
				k;
	int			st = TFM_ENOMEM;

	out->len = 0;
	*same = 1;
	for (i = 0; i < n; i++)
		if (s[i] >= 0xCC)
		{
			*same = 0;
			break;
		}
	if (*same)
		return TFM_OK;
	if (n > UINT32_MAX)
		return TFM_ELIMIT;

	/* decompose */
	for (i = 0; i < n;)
	{
		int32_t		cp;
		size_t		ul = tfm_tok_utf8_next(&cp, s + i, n - i);

		if (cp >= S_BASE && cp < S_BASE + S_COUNT)
		{
			int32_t		si = cp - S_BASE;

			if (push(&u, &nu, &cap, L_BASE + si / (V_COUNT * T_COUNT), i, 0) ||
				push(&u, &nu, &cap, V_BASE + (si % (V_COUNT * T_COUNT)) / T_COUNT, i, 0) ||
				(si % T_COUNT && push(&u, &nu, &cap, T_BASE + si % T_COUNT, i, 0)))
				goto done;
		}
		else
		{
			const uint32_t *m;
			int			d = cp >= 0xC0 ? decomposition(&m, cp) : 0;

			if (d == 0 && push(&u, &nu, &cap, cp, i, cp < 0 ? (int) ul : 0))
				goto done;
			for (int j = 0; j < d; j++)
				if (push(&u, &nu, &cap, (int32_t) m[j], i, 0))
					goto done;
		}
		i += ul;
	}

	/* canonical order: each run of marks sorted by class, stably */
	for (i = 1; i < nu; i++)
	{
		unit		x = u[i];

		if (x.ccc == 0)
			continue;
		for (k = i; k > 0 && u[k - 1].ccc > x.ccc; k--)
			u[k] = u[k - 1];
		u[k] = x;
	}

	/* compose (UAX #15's algorithm) */
	if (nu > 0)
	{
		size_t		starter = 0,
					w = 1;
		int			last = u[0].ccc ? 256 : 0;

		for (i = 1; i < nu; i++)
		{
			int			c = u[i].ccc;
			int32_t		comp = (u[starter].ccc == 0) ? compose(u[starter].cp, u[i].cp) : -1;

			if (comp >= 0 && (last < c || last == 0))
			{
				u[starter].cp = comp;
				continue;
			}
			if (c == 0)
				starter = w;
			last = c;
			u[w++] = u[i];
		}
		nu = w;
	}

	/* back to UTF-8, with each byte's source offset */
	for (i = 0; i < nu; i++)
	{
		uint8_t		tmp[4];
		const uint8_t *b = tmp;
		size_t		bl;

		if (u[i].cp < 0)
		{
			b = s + u[i].src;
			bl = u[i].raw_len;
		}
		else
			bl = tfm_tok_utf8_put(tmp, (uint32_t) u[i].cp);
		if (tfm_tok_bytes_append(out, b, bl) ||
			tfm_grow((void **) align, align_cap, out->len, sizeof(size_t)))
			goto done;
		/* marks put in canonical order may come from earlier offsets: the
		 * offsets are kept non-decreasing (a mark moved forward keeps the
		 * offset of what it follows) */
		for (k = out->len - bl; k < out->len; k++)
			(*align)[k] = (k > 0 && (*align)[k - 1] > u[i].src) ? (*align)[k - 1] : u[i].src;
	}
	st = TFM_OK;
done:
	tfm_tok_dealloc(u);
	return st;
}
