/*
 * test_gguf_kept.c — a GGUF file's K-quant blocks kept and run as they are
 * (precision gguf: tfm/kquant.h's products through the kept blocks).
 *
 * llama_q4_k_m.gguf (test/reference/make_gguf_q4km.py: llama.cpp's Q4_K_M
 * mix of Q4_K and Q6_K tensors, tied embeddings, 2 layers):
 *   - every matrix's columns kept, the packed gguf copies exactly the
 *     file's blocks (their bytes, each part 64-aligned: no float copy);
 *   - the prompt's last logits within 1e-4 of q4km_reference.txt (the
 *     dequantized weights with each product's activations quantized to
 *     Q8_K first, as llama.cpp runs such a file), and its 8 greedy ids
 *     equal, through the decoder's cache (prefill of 9 rows, then one row
 *     a step) as through full passes;
 *   - the float32 matrices of the layers scaled: the gguf logits do not move (the blocks
 *     run, not the float32 values), the fp32 ones do;
 *   - laid over a copy of the packed block (as shared memory does), the
 *     same logits bit for bit;
 *   - gpt2_q8_0.gguf (Conv1D matrices, Q8_0 blocks, activations quantized
 *     to Q8_0): every matrix kept, its gguf next-token log-probabilities
 *     within 0.05 of its fp32 ones (the blocks' exact dequantization; int8
 *     requantized from them is about as far);
 *   - the kept blocks refused where they do not fit: a K not a multiple of
 *     256 for Q4_K, a type tfm does not keep, columns past the matrix;
 *   - where each tensor's blocks go: a matrix's columns (the tied head's
 *     transposed), or the rows of a tensor no matrix runs (gpt2_q8_0's
 *     untied token_embd and position_embd: each row of blocks dequantized
 *     is the tensor's row of float32 values, bit for bit);
 *   - the embedding loaded a range of rows at a time (as an import checks
 *     a large one in slices): the same values; refused twice, past its
 *     rows, or with a NaN.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gguf_keep.h"
#include "tfm/decode.h"
#include "tfm/kept_block.h"
#include "tfm/kquant.h"
#include "tfm/lowp.h"

#define PROMPT 9
#define STEPS 8

typedef struct reference
{
	int32_t		ids[PROMPT],
				greedy[STEPS];
	double		gap;
	float	   *logits;
	int			V;
} reference;

static bool
read_reference(reference *r, int V)
{
	size_t		len;
	char	   *txt = (char *) check_fixture("gguf/q4km_reference.txt", &len),
			   *p;
	int			used;

	if (!txt)
		return false;
	r->V = V;
	r->logits = malloc(sizeof(float) * V);
	p = strstr(txt, "ids ") + 4;
	for (int i = 0; i < PROMPT; i++, p += used)
		if (sscanf(p, "%d%n", &r->ids[i], &used) != 1)
			return false;
	p = strstr(txt, "greedy ") + 7;
	for (int i = 0; i < STEPS; i++, p += used)
		if (sscanf(p, "%d%n", &r->greedy[i], &used) != 1)
			return false;
	if (sscanf(strstr(txt, "gap ") + 4, "%lf", &r->gap) != 1)
		return false;
	p = strstr(txt, "logits ") + 7;
	for (int i = 0; i < V; i++, p += used)
		if (sscanf(p, "%f%n", &r->logits[i], &used) != 1)
			return false;
	free(txt);
	return true;
}

static int
argmax(const float *x, int n)
{
	int			b = 0;

	for (int i = 1; i < n; i++)
		if (x[i] > x[b])
			b = i;
	return b;
}

/* the last row's logits of a full pass over ids[0..T) */
static void
last_logits(tfm_model *m, const int32_t *ids, int T, float *out)
{
	tfm_batch	bt = {.B = 1, .T = T, .input = ids};

	CHECK(tfm_model_forward(m, &bt, false, 0) == 0, "forward of %d rows", T);
	memcpy(out, m->logits + (size_t) (T - 1) * m->cfg.vocab, sizeof(float) * m->cfg.vocab);
}

/* gpt2_q8_0.gguf at gguf against its float32 values */
static void
test_gpt2_q8_0(void)
{
	size_t		len;
	uint8_t    *buf = check_fixture("gguf/gpt2_q8_0.gguf", &len);
	tfm_hf_params p;
	tfm_status	st = {0};
	tfm_model  *m;
	int32_t		ids[6] = {464, 3797, 3332, 319, 262, 2603};
	tfm_batch	bt = {.B = 1, .T = 6, .input = ids};
	float	   *a,
			   *b,
				worst = 0.0f;
	size_t		n;

	if (!buf)
		return;
	m = import_gguf_keep(buf, len, &p, &st, true);
	CHECK(m != NULL, "gpt2_q8_0.gguf: %s", st.msg);
	if (!m)
		return;
	for (int i = 0; i < 6; i++)
		ids[i] %= m->cfg.vocab;
	n = (size_t) 6 * m->cfg.vocab;
	a = malloc(sizeof(float) * n);
	b = malloc(sizeof(float) * n);
	CHECK(tfm_model_int4_kept_columns(m) > 0, "gpt2_q8_0.gguf keeps nothing");
	CHECK(tfm_model_forward(m, &bt, false, 0) == 0, "fp32");
	memcpy(a, m->logits, sizeof(float) * n);
	CHECK(tfm_model_set_precision(m, TFM_PREC_GGUF) == 0 && tfm_model_forward(m, &bt, false, 0) == 0, "gguf");
	memcpy(b, m->logits, sizeof(float) * n);
	CHECK(memcmp(a, b, sizeof(float) * n) != 0, "gpt2 at gguf ran the float32 values");
	{
		float		w8 = 0.0f;

		CHECK(tfm_model_set_precision(m, TFM_PREC_INT8) == 0 && tfm_model_forward(m, &bt, false, 0) == 0, "int8");
		for (size_t i = 0; i < n; i++)
			w8 = fmaxf(w8, fabsf(m->logits[i] - a[i]));
		for (size_t i = 0; i < n; i++)
			worst = fmaxf(worst, fabsf(b[i] - a[i]));
		printf("gpt2 max |logit - fp32's|: gguf %.3g, int8 %.3g\n", worst, w8);
		worst = 0.0f;
	}
	for (int t = 0; t < 6; t++)
	{
		float	   *x = a + (size_t) t * m->cfg.vocab,
				   *y = b + (size_t) t * m->cfg.vocab;

		tfm_log_softmax(x, x, m->cfg.vocab);
		tfm_log_softmax(y, y, m->cfg.vocab);
		for (int i = 0; i < m->cfg.vocab; i++)
			worst = fmaxf(worst, fabsf(x[i] - y[i]));
	}
	printf("gpt2_q8_0.gguf at gguf: %ld columns kept, max |log-prob - fp32's| = %.3g (bound 0.05)\n",
		   tfm_model_int4_kept_columns(m), worst);
	CHECK(worst <= 0.05f, "gpt2 gguf log-probabilities %.3g from fp32's", worst);
	/*
	 * its matrices, its untied embedding and its position table left to
	 * their blocks (absent_floats.c; NaN in their place): the same gguf
	 * logits, the tables' rows made from their blocks (rows_only)
	 */
	{
		bool	   *want = calloc(m->n_tensors, sizeof(bool));
		int			two_d = 0,
					left;

		for (int i = 0; i < m->n_tensors; i++)
		{
			want[i] = true;
			two_d += m->info[i].ndim == 2;
		}
		CHECK(tfm_model_set_precision(m, TFM_PREC_GGUF) == 0 && tfm_model_forward(m, &bt, false, 0) == 0,
			  "gguf");
		memcpy(a, m->logits, sizeof(float) * n);
		left = tfm_model_leave_absent(m, want);
		CHECK(left == two_d, "gpt2 left to its blocks: %d tensors of %d 2-D", left, two_d);
		for (int i = 0; i < m->n_tensors; i++)
			if (m->absent && m->absent[i])
				for (size_t j = 0; j < m->info[i].size; j++)
					m->params[m->info[i].offset + j] = NAN;
		CHECK(tfm_model_forward(m, &bt, false, 0) == 0 && memcmp(a, m->logits, sizeof(float) * n) == 0,
			  "gpt2 gguf logits without the float32 values");
		free(want);
	}
	free(a);
	free(b);
	free(buf);
	tfm_model_free(m);
}

/*
 * Where each tensor of a file's blocks goes: a matrix's columns
 * (tfm_gguf_kept_place, with its geometry: tfm_model_kept_matrix), or, for
 * storage only, the rows of a tensor no matrix runs (tfm_gguf_rows_place:
 * an untied embedding, a position table), each row of blocks dequantized
 * the tensor's row of float32 values exactly (what loading makes)
 */
static void
test_places(const char *fixture, bool tied)
{
	size_t		len;
	uint8_t    *buf = check_fixture(fixture, &len);
	tfm_hf_params p;
	tfm_status	st = {0};
	tfm_model  *m;
	tfm_gguf_file *f;
	tfm_hf_map *map;
	int			rows_placed = 0,
				head_seen = 0;

	if (!buf)
		return;
	m = import_gguf_keep(buf, len, &p, &st, false);
	CHECK(m != NULL && tfm_gguf_parse(&f, buf, len, len, &st) == 0, "%s: %s", fixture, st.msg);
	if (!m)
		return;
	map = tfm_hf_map_create(p.arch, &m->cfg);
	for (uint64_t i = 0; i < f->n_tensors; i++)
	{
		const tfm_gguf_tensor *t = &f->tensors[i];
		const tfm_param_info *emb = tfm_model_find(m, "tok_emb");
		tfm_int4_kept k;
		int			heads = 0,
					N = 0;
		bool		col = tfm_gguf_kept_place(&k, &heads, m, map, &p, t) == 1,
					transposed = false;

		if (col)
		{
			CHECK(tfm_model_kept_matrix(m, &k, &N, &transposed), "%s: %s fits no matrix", fixture, t->name);
			/* the tied head reads the embedding (V, d) as its columns; the others are stored (in, out) */
			CHECK(transposed == (k.offset == emb->offset) && N >= k.col0 + k.cols,
				  "%s: %s transposed %d, N %d", fixture, t->name, transposed, N);
			head_seen += k.offset == emb->offset;
			CHECK(tfm_gguf_rows_place(&k, m, map, &p, t) == 0 || k.offset == emb->offset,
				  "%s: %s placed twice", fixture, t->name);
		}
		else if (tfm_gguf_rows_place(&k, m, map, &p, t))
		{
			const tfm_param_info *pi = NULL;
			size_t		row_bytes = tfm_kept_bytes(&k) / (size_t) k.cols;
			float	   *row = malloc(sizeof(float) * (size_t) k.K);
			bool		same = true;

			for (int j = 0; j < m->n_tensors; j++)
				if (m->info[j].offset == k.offset)
					pi = &m->info[j];
			CHECK(pi && k.col0 == 0 && (size_t) k.cols * (size_t) k.K == pi->size &&
				  tfm_kept_bytes(&k) == t->bytes && !tfm_model_int4_fits(m, &k),
				  "%s: %s stored as the rows of a tensor", fixture, t->name);
			for (int r = 0; pi && r < k.cols && same; r++)
				same = tfm_gguf_to_f32(row, buf + f->data_start + t->offset + (size_t) r * row_bytes,
									   k.type, (uint64_t) k.K) == 0 &&
					memcmp(row, m->params + pi->offset + (size_t) r * k.K, sizeof(float) * k.K) == 0;
			CHECK(same, "%s: %s's rows are not its float32 values", fixture, t->name);
			free(row);
			rows_placed++;
		}
	}
	/* tied: the embedding is the head's columns; untied (gpt2_q8_0 repeats the head):
	 * token_embd and position_embd are stored as their rows */
	CHECK(tied ? rows_placed == 0 && head_seen == 1 : rows_placed == 2 && head_seen == 0,
		  "%s: %d tensors placed as rows, the tied head seen %d times", fixture, rows_placed, head_seen);
	tfm_hf_map_free(map);
	tfm_gguf_free(f);
	tfm_model_free(m);
	free(buf);
}

/*
 * tfm_gguf_rows_begin / tfm_gguf_load_rows (an import's large tensor made
 * a slice of rows at a time): the fixture's embedding (copied as it is)
 * loaded in three uneven ranges holds tfm_gguf_load's values bit for bit;
 * a second begin of it is refused (seen once), as is a range past its rows
 * and a NaN in a block's scale (naming the tensor and the index); a q
 * (rope order) and a norm are not loaded so (place NULL, nothing counted)
 */
static void
test_rows_loader(const uint8_t *buf, size_t len, const tfm_model *whole)
{
	tfm_hf_params p;
	tfm_status	st = {0};
	tfm_gguf_file *f;
	tfm_config	c;
	int64_t		capped;
	tfm_hf_map *map;
	tfm_model  *m;
	const tfm_param_info *emb = tfm_model_find(whole, "tok_emb");
	int			others = 0;

	if (tfm_gguf_parse(&f, buf, len, len, &st) != 0 || tfm_gguf_params(&p, &capped, f, &st) != 0 ||
		tfm_hf_config(&c, &p) != NULL)
	{
		CHECK(0, "parse: %s", st.msg);
		return;
	}
	map = tfm_hf_map_create(p.arch, &c);
	m = tfm_model_create(&c);
	for (uint64_t i = 0; i < f->n_tensors; i++)
	{
		const tfm_gguf_tensor *t = &f->tensors[i];
		const uint8_t *src = buf + f->data_start + t->offset;
		float	   *place = NULL;

		if (strcmp(t->name, "token_embd.weight") != 0)
		{
			if (strstr(t->name, ".attn_q.weight") || strstr(t->name, "_norm.weight"))
			{
				CHECK(tfm_gguf_rows_begin(&place, m, map, &p, t, &st) == TFM_OK && place == NULL,
					  "%s: not loaded a range of rows at a time", t->name);
				others++;
			}
			continue;
		}
		CHECK(tfm_gguf_rows_begin(&place, m, map, &p, t, &st) == TFM_OK &&
			  place == m->params + emb->offset, "token_embd: begun at its place (%s)", st.msg);
		if (!place)
			break;
		CHECK(tfm_gguf_load_rows(place, t, src, 0, 1, &st) == TFM_OK &&
			  tfm_gguf_load_rows(place, t, src, 1, 200, &st) == TFM_OK &&
			  tfm_gguf_load_rows(place, t, src, 200, t->ne[1], &st) == TFM_OK, "three ranges: %s", st.msg);
		CHECK(memcmp(place, whole->params + emb->offset, sizeof(float) * emb->size) == 0,
			  "token_embd in three ranges: tfm_gguf_load's values bit for bit");
		CHECK(tfm_gguf_load_rows(place, t, src, 10, t->ne[1] + 1, &st) == TFM_EINVAL,
			  "a range past the rows refused");
		{
			float	   *again = NULL;

			CHECK(tfm_gguf_rows_begin(&again, m, map, &p, t, &st) == TFM_EBADFILE && again == NULL &&
				  strstr(st.msg, "twice") != NULL, "begun twice: %s", st.msg);
		}
		{
			/* Q6_K: d is the last 2 bytes of each 210-byte block; 0x7E00 is an fp16 NaN */
			uint8_t    *bad = malloc(t->bytes);
			const uint64_t row_bytes = t->bytes / t->ne[1];

			memcpy(bad, src, t->bytes);
			CHECK(t->type == 14, "the fixture's embedding is Q6_K (%u)", t->type);
			bad[5 * row_bytes + 208] = 0x00;
			bad[5 * row_bytes + 209] = 0x7E;
			CHECK(tfm_gguf_load_rows(place, t, bad, 4, 6, &st) == TFM_EBADFILE &&
				  strstr(st.msg, "token_embd.weight") && strstr(st.msg, "NaN"), "a NaN refused: %s", st.msg);
			free(bad);
		}
	}
	/* two layers: two q, four norms, and the output norm */
	CHECK(others == 2 + 5, "the q and the norms tried: %d", others);
	tfm_model_free(m);
	tfm_hf_map_free(map);
	tfm_gguf_free(f);
}

int
main(void)
{
	size_t		len,
				file_blocks = 0;
	uint8_t    *buf = check_fixture("gguf/llama_q4_k_m.gguf", &len);
	tfm_hf_params p;
	tfm_status	st = {0};
	tfm_model  *m,
			   *s;
	tfm_gguf_file *f;
	reference	ref;
	float	   *lg,
			   *lf,
			   *step;
	int32_t		ids[PROMPT + STEPS];
	float		worst = 0.0f;
	int			V,
				q4 = 0,
				q6 = 0;

	test_places("gguf/llama_q4_k_m.gguf", true);
	test_places("gguf/gpt2_q8_0.gguf", false);
	if (!buf)
		return check_summary("test_gguf_kept");
	m = import_gguf_keep(buf, len, &p, &st, true);
	s = import_gguf_keep(buf, len, &p, &st, true);
	CHECK(m && s, "import: %s", st.msg);
	if (!m || !s)
		return check_summary("test_gguf_kept");
	V = m->cfg.vocab;
	CHECK(read_reference(&ref, V), "q4km_reference.txt");
	test_rows_loader(buf, len, s);

	/* per layer qkv 256 + 128 + 128, out 256, gate + up 1024, down 256; the tied head 376 */
	CHECK(tfm_model_int4_kept_columns(m) == 2 * 2048 + 376, "columns kept: %ld",
		  tfm_model_int4_kept_columns(m));
	CHECK(tfm_gguf_parse(&f, buf, len, len, &st) == 0, "%s", st.msg);
	for (uint64_t i = 0; i < f->n_tensors; i++)
		if (f->tensors[i].ndim == 2)
		{
			file_blocks += (f->tensors[i].bytes + 63) & ~(size_t) 63;
			q4 += f->tensors[i].type == 12;
			q6 += f->tensors[i].type == 14;
		}
	tfm_gguf_free(f);
	CHECK(q4 == 12 && q6 == 3, "the fixture's mix: %d Q4_K, %d Q6_K tensors", q4, q6);
	CHECK(tfm_model_set_precision(m, TFM_PREC_GGUF) == 0 && tfm_model_precision(m) == TFM_PREC_GGUF,
		  "gguf");
	/* no copies: the parts run the model's kept blocks where they are */
	CHECK(tfm_model_precision_bytes(m) == 0, "the gguf copies take %zu bytes",
		  tfm_model_precision_bytes(m));
	printf("llama_q4_k_m.gguf: %zu bytes of file, %zu bytes of kept blocks (%s path)\n", len,
		   file_blocks, tfm_kq_path());

	/* the prompt's last logits and the greedy ids, full passes */
	lg = malloc(sizeof(float) * V);
	lf = malloc(sizeof(float) * V);
	step = malloc(sizeof(float) * V);
	memcpy(ids, ref.ids, sizeof(ref.ids));
	last_logits(m, ids, PROMPT, lg);
	for (int i = 0; i < V; i++)
		worst = fmaxf(worst, fabsf(lg[i] - ref.logits[i]));
	printf("gguf logits: max |logit - reference's| = %.3g (bound 1e-4; the reference's smallest top-2 gap %.3g)\n",
		   worst, ref.gap);
	CHECK(worst <= 1e-4f, "logits %.3g from the reference's", worst);
	for (int t = 0; t < STEPS; t++)
	{
		last_logits(m, ids, PROMPT + t, step);
		ids[PROMPT + t] = argmax(step, V);
		CHECK(ids[PROMPT + t] == ref.greedy[t], "full passes, greedy step %d: %d, the reference %d", t,
			  ids[PROMPT + t], ref.greedy[t]);
	}

	/* the decoder: prefill of 9 rows, then a row a step */
	{
		tfm_decoder *d = tfm_decoder_create(m, 1, 32, PROMPT);

		CHECK(d != NULL, "decoder");
		CHECK(tfm_decoder_feed(d, ref.ids, NULL, PROMPT, step) == 0, "prefill");
		for (int t = 0; t < STEPS; t++)
		{
			int32_t		next = argmax(step, V);

			CHECK(next == ref.greedy[t], "decoder, greedy step %d: %d, the reference %d", t, next,
				  ref.greedy[t]);
			CHECK(tfm_decoder_feed(d, &next, NULL, 1, step) == 0, "feed");
		}
		tfm_decoder_free(d);
	}

	/* the blocks run, not the float32 values */
	last_logits(m, ref.ids, PROMPT, lg);
	CHECK(tfm_model_set_precision(s, TFM_PREC_FP32) == 0, "fp32");
	last_logits(s, ref.ids, PROMPT, lf);
	scale_matrices(s, 1.25f);
	CHECK(tfm_model_set_precision(s, TFM_PREC_GGUF) == 0, "gguf");
	last_logits(s, ref.ids, PROMPT, step);
	CHECK(memcmp(step, lg, sizeof(float) * V) == 0, "gguf logits moved with the float32 matrices");
	CHECK(tfm_model_set_precision(s, TFM_PREC_FP32) == 0, "fp32");
	last_logits(s, ref.ids, PROMPT, step);
	CHECK(memcmp(step, lf, sizeof(float) * V) != 0, "fp32 logits did not move with the matrices");

	/*
	 * the float32 values left to the blocks (absent_floats.c): the matrices
	 * and the tied embedding, their values overwritten with NaN to show
	 * that gguf never reads them, give the same logits and greedy ids; a
	 * tensor's values and a model leaving gguf make the exact values again
	 */
	{
		tfm_model  *a = import_gguf_keep(buf, len, &p, &st, true);
		bool	   *want = a ? calloc(a->n_tensors, sizeof(bool)) : NULL;
		float	   *saved = a ? malloc(sizeof(float) * a->n_floats) : NULL;
		float	   *vals = a ? malloc(sizeof(float) * a->n_floats) : NULL;
		int			two_d = 0,
					left;
		size_t		left_floats = 0;

		CHECK(a && want && saved && vals, "import");
		if (a && want && saved && vals)
		{
			memcpy(saved, a->params, sizeof(float) * a->n_floats);
			for (int i = 0; i < a->n_tensors; i++)
			{
				want[i] = true;
				two_d += a->info[i].ndim == 2;
			}
			/* every 2-D tensor (the matrices, the tied embedding) is left to the blocks */
			left = tfm_model_leave_absent(a, want);
			CHECK(left == two_d && a->absent != NULL,
				  "left absent: %d tensors, the 2-D ones %d", left, two_d);
			for (int i = 0; i < a->n_tensors; i++)
				if (a->absent && a->absent[i])
				{
					left_floats += a->info[i].size;
					for (size_t j = 0; j < a->info[i].size; j++)
						a->params[a->info[i].offset + j] = NAN;
				}
			CHECK(left_floats == a->absent_floats, "absent values counted: %zu", a->absent_floats);
			/* a pass at fp32 is refused, not run on values that are not there */
			CHECK(tfm_model_forward(a, &(tfm_batch) {.B = 1, .T = PROMPT, .input = ref.ids}, false, 0) != 0,
				  "fp32 pass over absent values");
			CHECK(tfm_model_set_precision(a, TFM_PREC_GGUF) == 0, "gguf");
			last_logits(a, ref.ids, PROMPT, step);
			CHECK(memcmp(step, lg, sizeof(float) * V) == 0, "gguf logits without the float32 values");
			{
				tfm_decoder *d = tfm_decoder_create(a, 1, 32, PROMPT);

				CHECK(d && tfm_decoder_feed(d, ref.ids, NULL, PROMPT, step) == 0, "prefill");
				for (int t = 0; d && t < STEPS; t++)
				{
					int32_t		next = argmax(step, V);

					CHECK(next == ref.greedy[t], "absent, decoder step %d: %d, the reference %d", t,
						  next, ref.greedy[t]);
					CHECK(tfm_decoder_feed(d, &next, NULL, 1, step) == 0, "feed");
				}
				tfm_decoder_free(d);
			}
			for (int i = 0; i < a->n_tensors; i++)
			{
				CHECK(tfm_model_tensor_read(a, i, vals) == 0, "read %s", a->info[i].name);
				CHECK(memcmp(vals, saved + a->info[i].offset, sizeof(float) * a->info[i].size) == 0,
					  "tensor %s: other values than the import's", a->info[i].name);
			}
			/* leaving gguf makes them: the import's values, counted */
			CHECK(tfm_model_set_precision(a, TFM_PREC_FP32) == 0 && a->absent == NULL &&
				  a->floats_made == left_floats, "fp32 makes the values (%zu made)", a->floats_made);
			CHECK(memcmp(a->params, saved, sizeof(float) * a->n_floats) == 0, "values made");
			last_logits(a, ref.ids, PROMPT, step);
			CHECK(memcmp(step, lf, sizeof(float) * V) == 0, "fp32 logits after making the values");
			printf("llama_q4_k_m.gguf left to its blocks: %d tensors, %zu float32 values not made\n",
				   left, left_floats);
		}
		free(want);
		free(saved);
		free(vals);
		tfm_model_free(a);
	}

	/* gguf runs the kept blocks where they are: no copy */
	CHECK(tfm_model_precision_block(m) == NULL && tfm_model_precision_block_bytes(m, TFM_PREC_GGUF) == file_blocks,
		  "gguf copied blocks");

	/* kept blocks that do not fit are refused, nothing changed */
	{
		const tfm_param_info *pi = tfm_model_find(s, "dec.0.attn.out.w");
		uint8_t    *blocks = calloc(1, 256 * 210);

		CHECK(pi != NULL, "dec.0.attn.out.w");
		if (!pi)
			return check_summary("test_gguf_kept");
		tfm_int4_kept bad[] = {
			{pi->offset, 128, 0, 256, blocks, 12},	/* K not a multiple of 256 */
			{pi->offset, 256, 0, 256, blocks, 1},	/* F16: not kept */
			{pi->offset, 256, 200, 100, blocks, 14},	/* columns past the matrix */
			{pi->offset, 256, -1, 10, blocks, 14},
		};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			CHECK(tfm_model_keep_int4(s, &bad[i], 1) == TFM_EINVAL, "bad kept blocks %zu accepted", i);
		CHECK(tfm_model_int4_kept_columns(s) == 2 * 2048 + 376, "the kept blocks changed");
		free(blocks);
	}
	test_gpt2_q8_0();
	free(lg);
	free(lf);
	free(step);
	free(ref.logits);
	free(buf);
	tfm_model_free(m);
	tfm_model_free(s);
	return check_summary("test_gguf_kept");
}
