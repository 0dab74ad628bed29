/*
 * test_hf_import.c — the GPT-2 mapping of tfm/hf_map.h on the fixture of
 * test/reference/hf_gpt2_reference.py: both safetensors files (F32, and
 * BF16/F16 with a tied lm_head and the old attn.bias buffers) load into
 * the same model, whose raw logits match PyTorch's (atol 1e-4, rtol 1e-3);
 * a wrong shape, a missing or extra tensor, a NaN and an untied head that
 * differs are refused with messages naming the tensor.
 */
#include "check.h"
#include "tfm/blas.h"
#include "tfm/hf_map.h"
#include "tfm/model.h"
#include "hf_load.h"

/* a file of the GPT-2 fixture */
static uint8_t *
slurp(const char *name, size_t *len)
{
	char		rel[512];

	snprintf(rel, sizeof(rel), "hf_gpt2/%s", name);
	return check_fixture(rel, len);
}

static tfm_hf_params
fixture_params(void)
{
	tfm_hf_params p = {TFM_HF_GPT2, 320, 32, 2, 4, 64, 0, 1e-5f, true, 0.1f, 0.1f};

	return p;
}

/* load a safetensors buffer into a new model; NULL and err set on failure */
static tfm_model *
load(const uint8_t *buf, size_t len, const tfm_hf_params *p, char *err, size_t errlen)
{
	return hf_load(buf, len, p, NULL, err, errlen);
}

/* the reference's raw logits of the 5-token input: (5, 320) after "logits": [[ */
static int
ref_logits(float *out, size_t n)
{
	size_t		len;
	char	   *ref = (char *) slurp("reference.json", &len);
	char	   *p = ref ? strstr(ref, "\"logits\": [[") : NULL;
	size_t		k = 0;

	if (!p)
	{
		free(ref);
		return -1;
	}
	p += strlen("\"logits\": [[");
	while (k < n)
	{
		char	   *end;

		out[k++] = strtof(p, &end);
		if (end == p)
			break;
		p = end;
		while (*p == ',' || *p == ' ' || *p == ']' || *p == '[')
			p++;
	}
	free(ref);
	return k == n ? 0 : -1;
}

int
main(void)
{
	char		err[512];
	size_t		len,
				hlen;
	uint8_t    *w = slurp("model.safetensors", &len);
	uint8_t    *wh = slurp("model_half.safetensors", &hlen);
	tfm_hf_params p = fixture_params();
	tfm_model  *m,
			   *mh;
	int32_t		ids[5] = {40, 256, 300, 17, 90};
	tfm_batch	b = {0};
	float	   *ref = malloc(sizeof(float) * 5 * 320);

	if (tfm_blas_init(getenv("TFM_BLIS_ARCH"), err, sizeof(err)) != 0 || !w || !wh)
	{
		fprintf(stderr, "cannot start: %s\n", w && wh ? err : "fixture files missing");
		return 1;
	}
	m = load(w, len, &p, err, sizeof(err));
	CHECK(m != NULL, "model.safetensors: %s", err);
	mh = load(wh, hlen, &p, err, sizeof(err));
	CHECK(mh != NULL, "model_half.safetensors: %s", err);
	if (!m || !mh)
		return check_summary("test_hf_import");
	CHECK(memcmp(m->params, mh->params, m->n_floats * sizeof(float)) == 0,
		  "the F32 and BF16/F16 files hold different values");
	CHECK(m->cfg.activation == TFM_ACT_GELU_TANH && m->cfg.pad_id == -1 && m->cfg.tie,
		  "config mapping");

	/* raw logits of every position against PyTorch */
	b.B = 1;
	b.T = 5;
	b.input = ids;
	CHECK(ref_logits(ref, 5 * 320) == 0, "reference.json has no logits");
	CHECK(tfm_model_forward(m, &b, false, 0) == 0, "forward");
	{
		double		maxd = 0.0;

		for (size_t i = 0; i < 5 * 320; i++)
			maxd = fmax(maxd, fabs((double) m->logits[i] - ref[i]));
		printf("GPT-2 fixture: max |logit - PyTorch| = %.3g over 5 x 320 logits\n", maxd);
		check_close("gpt2 logits", m->logits, ref, 5 * 320, 1e-4, 1e-3);
	}

	/* refusals, each naming the tensor */
	{
		tfm_hf_params q = p;

		q.max_len = 32;
		CHECK(load(w, len, &q, err, sizeof(err)) == NULL &&
			  strstr(err, "\"transformer.wpe.weight\" has shape [64, 32], the config implies [32, 32]"),
			  "shape: %s", err);
		q = p;
		q.layers = 3;
		CHECK(load(w, len, &q, err, sizeof(err)) == NULL &&
			  strstr(err, "\"transformer.h.2.ln_1.weight\" is missing"), "missing: %s", err);
		q = p;
		q.layers = 1;
		CHECK(load(w, len, &q, err, sizeof(err)) == NULL &&
			  strstr(err, "unexpected tensor \"transformer.h.1."), "extra: %s", err);
		q = p;
		q.tie = false;
		CHECK(load(w, len, &q, err, sizeof(err)) == NULL &&
			  strstr(err, "\"lm_head.weight\" is missing"), "untied: %s", err);
		q = p;
		q.heads = 5;
		CHECK(load(w, len, &q, err, sizeof(err)) == NULL && strstr(err, "n_head must divide n_embd"),
			  "heads: %s", err);
	}
	{
		uint8_t    *bad = malloc(len);
		tfm_st_file *f;
		tfm_status	se;
		const float nan = NAN;

		memcpy(bad, w, len);
		tfm_st_parse(&f, w, len, &se);
		memcpy(bad + f->data_start + f->tensors[0].begin + 4, &nan, 4);
		CHECK(load(bad, len, &p, err, sizeof(err)) == NULL && strstr(err, "holds NaN at index 1"),
			  "nan: %s", err);
		tfm_st_free(f);
		free(bad);
	}
	/* an untied head: lm_head.weight (V, d) is transposed into out.w (d, V) */
	{
		tfm_hf_params q = p;
		tfm_model  *mu;

		q.tie = false;
		mu = load(wh, hlen, &q, err, sizeof(err));
		CHECK(mu != NULL, "untied from the file with lm_head: %s", err);
		if (mu)
		{
			CHECK(tfm_model_forward(mu, &b, false, 0) == 0, "forward untied");
			check_close("untied logits", mu->logits, m->logits, 5 * 320, 1e-5, 1e-5);
			tfm_model_free(mu);
		}
	}
	tfm_model_free(m);
	tfm_model_free(mh);
	free(w);
	free(wh);
	free(ref);
	return check_summary("test_hf_import");
}
