/*
 * test_hf_bert.c — the BERT-family mapping of tfm/hf_map.h (bert,
 * roberta, distilbert) on the fixtures of
 * test/reference/hf_bert_reference.py: the base checkpoint (no prefix,
 * pooler ignored) and the ...ForSequenceClassification one (prefixed, with
 * its head) load; the last hidden states at every real token, the
 * mean-pooled embeddings and the head's logits match PyTorch (atol 1e-4,
 * rtol 1e-3); wrong shapes and missing tensors are refused naming them.
 */
#include "check.h"
#include "hf_load.h"
#include "tfm/blas.h"
#include "tfm/hf_map.h"
#include "tfm/model.h"

#define MAXB 8
#define MAXT 32

static uint8_t *
slurp(const char *arch, const char *name, size_t *len)
{
	char		path[1024];
	const char *dir = getenv("TFM_TEST_DATA");
	FILE	   *f;
	uint8_t    *buf;
	long		n;

	snprintf(path, sizeof(path), "%s/hf_%s/%s", dir ? dir : "test/fixtures", arch, name);
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

/* an integer field of a JSON text ("key": n) */
static int
json_int(const char *js, const char *key, int dflt)
{
	char		k[96];
	const char *p;

	snprintf(k, sizeof(k), "\"%s\":", key);
	p = strstr(js, k);
	return p ? atoi(p + strlen(k)) : dflt;
}

/* n numbers after "key": skipping brackets, commas and spaces */
static int
json_floats(const char *js, const char *key, float *out, size_t n)
{
	char		k[96];
	const char *p;
	size_t		i = 0;

	snprintf(k, sizeof(k), "\"%s\":", key);
	p = strstr(js, k);
	if (!p)
		return -1;
	p += strlen(k);
	while (i < n)
	{
		char	   *end;

		while (*p == ',' || *p == ' ' || *p == ']' || *p == '[')
			p++;
		out[i] = strtof(p, &end);
		if (end == p)
			return -1;
		i++;
		p = end;
	}
	return 0;
}

/* the reference's id lists: rows of ids[b] (lens[b]); returns B */
static int
json_ids(const char *js, int32_t ids[MAXB][MAXT], int *lens)
{
	const char *p = strstr(js, "\"ids\": [");
	int			B = 0;

	if (!p)
		return 0;
	p += strlen("\"ids\": [");
	while (*p == ' ')
		p++;
	while (*p == '[' && B < MAXB)
	{
		p++;
		lens[B] = 0;
		while (*p != ']')
		{
			char	   *end;
			long		v = strtol(p, &end, 10);

			if (end == p || lens[B] >= MAXT)
				return 0;
			ids[B][lens[B]++] = (int32_t) v;
			p = end;
			while (*p == ',' || *p == ' ')
				p++;
		}
		p++;
		B++;
		while (*p == ',' || *p == ' ')
			p++;
	}
	return B;
}

static tfm_hf_params
params_of(tfm_hf_arch arch, const char *cfg, bool head)
{
	tfm_hf_params p;
	bool		distil = arch == TFM_HF_DISTILBERT;

	memset(&p, 0, sizeof(p));
	p.arch = arch;
	p.vocab = json_int(cfg, "vocab_size", 0);
	p.d_model = json_int(cfg, distil ? "dim" : "hidden_size", 0);
	p.layers = json_int(cfg, distil ? "n_layers" : "num_hidden_layers", 0);
	p.heads = json_int(cfg, distil ? "n_heads" : "num_attention_heads", 0);
	p.d_ff = json_int(cfg, distil ? "hidden_dim" : "intermediate_size", 0);
	p.max_len = json_int(cfg, "max_position_embeddings", 0);
	p.type_vocab = distil ? 0 : json_int(cfg, "type_vocab_size", 2);
	p.pad_id = json_int(cfg, "pad_token_id", 0);
	p.pos_offset = arch == TFM_HF_ROBERTA ? p.pad_id + 1 : 0;
	p.ln_eps = arch == TFM_HF_ROBERTA ? 1e-5f : 1e-12f;
	p.n_classes = 3;
	p.head = head;
	p.dropout = p.attn_dropout = 0.1f;
	return p;
}

static void
test_arch(const char *name, tfm_hf_arch arch)
{
	size_t		len,
				lenc,
				lenj,
				lenr;
	uint8_t    *w = slurp(name, "model.safetensors", &len);
	uint8_t    *wc = slurp(name, "model_cls.safetensors", &lenc);
	char	   *cfg = (char *) slurp(name, "config.json", &lenj);
	char	   *ref = (char *) slurp(name, "reference.json", &lenr);
	int32_t		rows[MAXB][MAXT],
				batch[MAXB * MAXT];
	int			lens[MAXB],
				B,
				T = 0;
	tfm_hf_params p;
	tfm_model  *m,
			   *mc;
	tfm_batch	b = {0};
	char		err[512],
				what[96];
	float	   *hidden,
			   *mean,
			   *logits;
	int			d;

	if (!w || !wc || !cfg || !ref)
	{
		CHECK(0, "%s: fixture files missing", name);
		return;
	}
	p = params_of(arch, cfg, false);
	d = p.d_model;
	m = hf_load(w, len, &p, NULL, err, sizeof(err));
	CHECK(m != NULL, "%s model.safetensors: %s", name, err);
	p = params_of(arch, cfg, true);
	mc = hf_load(wc, lenc, &p, NULL, err, sizeof(err));
	CHECK(mc != NULL, "%s model_cls.safetensors: %s", name, err);
	B = json_ids(ref, rows, lens);
	CHECK(B > 0, "%s: reference ids", name);
	if (!m || !mc || B == 0)
		return;
	for (int i = 0; i < B; i++)
		T = lens[i] > T ? lens[i] : T;
	for (int i = 0; i < B; i++)
		for (int t = 0; t < T; t++)
			batch[i * T + t] = t < lens[i] ? rows[i][t] : p.pad_id;
	hidden = malloc(sizeof(float) * B * T * d);
	mean = malloc(sizeof(float) * B * d);
	logits = malloc(sizeof(float) * B * 3);
	CHECK(json_floats(ref, "hidden", hidden, (size_t) B * T * d) == 0 &&
		  json_floats(ref, "mean", mean, (size_t) B * d) == 0 &&
		  json_floats(ref, "logits", logits, (size_t) B * 3) == 0, "%s: reference values", name);
	b.B = B;
	b.T = T;
	b.input = batch;

	/* the base model: hidden states at real tokens, mean-pooled embeddings */
	CHECK(tfm_model_forward(m, &b, false, 0) == 0, "%s forward", name);
	{
		double		maxh = 0.0,
					maxm = 0.0,
					maxl = 0.0;

		for (int i = 0; i < B; i++)
		{
			snprintf(what, sizeof(what), "%s hidden states of text %d", name, i);
			check_close(what, m->hidden + (size_t) i * T * d, hidden + (size_t) i * T * d,
						(size_t) lens[i] * d, 1e-4, 1e-3);
			for (int k = 0; k < lens[i] * d; k++)
				maxh = fmax(maxh, fabs(m->hidden[(size_t) i * T * d + k] - hidden[(size_t) i * T * d + k]));
		}
		snprintf(what, sizeof(what), "%s mean-pooled embeddings", name);
		check_close(what, m->pooled, mean, (size_t) B * d, 1e-4, 1e-3);
		for (int k = 0; k < B * d; k++)
			maxm = fmax(maxm, fabs(m->pooled[k] - mean[k]));

		/* the classifier: the same encoder, then its head */
		CHECK(tfm_model_forward(mc, &b, false, 0) == 0, "%s forward (cls)", name);
		snprintf(what, sizeof(what), "%s classifier logits", name);
		check_close(what, mc->logits, logits, (size_t) B * 3, 1e-4, 1e-3);
		for (int k = 0; k < B * 3; k++)
			maxl = fmax(maxl, fabs(mc->logits[k] - logits[k]));
		printf("%-10s max |tfm - PyTorch|: hidden %.3g, mean-pooled %.3g, logits %.3g\n",
			   name, maxh, maxm, maxl);
	}

	/* refusals naming the tensor */
	{
		tfm_hf_params q = params_of(arch, cfg, false);
		const char *emb = "embeddings.position_embeddings.weight";

		q.max_len += 1;
		CHECK(hf_load(w, len, &q, NULL, err, sizeof(err)) == NULL && strstr(err, emb) &&
			  strstr(err, "the config implies"), "%s shape: %s", name, err);
		q = params_of(arch, cfg, false);
		q.layers = 3;
		CHECK(hf_load(w, len, &q, NULL, err, sizeof(err)) == NULL && strstr(err, "layer.2.") &&
			  strstr(err, "is missing"), "%s missing: %s", name, err);
		q = params_of(arch, cfg, false);
		q.layers = 1;
		CHECK(hf_load(w, len, &q, NULL, err, sizeof(err)) == NULL && strstr(err, "unexpected tensor"),
			  "%s extra: %s", name, err);
		/* a base checkpoint has no head */
		q = params_of(arch, cfg, true);
		CHECK(hf_load(w, len, &q, NULL, err, sizeof(err)) == NULL &&
			  (strstr(err, "is missing") || strstr(err, "unexpected tensor \"pooler.")),
			  "%s head missing: %s", name, err);
		/* the classifier's head is not a base model's tensor */
		q = params_of(arch, cfg, false);
		CHECK(hf_load(wc, lenc, &q, NULL, err, sizeof(err)) == NULL && strstr(err, "unexpected tensor"),
			  "%s head unexpected: %s", name, err);
		q = params_of(arch, cfg, true);
		q.n_classes = 4;
		CHECK(hf_load(wc, lenc, &q, NULL, err, sizeof(err)) == NULL && strstr(err, "the config implies"),
			  "%s labels: %s", name, err);
	}
	free(hidden);
	free(mean);
	free(logits);
	tfm_model_free(m);
	tfm_model_free(mc);
	free(w);
	free(wc);
	free(cfg);
	free(ref);
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
	test_arch("bert", TFM_HF_BERT);
	test_arch("roberta", TFM_HF_ROBERTA);
	test_arch("distilbert", TFM_HF_DISTILBERT);
	return check_summary("test_hf_bert");
}
