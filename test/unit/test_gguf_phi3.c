/*
 * test_gguf_phi3.c: unit tests of the GGUF phi3 architecture
 * (src/core/formats/gguf_phi3.c) on test/fixtures/gguf/phi3_f32.gguf
 * (test/reference/make_gguf_archs.py: a small Phi-4-mini with longrope, 12
 * of each head's 16 values rotated, a tied head): its rope read from the
 * metadata and the factor tensors; factors of the wrong length, negative
 * or NaN factors and an absurd attention factor refused with their
 * messages.  (test_gguf fuzzes the file; import_phi4 imports it.)
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tfm/gguf.h"
#include "tfm/gguf_quants.h"
#include "tfm/hf_config.h"
#include "tfm/hf_map.h"

/* the 4 bytes of the value of metadata key k in a GGUF buffer (after its type), or NULL */
static uint8_t *
meta_value(uint8_t *buf, size_t len, const char *k)
{
	size_t		kl = strlen(k);

	for (size_t i = 8; i + kl + 8 <= len; i++)
		if (memcmp(buf + i, k, kl) == 0 && buf[i - 8] == kl)
			return buf + i + kl + 4;
	return NULL;
}

/*
 * phi3_f32.gguf (a Phi-4-mini: longrope, 12 of 16 values rotated): its rope
 * read; hostile factors, a rotated width the factors do not fit and an
 * absurd attention factor refused
 */
static void
test_phi3(void)
{
	size_t		len;
	uint8_t    *buf = check_fixture("gguf/phi3_f32.gguf", &len),
			   *v;
	tfm_gguf_file *f = NULL;
	tfm_hf_params p;
	int64_t		capped;
	tfm_status	st = {0};
	float		lf[6] = {1.5f, 4.0f, 6.5f, 9.0f, 11.5f, 14.0f},
				sf[6] = {1.0f, 1.05f, 1.2f, 1.45f, 1.8f, 2.25f};
	uint32_t	u = 10;
	float		big = 1000.0f;

	CHECK(buf && tfm_gguf_parse(&f, buf, len, len, &st) == TFM_OK, "phi3_f32.gguf: %s", st.msg);
	CHECK(f && tfm_gguf_params(&p, &capped, f, &st) == TFM_OK, "phi3 params: %s", st.msg);
	CHECK(p.arch == TFM_HF_PHI3 && p.gguf_neox && p.rope_dim == 12 && p.rope_type == TFM_ROPE_LONGROPE &&
		  p.rope_n_long == 6 && p.rope_orig_max == 12 && fabsf(p.rope_attn_factor - 1.54748658f) < 1e-6f &&
		  p.tie && p.attn_window == 0, "phi3 rope read (dim %d, orig %d, attn %g)", p.rope_dim,
		  p.rope_orig_max, (double) p.rope_attn_factor);
	CHECK(tfm_gguf_longrope_set(&p, lf, sf, 6, &st) == TFM_OK && p.rope_long[5] == 14.0f &&
		  p.rope_short[1] == 1.05f, "factors set: %s", st.msg);
	CHECK(tfm_gguf_longrope_set(&p, lf, sf, 5, &st) == TFM_EBADFILE, "a wrong count refused");
	sf[2] = -1.0f;
	CHECK(tfm_gguf_longrope_set(&p, lf, sf, 6, &st) == TFM_EBADFILE && strstr(st.msg, "factor 2"),
		  "a negative factor refused: %s", st.msg);
	sf[2] = NAN;
	CHECK(tfm_gguf_longrope_set(&p, lf, sf, 6, &st) == TFM_EBADFILE, "a NaN factor refused");
	tfm_gguf_free(f);
	f = NULL;
	/* 10 rotated values: the 6 factors a tensor holds are not 5 */
	v = buf ? meta_value(buf, len, "phi3.rope.dimension_count") : NULL;
	CHECK(v != NULL, "phi3.rope.dimension_count found");
	if (v)
	{
		memcpy(v, &u, 4);
		CHECK(tfm_gguf_parse(&f, buf, len, len, &st) == TFM_OK &&
			  tfm_gguf_params(&p, &capped, f, &st) == TFM_EBADFILE &&
			  strstr(st.msg, "rope_factors_long.weight must be F32 and hold 5 values"),
			  "factors of the wrong length refused: %s", st.msg);
		tfm_gguf_free(f);
		f = NULL;
		u = 12;
		memcpy(v, &u, 4);
	}
	v = buf ? meta_value(buf, len, "phi3.rope.scaling.attn_factor") : NULL;
	CHECK(v != NULL, "phi3.rope.scaling.attn_factor found");
	if (v)
	{
		memcpy(v, &big, 4);
		CHECK(tfm_gguf_parse(&f, buf, len, len, &st) == TFM_OK &&
			  tfm_gguf_params(&p, &capped, f, &st) == TFM_EUNSUPPORTED &&
			  strstr(st.msg, "attn_factor 1000"), "an absurd attention factor refused: %s", st.msg);
		tfm_gguf_free(f);
	}
	free(buf);
}

int
main(void)
{
	test_phi3();
	return check_summary("test_gguf_phi3");
}
