/*
 * test_llama_hf.c — the Llama family's imported reference models
 * (test/fixtures/hf_llama and its Qwen2, Phi-3, Gemma and Gemma 2 siblings,
 * made by test/reference/hf_llama_reference.py): log-probabilities within
 * 1e-4 of PyTorch's and greedy ids through the cache equal to its; a tied
 * head (tie_word_embeddings, lm_head.weight absent) equals the untied model
 * whose out.w is the embedding transposed.  test_llama.c has the layers,
 * the tiny models and the SentencePiece-style BPE.
 */
#include "check.h"
#include "model_fixtures.h"
#include "tfm/blas.h"
#include "tfm/decode.h"
#include "tfm/hf_map.h"
#include "tfm/hf_import.h"
#include "tfm/layers.h"
#include "tfm/layers_llama.h"
#include "tfm/model.h"
#include "tfm/precision.h"
#include "tfm/tokenizer.h"

/* ---- the imported reference model (test/fixtures/hf_llama) ---- */
static uint8_t *
slurp(const char *fixture, const char *name, size_t *len)
{
	char		path[1024];
	const char *dir = getenv("TFM_TEST_DATA");
	FILE	   *f;
	uint8_t    *buf;
	long		n;

	snprintf(path, sizeof(path), "%s/%s/%s", dir ? dir : "test/fixtures", fixture, name);
	f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(n + 1);
	if (fread(buf, 1, n, f) != (size_t) n)
		n = 0;
	buf[n] = 0;
	fclose(f);
	*len = (size_t) n;
	return buf;
}

/* k numbers after the nth occurrence (from 0) of key in s; returns how many were read */
static size_t
numbers_after(double *out, size_t k, const char *s, const char *key, int nth)
{
	const char *p = s;
	size_t		got = 0;

	for (int i = 0; p && i <= nth; i++)
	{
		p = strstr(p, key);
		if (p && i < nth)
			p += strlen(key);
	}
	if (!p)
		return 0;
	p += strlen(key);
	while (got < k)
	{
		char	   *end;

		while (*p == ' ' || *p == '[' || *p == ',' || *p == '\n')
			p++;
		if (*p == ']')
			break;
		out[got] = strtod(p, &end);
		if (end == p)
			break;
		got++;
		p = end;
		while (*p == ']' && got < k && p[1] == ',' )
			p += 2;
	}
	return got;
}

/* every tensor of safetensors file f (bytes w) into m through map, checked */
static void
load_all(tfm_model *m, tfm_hf_map *map, const tfm_st_file *f, const uint8_t *w)
{
	char		err[512] = "";

	for (size_t i = 0; i < f->n_tensors; i++)
	{
		tfm_hf_entry *e = tfm_hf_match(map, f->tensors[i].name, f->tensors[i].name_len);

		CHECK(e != NULL, "unexpected tensor %s", f->tensors[i].name);
		if (e)
			CHECK(tfm_hf_load_tensor(m, map, e, &f->tensors[i], w + f->data_start + f->tensors[i].begin,
									 err, sizeof(err)) == 0, "%s", err);
	}
	CHECK(tfm_hf_finish(m, map, err, sizeof(err)) == 0, "%s", err);
}

/* an HF fixture directory loaded into a model through the Llama map */
typedef struct hf_fixture
{
	uint8_t    *w;				/* model.safetensors */
	char	   *ref;			/* reference.json */
	tfm_config	c;
	tfm_st_file *f;
	tfm_model  *m;
	tfm_hf_map *map;
} hf_fixture;

static bool
fixture_open(hf_fixture *fx, const char *dir, const tfm_hf_params *p)
{
	size_t		len,
				rlen;
	tfm_status	se;

	memset(fx, 0, sizeof(*fx));
	fx->w = slurp(dir, "model.safetensors", &len);
	fx->ref = (char *) slurp(dir, "reference.json", &rlen);
	if (!fx->w || !fx->ref)
	{
		CHECK(0, "test/fixtures/%s is missing", dir);
		free(fx->w);
		free(fx->ref);
		return false;
	}
	CHECK(tfm_hf_config(&fx->c, p) == NULL, "%s config", dir);
	CHECK(tfm_st_parse(&fx->f, fx->w, len, &se) == TFM_OK, "safetensors: %s", se.msg);
	fx->m = tfm_model_create(&fx->c);
	fx->map = tfm_hf_map_create(p->arch, &fx->c);
	load_all(fx->m, fx->map, fx->f, fx->w);
	return true;
}

static void
fixture_close(hf_fixture *fx)
{
	tfm_hf_map_free(fx->map);
	tfm_st_free(fx->f);
	tfm_model_free(fx->m);
	free(fx->w);
	free(fx->ref);
}

/*
 * The 4 cases of a fixture's reference.json against model m: returns the
 * largest |log-probability - PyTorch's|; greedy ids through the cache must
 * be the reference's (what names the model in messages; NULL: log-probabilities
 * only, nothing checked).
 */
static double
check_cases(tfm_model *m, const char *ref, int V, const char *what)
{
	double		worst = 0.0;

	for (int cs = 0; cs < 4; cs++)
	{
		double		idsd[64],
					greedy[16];
		size_t		n = numbers_after(idsd, 64, ref, "\"ids\": [", cs),
					ng = numbers_after(greedy, 16, ref, "\"greedy\": [", cs),
					rows = n == 5 ? 5 : 1;
		double	   *lp = malloc(sizeof(double) * rows * V);
		int32_t		ids[64];
		tfm_batch	b = {0};
		float	   *logp = malloc(sizeof(float) * V);

		size_t		nlp = numbers_after(lp, rows * V, ref, "\"logprobs\": [[", cs);

		if (what)
			CHECK(n > 0 && ng > 0 && nlp == rows * V, "%s reference.json case %d", what, cs);
		for (size_t i = 0; i < n; i++)
			ids[i] = (int32_t) idsd[i];
		b.B = 1;
		b.T = (int) n;
		b.input = ids;
		CHECK(tfm_model_forward(m, &b, false, 0) == 0, "forward");
		for (size_t r = 0; r < rows; r++)
		{
			size_t		t = rows == 1 ? n - 1 : r;

			tfm_log_softmax(logp, m->logits + t * V, V);
			for (int v = 0; v < V; v++)
				worst = fmax(worst, fabs(logp[v] - lp[r * V + v]));
		}
		/* greedy through the cache: the reference's ids */
		{
			tfm_decoder *dec = tfm_decoder_create(m, 1, 128, 64);
			float	   *logits = malloc(sizeof(float) * V);
			bool		same = true;

			tfm_decoder_feed(dec, ids, NULL, (int) n, logits);
			for (size_t g = 0; g < ng; g++)
			{
				int			best = 0;
				int32_t		next;

				for (int v = 1; v < V; v++)
					if (logits[v] > logits[best])
						best = v;
				same = same && best == (int) greedy[g];
				next = best;
				tfm_decoder_feed(dec, &next, NULL, 1, logits);
			}
			if (what)
				CHECK(same, "%s: greedy ids of case %d differ from the reference's", what, cs);
			tfm_decoder_free(dec);
			free(logits);
		}
		free(lp);
		free(logp);
	}
	return worst;
}

static void
test_reference(void)
{
	hf_fixture	fx;
	uint8_t    *w;
	char	   *ref;
	/* the fixture's config.json: 376 ids, d 48, 2 layers, 4 heads, 2 kv heads, f 128 */
	tfm_hf_params p = {.arch = TFM_HF_LLAMA, .vocab = 376, .d_model = 48, .layers = 2,
		.heads = 4, .max_len = 128, .d_ff = 128, .ln_eps = 1e-6f, .tie = false, .kv_heads = 2,
	.rope_theta = 10000.0f};
	const int	V = 376;
	tfm_config	c;
	tfm_model  *m;
	tfm_st_file *f;
	char		err[512] = "";
	double		worst = 0.0;

	if (!fixture_open(&fx, "hf_llama", &p))
		return;
	w = fx.w;
	ref = fx.ref;
	c = fx.c;
	f = fx.f;
	m = fx.m;

	worst = check_cases(m, ref, V, "llama");
	printf("Llama fixture: max |log-prob - PyTorch| = %.3g\n", worst);
	CHECK(worst < 1e-4, "llama log-probabilities differ from PyTorch's by %g", worst);

	/* bf16 and int8 inference pack the fused q|k|v and gate|up matrices too */
	{
		int32_t		ids[9] = {1, 330, 348, 347, 351, 330, 259, 272, 331};
		tfm_batch	b = {0};
		float	   *ref32 = malloc(sizeof(float) * 9 * V);
		static const tfm_precision precs[2] = {TFM_PREC_BF16, TFM_PREC_INT8};
		static const double tol[2] = {0.0, 0.3};

		b.B = 1;
		b.T = 9;
		b.input = ids;
		tfm_model_forward(m, &b, false, 0);
		memcpy(ref32, m->logits, sizeof(float) * 9 * V);
		float	   *rounded = malloc(sizeof(float) * 9 * V);
		double		yard = 0.0;

		{
			/*
			 * This fixture's weights are large (logits up to ~20), so bf16
			 * weights alone move the logits by ~5 %: the yardstick is that
			 * change (the same model with its weights rounded to bf16, run
			 * in fp32); the packed bf16 path, which also rounds the
			 * activations, must stay within twice it, int8 within 0.3.  A
			 * wrongly packed matrix moves the logits by far more.
			 */
			tfm_model  *m2 = tfm_model_create(&m->cfg);
			double		dmax = 0.0;

			for (size_t i = 0; i < m->n_floats; i++)
			{
				uint32_t	u;

				memcpy(&u, &m->params[i], 4);
				u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000u;
				memcpy(&m2->params[i], &u, 4);
			}
			tfm_model_forward(m2, &b, false, 0);
			for (int i = 0; i < 9 * V; i++)
				dmax = fmax(dmax, fabs(m2->logits[i] - ref32[i]) / fmax(1.0, fabs(ref32[i])));
			memcpy(rounded, m2->logits, sizeof(float) * 9 * V);
			yard = dmax;
			printf("Llama fixture: bf16-rounded weights in fp32 move the logits by %.3g (relative)\n", dmax);
			tfm_model_free(m2);
		}
		for (int k = 0; k < 2; k++)
		{
			double		dmax = 0.0;

			CHECK(tfm_model_set_precision(m, precs[k]) == 0, "set precision");
			tfm_model_forward(m, &b, false, 0);
			for (int i = 0; i < 9 * V; i++)
				dmax = fmax(dmax, fabs(m->logits[i] - ref32[i]) / fmax(1.0, fabs(ref32[i])));
			printf("Llama fixture %s: max relative logit difference to fp32 %.3g\n",
				   precs[k] == TFM_PREC_BF16 ? "bf16" : "int8", dmax);
			CHECK(dmax < (precs[k] == TFM_PREC_BF16 ? 2.0 * yard : tol[k]),
				  "llama %s logits differ by %g", precs[k] == TFM_PREC_BF16 ? "bf16" : "int8", dmax);
		}
		CHECK(tfm_model_set_precision(m, TFM_PREC_FP32) == 0, "fp32 again");
		tfm_model_forward(m, &b, false, 0);
		CHECK(memcmp(m->logits, ref32, sizeof(float) * 9 * V) == 0, "fp32 again is bit-identical");
		free(ref32);
		free(rounded);
	}

	/*
	 * Tied (SmolLM's tie_word_embeddings): the same file without using
	 * lm_head.weight gives logits = h·Eᵀ, equal to the untied model whose
	 * out.w is Eᵀ, in the full pass and through the cache.
	 */
	{
		tfm_hf_params pt = p;
		tfm_config	ct;
		tfm_model  *mt,
				   *mu;
		tfm_hf_map *mp;
		int32_t		ids[6] = {1, 300, 270, 40, 280, 17};
		tfm_batch	b = {0};
		double		dmax = 0.0;
		const tfm_param_info *emb,
				   *outw;

		pt.tie = true;
		CHECK(tfm_hf_config(&ct, &pt) == NULL && ct.tie, "tied config");
		mt = tfm_model_create(&ct);
		mp = tfm_hf_map_create(TFM_HF_LLAMA, &ct);
		for (size_t i = 0; i < f->n_tensors; i++)
		{
			tfm_hf_entry *e;

			if (strcmp(f->tensors[i].name, "lm_head.weight") == 0)
				continue;		/* HF drops the tied copy */
			e = tfm_hf_match(mp, f->tensors[i].name, f->tensors[i].name_len);
			CHECK(e && tfm_hf_load_tensor(mt, mp, e, &f->tensors[i],
										  w + f->data_start + f->tensors[i].begin, err,
										  sizeof(err)) == 0, "tied load: %s", err);
		}
		CHECK(tfm_hf_finish(mt, mp, err, sizeof(err)) == 0, "tied finish: %s", err);
		mu = tfm_model_create(&c);
		for (int i = 0; i < mt->n_tensors; i++)
		{
			const tfm_param_info *q = tfm_model_find(mu, mt->info[i].name);

			memcpy(mu->params + q->offset, mt->params + mt->info[i].offset,
				   sizeof(float) * q->size);
		}
		emb = tfm_model_find(mt, "tok_emb");
		outw = tfm_model_find(mu, "out.w");
		for (int v = 0; v < V; v++)
			for (int j = 0; j < 48; j++)
				mu->params[outw->offset + (size_t) j * V + v] = mt->params[emb->offset + (size_t) v * 48 + j];
		b.B = 1;
		b.T = 6;
		b.input = ids;
		tfm_model_forward(mt, &b, false, 0);
		tfm_model_forward(mu, &b, false, 0);
		for (int i = 0; i < 6 * V; i++)
			dmax = fmax(dmax, fabs(mt->logits[i] - mu->logits[i]));
		CHECK(dmax < 1e-4, "tied and untied-with-Eᵀ logits differ by %g", dmax);
		{
			tfm_decoder *dec = tfm_decoder_create(mt, 1, 16, 8);
			float	   *lg = malloc(sizeof(float) * V);
			double		dd = 0.0;

			tfm_decoder_feed(dec, ids, NULL, 6, lg);
			for (int v = 0; v < V; v++)
				dd = fmax(dd, fabs(lg[v] - mt->logits[5 * V + v]));
			CHECK(dd < 1e-5, "tied cached logits differ by %g", dd);
			tfm_decoder_free(dec);
			free(lg);
		}
		tfm_hf_map_free(mp);
		tfm_model_free(mt);
		tfm_model_free(mu);
	}
	fixture_close(&fx);
}

/*
 * The Qwen2 fixture (test/fixtures/hf_qwen2, made by
 * test/reference/hf_qwen2_reference.py): Llama with q/k/v biases, rope_theta
 * 1e6 and a tied head; log-probabilities within 1e-5 of PyTorch's, greedy
 * ids through the cache equal to its.  Without the biases (zeroed) the
 * log-probabilities move far: the biases are used.
 */
static void
test_qwen2_reference(void)
{
	/* the fixture's config.json: 376 ids, d 48, 2 layers, 4 heads, 2 kv heads, f 96, tied */
	tfm_hf_params p = {.arch = TFM_HF_LLAMA, .vocab = 376, .d_model = 48, .layers = 2,
		.heads = 4, .max_len = 128, .d_ff = 96, .ln_eps = 1e-6f, .tie = true, .kv_heads = 2,
	.rope_theta = 1e6f, .qkv_bias = true};
	hf_fixture	fx;
	double		worst;
	const tfm_param_info *bias;

	if (!fixture_open(&fx, "hf_qwen2", &p))
		return;
	CHECK(fx.c.qkv_bias == 1 && fx.c.tie, "qwen2 config: q/k/v biases, tied head");
	CHECK(tfm_hf_match(fx.map, "model.layers.1.self_attn.k_proj.bias", 36) != NULL &&
		  tfm_hf_match(fx.map, "model.layers.1.self_attn.o_proj.bias", 36) == NULL,
		  "qwen2 map: q/k/v biases, no o_proj bias");
	worst = check_cases(fx.m, fx.ref, 376, "qwen2");
	printf("Qwen2 fixture: max |log-prob - PyTorch| = %.3g\n", worst);
	CHECK(worst < 1e-5, "qwen2 log-probabilities differ from PyTorch's by %g", worst);

	/* the same weights with the biases zeroed are another model */
	bias = tfm_model_find(fx.m, "dec.0.attn.qkv.b");
	CHECK(bias != NULL && bias->size == 48 + 2 * 24, "dec.0.attn.qkv.b has q|k|v's 96 values");
	if (bias)
	{
		double		moved;

		memset(fx.m->params + bias->offset, 0, sizeof(float) * bias->size);
		moved = check_cases(fx.m, fx.ref, 376, NULL);
		CHECK(moved > 1e-2, "zeroing the biases moves the log-probabilities by only %g", moved);
	}
	fixture_close(&fx);
}

/* a family's fixture against its reference.json: within 1e-5, greedy ids equal */
static void
fixture_matches(const hf_fixture *fx, const char *label, const char *what)
{
	double		worst = check_cases(fx->m, fx->ref, 376, what);

	printf("%s fixture: max |log-prob - PyTorch| = %.3g\n", label, worst);
	CHECK(worst < 1e-5, "%s log-probabilities differ from PyTorch's by %g", what, worst);
}

/*
 * The Phi-3 fixture (test/fixtures/hf_phi3, test/reference/hf_phi3_reference.py):
 * fused qkv_proj and gate_up_proj split into tfm's q|k|v and gate|up, untied
 * head; log-probabilities within 1e-5 of PyTorch's, greedy ids through the cache.
 */
static void
test_phi3_reference(void)
{
	/* the fixture's config.json: d 48, 2 layers, 4 heads, 2 kv heads, f 80, untied */
	tfm_hf_params p = {.arch = TFM_HF_PHI3, .vocab = 376, .d_model = 48, .layers = 2,
		.heads = 4, .max_len = 64, .d_ff = 80, .ln_eps = 1e-5f, .tie = false, .kv_heads = 2,
	.rope_theta = 10000.0f};
	hf_fixture	fx;

	if (!fixture_open(&fx, "hf_phi3", &p))
		return;
	CHECK(tfm_hf_match(fx.map, "model.layers.1.self_attn.qkv_proj.weight", 40) != NULL &&
		  tfm_hf_match(fx.map, "model.layers.1.self_attn.q_proj.weight", 38) == NULL &&
		  tfm_hf_match(fx.map, "model.layers.0.mlp.gate_up_proj.weight", 38) != NULL,
		  "phi3 map: the fused names only");
	fixture_matches(&fx, "Phi-3", "phi3");
	fixture_close(&fx);
}

/*
 * The Gemma fixture (test/fixtures/hf_gemma, test/reference/hf_gemma_reference.py):
 * GeGLU, embeddings ·√d, RMSNorm gains stored as 1 + w, one key/value head,
 * tied head; log-probabilities within 1e-5 of PyTorch's, greedy ids through
 * the cache.  Without the +1 (the gains as the file stores them) the model
 * is another.
 */
static void
test_gemma_reference(void)
{
	tfm_hf_params p = {.arch = TFM_HF_LLAMA, .vocab = 376, .d_model = 48, .layers = 2,
		.heads = 4, .max_len = 128, .d_ff = 96, .ln_eps = 1e-6f, .tie = true, .kv_heads = 1,
	.rope_theta = 10000.0f, .gemma = true};
	hf_fixture	fx;
	const tfm_param_info *g;

	if (!fixture_open(&fx, "hf_gemma", &p))
		return;
	CHECK(fx.c.gated_act == TFM_GATED_GELU_TANH && fx.c.scale_embeddings == 1 && fx.c.tie,
		  "gemma config: GeGLU, scaled embeddings, tied head");
	fixture_matches(&fx, "Gemma", "gemma");
	g = tfm_model_find(fx.m, "dec.ln_f.g");
	if (g)
	{
		double		moved;

		for (size_t i = 0; i < g->size; i++)
			fx.m->params[g->offset + i] -= 1.0f;
		moved = check_cases(fx.m, fx.ref, 376, NULL);
		CHECK(moved > 1e-2, "the final norm's gains without +1 move the log-probabilities by only %g", moved);
	}
	fixture_close(&fx);
}

/*
 * The Gemma 2 fixture (test/fixtures/hf_gemma2, test/reference/hf_gemma2_reference.py):
 * Gemma's with four norms a layer, scores scaled by query_pre_attn_scalar^-½
 * and soft-capped at 1, logits capped at 1, heads 16 wide (not 48 / 4), so
 * q|k|v is 48 × 128 and attn.out.w 64 × 48; log-probabilities within 1e-5 of
 * PyTorch's, greedy ids through the cache.  Without the caps it is another model.
 */
static void
test_gemma2_reference(void)
{
	tfm_hf_params p = {.arch = TFM_HF_LLAMA, .vocab = 376, .d_model = 48, .layers = 2,
		.heads = 4, .max_len = 64, .d_ff = 96, .ln_eps = 1e-6f, .tie = true, .kv_heads = 2,
		.rope_theta = 10000.0f, .gemma = true, .gemma2 = true, .attn_scale = 0.20412415f,
	.attn_softcap = 1.0f, .final_softcap = 1.0f, .head_dim = 16};
	hf_fixture	fx;
	double		moved;

	if (!fixture_open(&fx, "hf_gemma2", &p))
		return;
	CHECK(fx.c.post_norms == 1 && tfm_model_find(fx.m, "dec.1.post_ff.g") != NULL,
		  "gemma2 config: four norms a layer");
	CHECK(fx.c.head_size == 16 && tfm_model_find(fx.m, "dec.0.attn.out.w")->dims[0] == 64 &&
		  tfm_model_find(fx.m, "dec.0.attn.qkv.w")->dims[1] == 64 + 2 * 32,
		  "gemma2: heads of head_dim 16");
	fixture_matches(&fx, "Gemma 2", "gemma2");
	fx.m->cfg.final_softcap = 0.0f;
	fx.m->cfg.attn_softcap = 0.0f;
	moved = check_cases(fx.m, fx.ref, 376, NULL);
	CHECK(moved > 1e-2, "without the soft caps the log-probabilities move by only %g", moved);
	fixture_close(&fx);
}

int
main(void)
{
	char		err[256];

	if (tfm_blas_init(getenv("TFM_BLIS_ARCH"), err, sizeof(err)) != 0)
	{
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	tfm_set_threads(2);
	test_reference();
	test_qwen2_reference();
	test_phi3_reference();
	test_gemma_reference();
	test_gemma2_reference();
	return check_summary("test_llama_hf");
}
