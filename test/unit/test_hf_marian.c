/*
 * test_hf_marian.c — the Marian mapping of tfm/hf_map.h on the fixture
 * of test/reference/hf_marian_reference.py (a small random MarianMTModel):
 * the safetensors file loads (model.shared.weight and its tied lm_head as
 * one tensor, the position tables ignored); the teacher-forced logits
 * match PyTorch's within 1e-5; the loss and the gradients of five tensors
 * match PyTorch's autograd; greedy decoding with the key/value cache (pad
 * never produced, eos forced at max_length) gives the reference's ids for
 * every case; a tied copy that differs and a missing embedding are refused.
 */
#include "check.h"
#include "tfm/beam.h"
#include "tfm/blas.h"
#include "tfm/decode.h"
#include "tfm/hf_map.h"
#include "tfm/model.h"
#include "hf_load.h"

#define D 32
#define FF 64
#define V 185
#define PAD 184
#define EOS 0
#define MAX_LENGTH 24
#define N_CASES 4

static uint8_t *
slurp(const char *name, size_t *len)
{
	char		rel[512];

	snprintf(rel, sizeof(rel), "hf_marian/%s", name);
	return check_fixture(rel, len);
}

static tfm_hf_params
fixture_params(void)
{
	tfm_hf_params p;

	memset(&p, 0, sizeof(p));
	p.arch = TFM_HF_MARIAN;
	p.vocab = V;
	p.d_model = D;
	p.layers = 2;
	p.dec_layers = 2;
	p.heads = 4;
	p.max_len = 64;
	p.d_ff = FF;
	p.ln_eps = 1e-5f;
	p.tie = true;
	p.dropout = 0.1f;
	p.pad_id = PAD;
	p.activation = TFM_ACT_SILU;
	p.scale_embedding = true;
	return p;
}


/* the start of case k's object in reference.json */
static const char *
case_at(const char *ref, int k)
{
	const char *p = ref;

	for (int i = 0; i <= k && p; i++)
	{
		p = strstr(p, "{\"source\": ");
		if (p && i < k)
			p++;
	}
	return p;
}

/* the numbers of the array "key": [...] after from (nested arrays flattened); count */
static size_t
numbers(const char *from, const char *key, float *out, size_t max)
{
	char		pat[128];
	const char *p;
	size_t		k = 0;
	int			depth = 0;

	snprintf(pat, sizeof(pat), "\"%s\": [", key);
	p = from ? strstr(from, pat) : NULL;
	if (!p)
		return 0;
	p += strlen(pat) - 1;
	do
	{
		if (*p == '[')
			depth++, p++;
		else if (*p == ']')
			depth--, p++;
		else if (*p == ',' || *p == ' ')
			p++;
		else
		{
			char	   *end;
			float		v = strtof(p, &end);

			if (end == p)
				return 0;
			if (k < max)
				out[k] = v;
			k++;
			p = end;
		}
	} while (depth > 0 && *p);
	return k;
}

static size_t
ids(const char *from, const char *key, int32_t *out, size_t max)
{
	float		f[256];
	size_t		n = numbers(from, key, f, 256);

	for (size_t i = 0; i < n && i < max; i++)
		out[i] = (int32_t) f[i];
	return n < max ? n : max;
}

/* greedy decoding as generate does it for Marian: from pad, pad never, eos forced last */
static int
greedy(tfm_model *m, const int32_t *src, int Ts, int32_t *out)
{
	tfm_decoder *d = tfm_decoder_create(m, 1, MAX_LENGTH, 1);
	float		logits[V];
	int			n = 0;
	int32_t		tok = PAD;

	out[n++] = PAD;
	if (!d || tfm_decoder_encode(d, src, Ts, 1) != 0)
	{
		tfm_decoder_free(d);
		return -1;
	}
	while (n < MAX_LENGTH)
	{
		int			best = -1;

		if (tfm_decoder_feed(d, &tok, NULL, 1, logits) != 0)
			break;
		for (int v = 0; v < V; v++)
			if (v != PAD && (n < MAX_LENGTH - 1 || v == EOS) && (best < 0 || logits[v] > logits[best]))
				best = v;
		out[n++] = tok = best;
		if (tok == EOS)
			break;
	}
	tfm_decoder_free(d);
	return n;
}

/* the column-major (transposed) view of a (rows, cols) PyTorch matrix into tfm's (cols, width) at col0 */
static void
transposed(float *out, const float *src, int rows, int cols)
{
	for (int i = 0; i < rows; i++)
		for (int j = 0; j < cols; j++)
			out[(size_t) j * rows + i] = src[(size_t) i * cols + j];
}

static void
check_grads(tfm_model *m, const char *c0)
{
	static float ref[V * D],
				got[V * D],
				tmp[V * D];
	const tfm_param_info *p;

	CHECK(numbers(c0, "final_logits_bias", ref, V) == V, "grad final_logits_bias");
	check_close("grad out.b", m->grads + tfm_model_find(m, "out.b")->offset, ref, V, 1e-6, 1e-4);
	CHECK(numbers(c0, "model.shared.weight", ref, V * D) == V * D, "grad shared");
	check_close("grad tok_emb", m->grads + tfm_model_find(m, "tok_emb")->offset, ref, V * D, 1e-6, 1e-4);
	CHECK(numbers(c0, "model.encoder.layers.0.fc1.weight", tmp, FF * D) == FF * D, "grad fc1");
	transposed(ref, tmp, FF, D);
	check_close("grad enc.0.ff1.w", m->grads + tfm_model_find(m, "enc.0.ff1.w")->offset, ref, FF * D,
				1e-6, 1e-4);
	/* k_proj (D out, D in) is columns 0 .. D-1 of dec.1.cross.kv.w (D, 2D) */
	CHECK(numbers(c0, "model.decoder.layers.1.encoder_attn.k_proj.weight", tmp, D * D) == D * D,
		  "grad k_proj");
	p = tfm_model_find(m, "dec.1.cross.kv.w");
	for (int i = 0; i < D; i++)
		for (int j = 0; j < D; j++)
			got[i * D + j] = m->grads[p->offset + (size_t) i * 2 * D + j];
	transposed(ref, tmp, D, D);
	check_close("grad dec.1.cross.kv.w (k)", got, ref, D * D, 1e-6, 1e-4);
	CHECK(numbers(c0, "model.decoder.layers.0.self_attn.q_proj.bias", ref, D) == D, "grad q bias");
	check_close("grad dec.0.attn.qkv.b (q)", m->grads + tfm_model_find(m, "dec.0.attn.qkv.b")->offset,
				ref, D, 1e-6, 1e-4);
}

int
main(void)
{
	char		err[512];
	size_t		len,
				rlen;
	uint8_t    *w = slurp("model.safetensors", &len);
	char	   *ref = (char *) slurp("reference.json", &rlen);
	tfm_hf_params p = fixture_params();
	tfm_model  *m;
	static float want[64 * V];

	if (tfm_blas_init(getenv("TFM_BLIS_ARCH"), err, sizeof(err)) != 0 || !w || !ref)
	{
		fprintf(stderr, "cannot start: %s\n", w && ref ? err : "fixture files missing");
		return 1;
	}
	m = hf_load(w, len, &p, NULL, err, sizeof(err));
	CHECK(m != NULL, "model.safetensors: %s", err);
	if (!m)
		return check_summary("test_hf_marian");
	CHECK(m->cfg.task == TFM_TASK_SEQ2SEQ && m->cfg.norm == TFM_NORM_POST && m->cfg.sinus_halves &&
		  m->cfg.out_bias && m->cfg.activation == TFM_ACT_SILU && m->cfg.pad_id == PAD &&
		  m->cfg.scale_embeddings && m->cfg.tie, "config mapping");

	/* teacher-forced logits of case 0, every position, and its loss and gradients */
	{
		const char *c0 = case_at(ref, 0);
		int32_t		src[64],
					dec[64],
					lab[64];
		int			Ts = (int) ids(c0, "src", src, 64),
					Tt = (int) ids(c0, "dec", dec, 64);
		tfm_batch	b = {0};
		int			count;
		double		sum;

		CHECK((int) ids(c0, "labels", lab, 64) == Tt && Ts > 0 && Tt > 0, "case 0's ids");
		b.B = 1;
		b.T = Ts;
		b.input = src;
		b.Tt = Tt;
		b.dec_input = dec;
		b.target = lab;
		CHECK(numbers(c0, "logits", want, 64 * V) == (size_t) Tt * V, "case 0's logits");
		CHECK(tfm_model_forward(m, &b, false, 0) == 0, "forward");
		{
			double		maxd = 0.0;

			for (size_t i = 0; i < (size_t) Tt * V; i++)
				maxd = fmax(maxd, fabs((double) m->logits[i] - want[i]));
			printf("Marian fixture: max |logit - PyTorch| = %.3g over %d x %d logits\n", maxd, Tt, V);
			check_close("marian logits", m->logits, want, (size_t) Tt * V, 1e-5, 0.0);
		}
		/* a training pass without dropout: PyTorch's loss (mean) and autograd */
		m->cfg.dropout = 0.0f;
		m->cfg.attn_dropout = 0.0f;
		CHECK(tfm_model_forward(m, &b, true, 1) == 0, "training forward");
		tfm_model_zero_grad(m);
		sum = tfm_model_loss_backward(m, &b, 0.0f, true, 1.0f / (float) (Tt), &count);
		CHECK(count == Tt, "targets %d", count);
		{
			const char *l = strstr(c0, "\"loss\": ");

			CHECK(l && fabs(sum / count - strtod(l + 8, NULL)) < 1e-5, "loss %.8f vs %s", sum / count,
				  l ? l + 8 : "?");
		}
		if (m->grads)
			check_grads(m, c0);
		m->cfg.dropout = 0.1f;
	}

	/* greedy decoding with the cache, every case */
	for (int k = 0; k < N_CASES; k++)
	{
		const char *c = case_at(ref, k);
		int32_t		src[64],
					gref[64],
					got[64];
		int			Ts = (int) ids(c, "src", src, 64),
					ng = (int) ids(c, "greedy", gref, 64),
					n = greedy(m, src, Ts, got);

		CHECK(n == ng && memcmp(got, gref, sizeof(int32_t) * n) == 0,
			  "case %d: greedy ids differ (%d vs %d tokens)", k, n, ng);
	}

	/* beam search as Hugging Face's generate: every case, length penalties 1.0 and 0.6 */
	for (int k = 0; k < N_CASES; k++)
		for (int l = 0; l < 2; l++)
		{
			const char *c = case_at(ref, k);
			int32_t		src[64],
						bref[64];
			int			Ts = (int) ids(c, "src", src, 64),
						nb = (int) ids(c, l ? "beam4_lp0.6" : "beam4_lp1.0", bref, 64);
			tfm_beam_opts o = {.beam = 4, .length_penalty = l ? 0.6f : 1.0f,
			.max_tokens = MAX_LENGTH - 1, .nbest = 1, .bos = PAD, .eos = EOS, .pad = PAD, .hf_rules = 1, .forced_eos = 1};
			tfm_hyp		h;

			CHECK(tfm_beam_search(m, src, 1, Ts, &o, &h, NULL, NULL) == 0, "beam search");
			/* the reference's ids are the start, the hypothesis and its eos */
			CHECK(h.n == nb - 2 && memcmp(h.ids, bref + 1, sizeof(int32_t) * h.n) == 0,
				  "case %d, length penalty %s: beam ids differ (%d vs %d tokens)", k,
				  l ? "0.6" : "1.0", h.n, nb - 2);
			/* and its score, Hugging Face's (a forced </s> adds nothing to it) */
			{
				const char *sc = strstr(c, l ? "\"beam4_lp0.6_score\": " : "\"beam4_lp1.0_score\": ");
				double		want = sc ? strtod(strchr(sc, ':') + 1, NULL) : NAN;

				CHECK(fabs(h.score - want) < 1e-4, "case %d, length penalty %s: score %.6f vs %.6f",
					  k, l ? "0.6" : "1.0", h.score, want);
			}
			tfm_hyps_free(&h, 1);
		}

	/* refusals */
	{
		uint8_t    *bad = malloc(len);
		tfm_st_file *f;
		tfm_status	se;

		/* lm_head.weight one value off the shared embedding it is tied to */
		memcpy(bad, w, len);
		tfm_st_parse(&f, w, len, &se);
		for (size_t i = 0; i < f->n_tensors; i++)
			if (strcmp(f->tensors[i].name, "lm_head.weight") == 0)
				((float *) (bad + f->data_start + f->tensors[i].begin))[7] += 1.0f;
		tfm_st_free(f);
		CHECK(hf_load(bad, len, &p, NULL, err, sizeof(err)) == NULL &&
			  strstr(err, "differs from the embedding it is tied to"), "tied: %s", err);
		free(bad);
		/* without model.shared.weight, lm_head.weight is the embedding: the same model */
		{
			tfm_model  *m2 = hf_load(w, len, &p, "shared", err, sizeof(err));

			CHECK(m2 && memcmp(m2->params, m->params, m->n_floats * sizeof(float)) == 0,
				  "lm_head alone: %s", m2 ? "differs" : err);
			tfm_model_free(m2);
		}
		CHECK(hf_load(w, len, &p, "weight", err, sizeof(err)) == NULL &&
			  strstr(err, "\"model.shared.weight\" is missing"), "no embedding: %s", err);
	}
	tfm_model_free(m);
	free(w);
	free(ref);
	return check_summary("test_hf_marian");
}
