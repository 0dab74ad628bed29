/*
 * tok_unicode_forms.c: the Unicode normalization forms (a tokenizer.json's
 * NFC, NFD, NFKC and NFKD normalizers; Qwen2's NFC, ALBERT's NFKD):
 * canonical or compatibility decomposition, canonical ordering of the
 * combining marks, canonical composition for NFC and NFKC (UAX #15), with
 * the tables of tok_unicode_forms_data.c (scripts/tokenizer/
 * gen_unicode_forms.py) and Hangul's arithmetic; and StripAccents' test of
 * General_Category Mark.  Each output byte remembers the input offset of
 * its character (never less than the byte before's), so the encoder's
 * offsets stay the input's.
 */
#include "tok_unicode_forms.h"
#include "tok_unicode.h"

extern const int32_t tfm_uforms_ccc_n;
extern const uint32_t tfm_uforms_ccc_start[], tfm_uforms_ccc_end[];
extern const uint8_t tfm_uforms_ccc_class[];
extern const int32_t tfm_uforms_dec_n, tfm_uforms_kdec_n;
extern const uint32_t tfm_uforms_dec_from[], tfm_uforms_kdec_from[];
extern const uint16_t tfm_uforms_dec_off[], tfm_uforms_kdec_off[];
extern const uint32_t tfm_uforms_dec_pool[], tfm_uforms_kdec_pool[];
extern const int32_t tfm_uforms_comp_n;
extern const uint64_t tfm_uforms_comp_key[];
extern const uint32_t tfm_uforms_comp_to[];
extern const int32_t tfm_uforms_mark_n;
extern const uint32_t tfm_uforms_mark_start[], tfm_uforms_mark_end[];

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
				hi = tfm_uforms_ccc_n - 1;

	if (cp < 0x300)
		return 0;
	while (lo <= hi)
	{
		int32_t		mid = (lo + hi) / 2;

		if ((uint32_t) cp < tfm_uforms_ccc_start[mid])
			hi = mid - 1;
		else if ((uint32_t) cp > tfm_uforms_ccc_end[mid])
			lo = mid + 1;
		else
			return tfm_uforms_ccc_class[mid];
	}
	return 0;
}

/* the full canonical (compat: compatibility) decomposition of cp (*m,
 * count), or 0 */
static int
decomposition(const uint32_t **m, int32_t cp, int compat)
{
	const uint32_t *from = compat ? tfm_uforms_kdec_from : tfm_uforms_dec_from;
	const uint16_t *off = compat ? tfm_uforms_kdec_off : tfm_uforms_dec_off;
	int32_t		lo = 0,
				hi = (compat ? tfm_uforms_kdec_n : tfm_uforms_dec_n) - 1;

	while (lo <= hi)
	{
		int32_t		mid = (lo + hi) / 2;

		if ((uint32_t) cp < from[mid])
			hi = mid - 1;
		else if ((uint32_t) cp > from[mid])
			lo = mid + 1;
		else
		{
			*m = (compat ? tfm_uforms_kdec_pool : tfm_uforms_dec_pool) + off[mid];
			return off[mid + 1] - off[mid];
		}
	}
	return 0;
}

int
tfm_tok_is_mark(int32_t cp)
{
	int32_t		lo = 0,
				hi = tfm_uforms_mark_n - 1;

	if (cp < 0x300)
		return 0;
	while (lo <= hi)
	{
		int32_t		mid = (lo + hi) / 2;

		if ((uint32_t) cp < tfm_uforms_mark_start[mid])
			hi = mid - 1;
		else if ((uint32_t) cp > tfm_uforms_mark_end[mid])
			lo = mid + 1;
		else
			return 1;
	}
	return 0;
}

/* the primary composite of a + b, or -1 */
static int32_t
compose(int32_t a, int32_t b)
{
	uint64_t	key;
	int32_t		lo = 0,
				hi = tfm_uforms_comp_n - 1;

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

		if (key < tfm_uforms_comp_key[mid])
			hi = mid - 1;
		else if (key > tfm_uforms_comp_key[mid])
			lo = mid + 1;
		else
			return (int32_t) tfm_uforms_comp_to[mid];
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

/*
 * Canonical order: each run of marks (class > 0) sorted by class, stably;
 * short runs by insertion, long ones by counting, so a hostile text of a
 * million marks costs linear time.  TFM_OK or TFM_ENOMEM.
 */
static int
order_marks(unit *u, size_t nu)
{
	unit	   *tmp = NULL;
	size_t		tmp_cap = 0;

	for (size_t a = 0; a < nu;)
	{
		size_t		b = a;

		if (u[a].ccc == 0)
		{
			a++;
			continue;
		}
		while (b < nu && u[b].ccc != 0)
			b++;
		if (b - a <= 32)
			for (size_t i = a + 1; i < b; i++)
			{
				unit		x = u[i];
				size_t		k;

				for (k = i; k > a && u[k - 1].ccc > x.ccc; k--)
					u[k] = u[k - 1];
				u[k] = x;
			}
		else
		{
			size_t		start[257] = {0};

			if (tfm_grow((void **) &tmp, &tmp_cap, b - a, sizeof(unit)))
			{
				tfm_tok_dealloc(tmp);
				return TFM_ENOMEM;
			}
			for (size_t i = a; i < b; i++)
				start[u[i].ccc + 1]++;
			for (int c = 1; c <= 256; c++)
				start[c] += start[c - 1];
			for (size_t i = a; i < b; i++)
				tmp[start[u[i].ccc]++] = u[i];
			memcpy(u + a, tmp, (b - a) * sizeof(unit));
		}
		a = b;
	}
	tfm_tok_dealloc(tmp);
	return TFM_OK;
}

int
tfm_tok_unicode_form(tfm_tok_bytes *out, size_t **align, size_t *align_cap, int *same,
					 const uint8_t *s, size_t n, unsigned form)
{
	int			compat = (form & TFM_TOK_UFORM_COMPAT) != 0;
	/* below U+0300 (lead bytes under 0xCC) a text is NFC; only ASCII is
	 * every form */
	uint8_t		quick = form == TFM_TOK_UFORM_NFC ? 0xCC : 0x80;
	/* the first code points with a decomposition: U+00A0 (compatibility),
	 * U+00C0 (canonical) */
	int32_t		first_dec = compat ? 0xA0 : 0xC0;
	unit	   *u = NULL;
	size_t		nu = 0,
				cap = 0,
				i,
				k;
	int			st = TFM_ENOMEM;

	out->len = 0;
	*same = 1;
	for (i = 0; i < n; i++)
		if (s[i] >= quick)
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
			int			d = cp >= first_dec ? decomposition(&m, cp, compat) : 0;

			if (d == 0 && push(&u, &nu, &cap, cp, i, cp < 0 ? (int) ul : 0))
				goto done;
			for (int j = 0; j < d; j++)
				if (push(&u, &nu, &cap, (int32_t) m[j], i, 0))
					goto done;
		}
		i += ul;
	}

	if (order_marks(u, nu))
		goto done;

	/* compose (UAX #15's algorithm) */
	if (nu > 0 && (form & TFM_TOK_UFORM_COMPOSE))
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
