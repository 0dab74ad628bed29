/*
 * gguf_import.c — a llama or gpt2 GGUF file made a tfm model (tfm_import_gguf,
 * tfm_import_gguf_file): the header parsed strictly by the core
 * (tfm/gguf.h), its metadata made the config of a Hugging Face Llama or
 * GPT-2, then the same import as a checkpoint's (import/model_import.c): every tensor read
 * one at a time, converted to float32 (every GGUF type tfm reads: the
 * weights of fp32, bf16, int8 and training) and stored through the
 * architecture's map, and the tokenizer of the metadata ("llama" or
 * "gpt2") stored under the model's name.  What became of each tensor goes
 * to tfm.gguf_tensors, with the file's blocks of the Q4_0, Q8_0, Q4_K,
 * Q5_K and Q6_K tensors that are matrices' columns (tfm_gguf_kept_place):
 * int4 and gguf inference of the version imported run those blocks as they
 * are (storage/models/gguf_kept.c).  A tensor those blocks cover wholly, each
 * value their exact dequantization, is stored as them only: no float32
 * rows (its values are made from the blocks at load, kept_values.c).  It
 * is checked as soon as it is read (a large one copied as it is, an
 * embedding, a slice of rows at a time: tfm.gguf_slice_bytes), and its
 * float32 values' memory given back then; the model is made blank (tfm's
 * initial values only for what the file lacks); a server file's blocks
 * are read again, a stored part at a time, when the rows are written
 * (their hash checked against the bytes that were checked), so an import
 * holds the float32 values that are not blocks, one tensor's bytes and a
 * slice of its values, not the file.
 *
 * A bytea is read in place; a server file through its descriptor, the
 * header first (growing up to TFM_GGUF_MAX_HEADER bytes), then each
 * tensor's bytes alone: never the whole file in memory.
 */
#include "postgres.h"

#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include "common/cryptohash.h"
#include "common/sha2.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/fmgrprotos.h"
#include "utils/json.h"
#include "utils/jsonb.h"

#include "import/hf_files.h"
#include "runtime/infer/chat_prompt.h"
#include "runtime/rows.h"
#include "runtime/runtime.h"
#include "storage/models/models.h"
#include "storage/tokenizers/tokenizers.h"
#include "tfm/hf_import.h"
#include "tfm/gguf.h"
#include "tfm/gguf_quants.h"
#include "tfm/layers_llama.h"
#include "tfm/precision.h"
#include "tfm/tokenizer.h"

/* a server file's header is read in 4 kB first, then 8 times more at a time
 * (a Llama 2 vocabulary of 32,000 pieces makes a header of about 1 MB) */
#define TFM_GGUF_FIRST_READ ((uint64) 4096)

typedef struct GgufSource
{
	const char *what;			/* for messages: "GGUF file" or "GGUF file \"path\"" */
	TfmWeightFile file;			/* a bytea's data in memory, or a server file */
	const uint8 *header;		/* the bytes the header was parsed from */
	tfm_gguf_file *f;
	TfmGuard   *f_guard;
	tfm_hf_params p;
	TfmGgufTensorRow *rows;		/* what became of each tensor (tfm.gguf_tensors) */
	int			n_rows;
	/* per tensor of the model: */
	bool	   *loaded;			/* a tensor of the file wrote into it */
	size_t	   *covered;		/* the values kept blocks cover */
	bool	   *exact;			/* each the exact dequantization of its blocks */
	bool	   *released;		/* its values' memory given back (check_kept) */
	uint64		kept_bytes;		/* the blocks kept in all */
	/* a server file's kept blocks, read again a part at a time as the rows are written: */
	uint64	   *offsets;		/* per row: its tensor's place in the file */
	uint8	   *digests;		/* and the SHA-256 of its bytes when they were checked */
	pg_cryptohash_ctx *part_sha;	/* the SHA-256 of the parts read so far of a row */
} GgufSource;

static void
free_gguf(void *p)
{
	tfm_gguf_free(p);
}

static void
free_vocab(void *p)
{
	tfm_gguf_vocab_free(p);
}

/* the header parsed: in place for a bytea, in growing reads for a file */
static void
parse_header(GgufSource *s)
{
	tfm_status	st = {0};
	int			rc;

	TfmWeightFile *wf = &s->file;

	if (wf->mem)
		rc = tfm_gguf_parse(&s->f, wf->mem, wf->size, wf->size, &st);
	else
	{
		uint64		avail = Min(wf->size, TFM_GGUF_FIRST_READ);

		for (;;)
		{
			uint8	   *hbuf = palloc_extended(Max(avail, 1), MCXT_ALLOC_HUGE);

			s->header = tfm_file_read(wf, 0, avail, hbuf);
			rc = tfm_gguf_parse(&s->f, s->header, avail, wf->size, &st);
			if (rc != TFM_ELIMIT || avail >= wf->size || avail >= TFM_GGUF_MAX_HEADER)
				break;
			pfree(hbuf);
			avail = Min(Min(wf->size, avail * 8), TFM_GGUF_MAX_HEADER);
		}
	}
	tfm_raise(rc, &st, psprintf("invalid %s", s->what));
	s->f_guard = tfm_guard(free_gguf, s->f);
}

/*
 * SHA-256 over a tensor's blocks, begun (sha NULL: a new one), carried over
 * len bytes at p, and with out set, finished into out (32 bytes) and freed:
 * a digest no one can match with other bytes, however the blocks are read
 * in parts (a 64-bit hash of PostgreSQL's, hash_bytes_extended, was
 * matched with a changed row by solving its mixing backwards)
 */
static pg_cryptohash_ctx *
blocks_sha256(pg_cryptohash_ctx *sha, const uint8 *p, uint64 len, uint8 *out)
{
	if (!sha && (!(sha = pg_cryptohash_create(PG_SHA256)) || pg_cryptohash_init(sha) < 0))
		elog(ERROR, "could not begin a SHA-256 digest: %s", sha ? pg_cryptohash_error(sha) : "out of memory");
	if (pg_cryptohash_update(sha, p, len) < 0 || (out && pg_cryptohash_final(sha, out, PG_SHA256_DIGEST_LENGTH) < 0))
		elog(ERROR, "could not compute a SHA-256 digest: %s", pg_cryptohash_error(sha));
	if (!out)
		return sha;
	pg_cryptohash_free(sha);
	return NULL;
}

/*
 * A part of a kept tensor's blocks read again from the file when the rows
 * are written (tfm_gguf_tensors_store), into dst, the parts of a tensor in
 * order: after its last, the same bytes as checked, or an error (the file
 * changed under the import; nothing of the import is kept)
 */
static void
gguf_read_part(void *arg, int i, uint64 off, uint64 len, uint8 *dst)
{
	GgufSource *s = arg;
	const TfmGgufTensorRow *r = &s->rows[i];
	const uint8 *b = tfm_file_read(&s->file, s->offsets[i] + off, len, dst);

	const bool	last = off + len == r->bytes;
	uint8		digest[PG_SHA256_DIGEST_LENGTH];

	if (b != dst)
		memcpy(dst, b, len);
	if (off == 0 && s->part_sha)
	{
		pg_cryptohash_free(s->part_sha);	/* (a row whose parts stopped short: not expected) */
		s->part_sha = NULL;
	}
	s->part_sha = blocks_sha256(s->part_sha, dst, len, last ? digest : NULL);
	if (last && memcmp(digest, s->digests + (size_t) i * PG_SHA256_DIGEST_LENGTH, PG_SHA256_DIGEST_LENGTH) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("cannot import %s: its tensor \"%s\" changed while it was imported",
						s->what, r->gguf_name)));
}

/*
 * What became of tensor t (its bytes at src): its blocks of a kept type
 * kept as the file has them where they are columns of a matrix of m
 * (tfm_gguf_kept_place) or, for storage only, the rows of a tensor no
 * matrix runs (an untied embedding: tfm_gguf_rows_place); converted to
 * float32 only otherwise
 */
static void
record(GgufSource *s, const tfm_model *m, tfm_hf_map *map, const tfm_gguf_tensor *t,
	   const uint8 *src)
{
	TfmGgufTensorRow *r = &s->rows[s->n_rows++];
	tfm_int4_kept k;
	int			heads;
	const char *target = tfm_gguf_target(map, &s->p, t);

	memset(r, 0, sizeof(*r));
	r->gguf_name = pstrdup(t->name);
	r->gguf_type = tfm_gguf_type_name(t->type);
	r->tensor = target ? pstrdup(target) : NULL;
	if (!tfm_gguf_kept_place(&k, &heads, m, map, &s->p, t) &&
		tfm_gguf_rows_place(&k, m, map, &s->p, t))
	{
		r->rows_only = true;
		heads = 0;
	}
	if (r->rows_only || tfm_gguf_kept_place(&k, &heads, m, map, &s->p, t))
	{
		r->kept = true;
		r->first_column = k.col0;
		r->columns = k.cols;
		r->inputs = k.K;
		r->rope_heads = heads;
		/*
		 * A bytea's blocks stay where they are; a file's are read again
		 * when the rows are written (gguf_read_part), a part at a time, so
		 * that an import holds one tensor's blocks at a time, not the
		 * file's: these are theirs only while the tensor is checked
		 * (check_kept, load_in_slices)
		 */
		r->blocks = src;
		r->bytes = t->bytes;
		if (!s->file.mem)
		{
			s->offsets[s->n_rows - 1] = s->f->data_start + t->offset;
			(void) blocks_sha256(NULL, src, t->bytes, s->digests + (size_t) (s->n_rows - 1) * PG_SHA256_DIGEST_LENGTH);
		}
	}
}

/* tensor i of m is stored as the file's blocks only (no float32 rows) */
static bool
blocks_only(const GgufSource *s, const tfm_model *m, int i)
{
	return s->exact[i] && m->info[i].size > 0 && s->covered[i] == m->info[i].size;
}

/*
 * Row r's kept blocks compared with the float32 values just loaded, bit
 * for bit: a tensor whose columns kept blocks cover wholly, each value
 * their exact dequantization, is stored as the blocks only, and its values'
 * memory is given back at once (so an import's memory is about the file's
 * size, not 4 bytes a value)
 */
static void
check_kept(GgufSource *s, tfm_model *m, const TfmGgufTensorRow *r)
{
	const tfm_param_info *p = r->kept ? tfm_model_find(m, r->tensor) : NULL;
	tfm_int4_kept k;
	int			i;

	if (!p)
		return;
	i = (int) (p - m->info);
	tfm_kept_entry(m, r, s->what, &k);
	if (!tfm_kept_values(m, &k, r->rows_only, false))
		s->exact[i] = false;
	s->covered[i] += (size_t) k.K * (size_t) k.cols;
	s->kept_bytes += r->bytes;
	if (k.blocks != r->blocks)
		pfree((void *) k.blocks);
	if (blocks_only(s, m, i))
	{
		tfm_model_release_values(m, i);
		s->released[i] = true;
	}
}

/*
 * Tensor t loaded a slice of rows of at most tfm.gguf_slice_bytes of
 * float32 values at a time, where it is copied as it is and its values
 * take more (a Llama 3.2 1B's tied embedding: 1.05 GB; an F16 one as
 * large), so that a cancel is served between slices.  Where row r (its
 * kept blocks) covers t's place wholly, each slice is also checked against
 * the blocks and given back at once, so that its values never take all
 * their memory (check_kept a slice at a time); a slice that differs ends
 * that (the slices given back are made again, and the tensor keeps
 * float32 rows).  False, with nothing done, where t is not such a tensor
 * (tfm_gguf_load and check_kept it).
 */
static bool
load_in_slices(GgufSource *s, tfm_model *m, tfm_hf_map *map, const tfm_gguf_tensor *t,
			   const TfmGgufTensorRow *r, const uint8 *src)
{
	const tfm_param_info *p = r->tensor ? tfm_model_find(m, r->tensor) : NULL;
	const size_t slice_bytes = (size_t) tfm_gguf_slice_bytes * 1024;
	tfm_int4_kept k;
	tfm_status	st = {0};
	float	   *place;
	const char *what;
	size_t		slice,
				row_bytes,
				K;
	bool		check,
				same = true;
	int			i,
				slices = 0;

	if (!p || p->size * sizeof(float) <= slice_bytes || t->ndim != 2 || t->ne[1] == 0)
		return false;
	i = (int) (p - m->info);
	what = psprintf("cannot import %s", s->what);
	tfm_raise(tfm_gguf_rows_begin(&place, m, map, &s->p, t, &st), &st, what);
	if (!place)
		return false;
	K = (size_t) t->ne[0];
	row_bytes = (size_t) (t->bytes / t->ne[1]);
	check = r->kept && r->rope_heads == 0 && (size_t) r->inputs * (size_t) r->columns == p->size &&
		s->covered[i] == 0 && m->params_mapped;
	if (check)
		tfm_kept_entry(m, r, s->what, &k);
	slice = Max(slice_bytes / (sizeof(float) * K), 1);
	for (size_t r0 = 0; r0 < (size_t) t->ne[1]; r0 += slice)
	{
		const size_t n = Min(slice, (size_t) t->ne[1] - r0);
		tfm_int4_kept part;

		CHECK_FOR_INTERRUPTS();
		slices++;
		tfm_raise(tfm_gguf_load_rows(place, t, src, r0, r0 + n, &st), &st, what);
		if (!check || !same)
			continue;
		part = k;
		part.col0 = k.col0 + (int) r0;
		part.cols = (int) n;
		part.blocks = k.blocks + r0 * row_bytes;
		if (tfm_kept_values(m, &part, r->rows_only, false))
		{
			tfm_model_release_range(m, p->offset + r0 * K, n * K);
			continue;
		}
		same = false;
		if (r0 > 0)
			tfm_raise(tfm_gguf_load_rows(place, t, src, 0, r0, &st), &st, what);
	}
	elog(DEBUG1, "GGUF import: tensor \"%s\" made%s in %d slices of rows%s", r->gguf_name,
		 check ? " and checked" : "", slices, check && !same ? " (not its blocks' values: kept as float32)" : "");
	pfree((char *) what);
	if (!check)
	{
		/* kept blocks that do not cover it wholly are checked against its whole values */
		check_kept(s, m, r);
		return true;
	}
	s->exact[i] = same;
	s->covered[i] += p->size;
	s->kept_bytes += r->bytes;
	if (blocks_only(s, m, i))
	{
		tfm_model_release_values(m, i);
		s->released[i] = true;
	}
	return true;
}

/*
 * Which tensors of m are stored as the file's blocks only (check_kept,
 * as each tensor was loaded); the others keep float32 rows
 */
static const bool *
gguf_blocks_only(tfm_model *m, void *arg, uint64 *float_bytes, uint64 *kept_bytes)
{
	GgufSource *s = arg;
	bool	   *only = palloc0(sizeof(bool) * Max(m->n_tensors, 1));

	*float_bytes = 0;
	*kept_bytes = s->kept_bytes;
	for (int i = 0; i < m->n_tensors; i++)
	{
		only[i] = blocks_only(s, m, i);
		if (!only[i])
			*float_bytes += (uint64) m->info[i].size * sizeof(float);
	}
	return only;
}

static void
gguf_stored(int32 model_id, int64 version, void *arg)
{
	GgufSource *s = arg;

	tfm_gguf_tensors_store(model_id, version, s->rows, s->n_rows, (uint64) tfm_gguf_row_bytes * 1024,
						   gguf_read_part, s);
}

static tfm_precision
gguf_load(tfm_model *m, const TfmHfConfig *hc, void *arg)
{
	tfm_source_tally tally = {{0}};
	GgufSource *s = arg;
	tfm_hf_map *map = tfm_hf_map_create(hc->p.arch, &hc->cfg);
	TfmGuard   *gm;
	uint8	   *buf = NULL;
	const uint8 *src;
	size_t		cap = 0;
	char		err[512];

	if (!map)
		tfm_raise_code(TFM_ENOMEM, "out of memory");
	gm = tfm_guard((void (*) (void *)) tfm_hf_map_free, map);
	s->rows = palloc0(sizeof(TfmGgufTensorRow) * Max(s->f->n_tensors, 1));
	s->offsets = palloc0(sizeof(uint64) * Max(s->f->n_tensors, 1));
	s->digests = palloc0((size_t) PG_SHA256_DIGEST_LENGTH * Max(s->f->n_tensors, 1));
	s->part_sha = NULL;
	s->n_rows = 0;
	s->loaded = palloc0(sizeof(bool) * Max(m->n_tensors, 1));
	s->covered = palloc0(sizeof(size_t) * Max(m->n_tensors, 1));
	s->exact = palloc(sizeof(bool) * Max(m->n_tensors, 1));
	s->released = palloc0(sizeof(bool) * Max(m->n_tensors, 1));
	for (int i = 0; i < m->n_tensors; i++)
		s->exact[i] = true;
	s->kept_bytes = 0;
	for (uint64 i = 0; i < s->f->n_tensors; i++)
	{
		const tfm_gguf_tensor *t = &s->f->tensors[i];
		uint64		off = s->f->data_start + t->offset;
		tfm_status	st = {0};

		CHECK_FOR_INTERRUPTS();
		{
			/* a tensor given back is whole: nothing of the file may write into it again */
			const char *target = tfm_gguf_target(map, &s->p, t);
			const tfm_param_info *p = target ? tfm_model_find(m, target) : NULL;

			if (p && s->released[p - m->info])
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("cannot import %s: tensor \"%s\" writes into tensor \"%s\", which other tensors of the file filled already",
								s->what, t->name, target)));
		}
		/* the buffer as large as the largest tensor so far, or less once those that follow are much smaller */
		if (!s->file.mem && (t->bytes > cap || (cap > ((uint64) 64 << 20) && t->bytes < cap / 4)))
		{
			if (buf)
				pfree(buf);
			buf = palloc_extended(t->bytes, MCXT_ALLOC_HUGE);
			cap = t->bytes;
		}
		src = tfm_file_read(&s->file, off, t->bytes, buf);
		record(s, m, map, t, src);
		if (!load_in_slices(s, m, map, t, &s->rows[s->n_rows - 1], src))
		{
			tfm_raise(tfm_gguf_load(m, map, &s->p, t, src, &st), &st,
					  psprintf("cannot import %s", s->what));
			check_kept(s, m, &s->rows[s->n_rows - 1]);
		}
		if (!s->file.mem)
			s->rows[s->n_rows - 1].blocks = NULL;	/* buf's: read again (gguf_read_part) */
		{
			const tfm_param_info *p = s->rows[s->n_rows - 1].tensor ?
			tfm_model_find(m, s->rows[s->n_rows - 1].tensor) : NULL;

			if (p)
				s->loaded[p - m->info] = true;
		}
		tfm_source_tally_add(&tally, tfm_gguf_type_precision(t->type), t->ndim, t->n_values);
	}
	if (tfm_hf_finish(m, map, err, sizeof(err)) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot import %s: %s", s->what, err)));
	if (buf)
		pfree(buf);
	/* the model was made blank (load_inits): tfm's initial values where the file has none */
	for (int i = 0; i < m->n_tensors; i++)
		s->loaded[i] = !s->loaded[i];
	tfm_model_init_some(m, TFM_SEED_DEFAULT, s->loaded);
	tfm_hf_map_free(map);
	tfm_guard_release(gm);
	return tfm_source_tally_result(&tally);
}

/* a JSON string of piece i, or false when it is not UTF-8 */
static bool
json_piece(StringInfo out, const tfm_gguf_vocab *v, int i)
{
	char	   *t;

	if (i < 0 || i >= v->n || !pg_verifymbstr((const char *) v->pieces[i], (int) v->lens[i], true))
		return false;
	t = pnstrdup((const char *) v->pieces[i], v->lens[i]);
	escape_json(out, t);
	pfree(t);
	return true;
}

/* tokenizer.ggml.<key>_token_id when the file has it, else -1 */
static int
optional_id(const GgufSource *s, const char *key, int n)
{
	int64		id = -1;
	tfm_status	st = {0};

	if (tfm_gguf_get_int(&id, s->f, key, false, &st) != TFM_OK || id < 0 || id >= n)
		return -1;
	return (int) id;
}

/*
 * tokenizer.chat_template (llama.cpp's converter writes tokenizer_config.json's
 * there) kept for tfm_chat as tfm_chat_template_import keeps it: the bos
 * and eos texts the pieces of the file's ids, its control tokens (then its
 * user-defined ones, up to 4,096 in all) the added tokens a prompt's text
 * is matched against, the stop ids eos and, where the file names them,
 * eot and eom.  A template tfm cannot run is left out with a warning: the
 * model imports all the same.
 */
static void
gguf_chat(const char *name, GgufSource *s, const tfm_gguf_vocab *v)
{
	const char *tpl = NULL;
	size_t		len = 0;
	tfm_status	st = {0};
	char	   *text,
			   *why;
	StringInfoData t,
				gc;
	int			n = 0,
				stop[3] = {v->eos, optional_id(s, "tokenizer.ggml.eot_token_id", v->n),
				optional_id(s, "tokenizer.ggml.eom_token_id", v->n)};

	if (tfm_gguf_get_str(&tpl, &len, s->f, "tokenizer.chat_template", false, &st) != TFM_OK ||
		tpl == NULL || len == 0)
		return;
	if (!pg_verifymbstr(tpl, (int) len, true))
	{
		ereport(WARNING,
				(errmsg("the chat template of %s is not UTF-8: imported without it", s->what)));
		return;
	}
	text = pnstrdup(tpl, len);
	if (!tfm_chat_template_parses(text, &why))
	{
		ereport(WARNING,
				(errmsg("the chat template of %s cannot run in tfm: imported without it", s->what),
				 errdetail("%s", why),
				 errhint("Import a template tfm runs with tfm_chat_template_import.")));
		return;
	}
	initStringInfo(&t);
	appendStringInfoString(&t, "{\"chat_template\": ");
	escape_json(&t, text);
	appendStringInfoString(&t, ", \"bos_token\": ");
	if (!json_piece(&t, v, v->bos))
		appendStringInfoString(&t, "null");
	appendStringInfoString(&t, ", \"eos_token\": ");
	if (!json_piece(&t, v, v->eos))
		appendStringInfoString(&t, "null");
	appendStringInfoString(&t, ", \"added_tokens_decoder\": {");
	for (int type = 3; type <= 4; type++)		/* control, then user-defined */
		for (int i = 0; i < v->n && n < 4096; i++)
		{
			StringInfoData p;

			if (v->types[i] != type)
				continue;
			initStringInfo(&p);
			if (json_piece(&p, v, i))
				appendStringInfo(&t, "%s\"%d\": {\"content\": %s}", n++ ? ", " : "", i, p.data);
			pfree(p.data);
		}
	appendStringInfoString(&t, "}}");
	initStringInfo(&gc);
	appendStringInfoString(&gc, "{\"eos_token_id\": [");
	for (int i = 0, k = 0; i < 3; i++)
		if (stop[i] >= 0)
			appendStringInfo(&gc, "%s%d", k++ ? ", " : "", stop[i]);
	appendStringInfoString(&gc, "]}");
	(void) tfm_hf_import_chat(name, DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(t.data))),
							  DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(gc.data))),
							  NULL, NULL, false);
}

static void
gguf_tokenizer(const char *name, const TfmHfConfig *hc, void *arg, int32 *sp)
{
	GgufSource *s = arg;
	tfm_gguf_vocab *v;
	tfm_status	st = {0};
	TfmGuard   *g;

	tfm_raise(tfm_gguf_vocab_read(&v, s->f, hc->cfg.vocab, &st), &st,
			  psprintf("cannot import the tokenizer of %s", s->what));
	g = tfm_guard(free_vocab, v);
	if (v->n > hc->cfg.vocab)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the tokenizer of %s has %d tokens, more than the model's %d",
						s->what, v->n, hc->cfg.vocab)));
	if (v->kind == TFM_GGUF_TOK_SPM)
	{
		(void) tfm_tokenizer_import_spiece(name, v->pieces, v->lens, v->n, v->merge_lr, v->n_merges,
										   v->unk, v->bos, v->eos,
										   v->add_bos ? TFM_TOK_INFO_TEXT_BOS : 0, NULL);
		for (int k = 0; k < TFM_TOK_N_SPECIALS; k++)
			sp[k] = INT_MAX;	/* as a SentencePiece tokenizer.json's: bos/eos are the config's */
	}
	else
	{
		/* as a byte-level tokenizer.json's: its bos when it puts one first, its padding */
		int32_t		specials[TFM_TOK_N_SPECIALS] = {-1, -1, -1, -1, -1, -1};
		/* a pre-tokenizer that is a Split rule (tokenizer.ggml.pre "qwen2") */
		TfmSplitRule rule = {v->split, TFM_TOK_SPLIT_ISOLATED, false};

		specials[TFM_TOK_PAD] = v->pad;
		specials[TFM_TOK_BOS] = v->add_bos ? v->bos : -1;
		(void) tfm_tokenizer_import_hf_bpe(name, v->pieces, v->lens, v->literal, v->n, v->merge_lr,
										   v->n_merges, specials,
										   v->flags | (v->add_bos ? TFM_TOK_INFO_TEXT_BOS : 0),
										   v->split ? &rule : NULL, v->split ? 1 : 0, NULL, sp);
	}
	gguf_chat(name, s, v);
	tfm_gguf_vocab_free(v);
	tfm_guard_release(g);
}

/* tokenizer.ggml.bos_token_id / eos_token_id: an id of the model, or -1 */
static int
special_id(const GgufSource *s, const char *key, int vocab)
{
	int64		v = -1;
	tfm_status	st = {0};

	tfm_raise(tfm_gguf_get_int(&v, s->f, key, false, &st), &st,
			  psprintf("invalid %s", s->what));
	if (v >= vocab || v < -1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid %s: %s %lld is not an id of its %d tokens", s->what,
						key, (long long) v, vocab)));
	return (int) v;
}

/* a Llama 3's rope_freqs.weight (its shape checked by tfm_gguf_params) read
 * as its rope scaling, before the config is made */
static void
rope_freqs(GgufSource *s)
{
	const tfm_gguf_tensor *t = NULL;
	float		ff[TFM_ROPE_MAX_HALF];
	tfm_status	st = {0};

	for (uint64 i = 0; i < s->f->n_tensors && !t; i++)
		if (strcmp(s->f->tensors[i].name, "rope_freqs.weight") == 0)
			t = &s->f->tensors[i];

	if (!t || t->bytes != t->ne[0] * sizeof(float) || t->ne[0] > TFM_ROPE_MAX_HALF)
		elog(ERROR, "rope_freqs.weight is not as checked. Please report a bug.");
	memmove(ff, tfm_file_read(&s->file, s->f->data_start + t->offset, t->bytes, (uint8 *) ff),
		   t->bytes);
	tfm_raise(tfm_gguf_rope_check(&s->p, ff, (int) t->ne[0], &st), &st,
			  psprintf("cannot import %s", s->what));
}

/* a tensor's F32 values (n of them, shape checked by tfm_gguf_params) into out */
static void
read_f32(GgufSource *s, const char *name, float *out, int n)
{
	const tfm_gguf_tensor *t = NULL;

	for (uint64 i = 0; i < s->f->n_tensors && !t; i++)
		if (strcmp(s->f->tensors[i].name, name) == 0)
			t = &s->f->tensors[i];
	if (!t || t->ne[0] != (uint64) n || t->bytes != (uint64) n * sizeof(float))
		elog(ERROR, "%s is not as checked. Please report a bug.", name);
	memmove(out, tfm_file_read(&s->file, s->f->data_start + t->offset, t->bytes, (uint8 *) out),
			t->bytes);
}

/* a phi3 file's longrope factors (rope_factors_long/short.weight) into its params */
static void
rope_factors(GgufSource *s)
{
	float		lf[TFM_ROPE_FACTORS_MAX],
				sf[TFM_ROPE_FACTORS_MAX];
	int			n = s->p.rope_n_long;
	tfm_status	st = {0};

	if (n < 1 || n > TFM_ROPE_FACTORS_MAX)
		elog(ERROR, "the rope factors are not as checked. Please report a bug.");
	read_f32(s, "rope_factors_long.weight", lf, n);
	read_f32(s, "rope_factors_short.weight", sf, n);
	tfm_raise(tfm_gguf_longrope_set(&s->p, lf, sf, n, &st), &st,
			  psprintf("cannot import %s", s->what));
}

static int64
import_source(const char *name, GgufSource *s, bool tokenizer, tfm_task *task)
{
	TfmHfConfig hc;
	TfmImportSteps steps;
	tfm_status	st = {0};
	int64		capped;
	const char *bad;

	parse_header(s);
	tfm_raise(tfm_gguf_params(&s->p, &capped, s->f, &st), &st,
			  psprintf("cannot import %s", s->what));
	if (capped)
		ereport(NOTICE,
				(errmsg("the model is limited to %d positions (tfm's limit), not its context_length %lld",
						TFM_LEN_MAX, (long long) capped)));
	if (s->p.rope_type == TFM_ROPE_LLAMA3)
		rope_freqs(s);
	if (s->p.rope_type == TFM_ROPE_LONGROPE)
		rope_factors(s);
	memset(&hc, 0, sizeof(hc));
	hc.p = s->p;
	if ((bad = tfm_hf_config(&hc.cfg, &hc.p)) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot import %s: %s", s->what, bad),
				 errdetail("The names are config.json's; the file's metadata gave them.")));
	/* every tensor's name and shape checked before the model is built */
	{
		tfm_hf_map *map = tfm_hf_map_create(hc.p.arch, &hc.cfg);
		int			rc;

		if (!map)
			tfm_raise_code(TFM_ENOMEM, "out of memory");
		rc = tfm_gguf_check(map, &hc.p, s->f, &st);
		tfm_hf_map_free(map);
		tfm_raise(rc, &st, psprintf("cannot import %s", s->what));
	}
	hc.bos_id = special_id(s, "tokenizer.ggml.bos_token_id", hc.cfg.vocab);
	hc.eos_id = special_id(s, "tokenizer.ggml.eos_token_id", hc.cfg.vocab);
	hc.model_type = hc.p.arch == TFM_HF_GPT2 ? "gpt2 (gguf)" : hc.p.arch == TFM_HF_PHI3 ? "phi3 (gguf)" :
		hc.p.gemma ? "gemma3 (gguf)" : hc.p.qk_norm ? "qwen3 (gguf)" : hc.p.qkv_bias ? "qwen2 (gguf)" :
		"llama (gguf)";
	memset(&steps, 0, sizeof(steps));
	steps.what = s->what;
	steps.bytes = s->file.size;
	steps.check_bytes = false;	/* 4-bit blocks hold fewer than 2 bytes a value */
	/* the matrices of the types kept (an upper bound: a few may not be placed) */
	for (uint64 i = 0; i < s->f->n_tensors; i++)
		if (tfm_gguf_kept(s->f->tensors[i].type) && s->f->tensors[i].ndim == 2)
		{
			steps.kept_bytes += s->f->tensors[i].bytes;
			steps.kept_values += s->f->tensors[i].n_values;
		}
	steps.load = gguf_load;
	steps.load_inits = true;
	steps.tokenizer = tokenizer ? gguf_tokenizer : NULL;
	steps.blocks_only = gguf_blocks_only;
	steps.stored = gguf_stored;
	steps.arg = s;
	return tfm_hf_import_built(name, &hc, &steps, task);
}

int64
tfm_gguf_import_bytes(const char *name, const uint8 *data, uint64 size, bool tokenizer,
					  tfm_task *task)
{
	GgufSource	s;
	int64		n;

	memset(&s, 0, sizeof(s));
	s.what = "GGUF file";
	s.file.what = "GGUF file";
	s.file.mem = data;
	s.file.size = size;
	s.file.fd = -1;
	n = import_source(name, &s, tokenizer, task);
	tfm_gguf_free(s.f);
	tfm_guard_release(s.f_guard);
	return n;
}

int64
tfm_gguf_import_file(const char *name, const char *path, bool tokenizer, tfm_task *task)
{
	GgufSource	s;
	int64		n;

	memset(&s, 0, sizeof(s));
	s.what = psprintf("GGUF file \"%s\"", path);
	s.file.what = path;
	s.file.fd = tfm_open_server_file(path, false, &s.file.size);
	n = import_source(name, &s, tokenizer, task);
	CloseTransientFile(s.file.fd);
	tfm_gguf_free(s.f);
	tfm_guard_release(s.f_guard);
	return n;
}
