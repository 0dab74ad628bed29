/*
 * import.c — tfm_import and tfm_import_files: a published Hugging Face
 * checkpoint (config.json, model.safetensors, tokenizer.json) becomes a tfm
 * model owned by the caller, with its tokenizer stored under the model's
 * name.  tfm never fetches anything: the files are the caller's.
 *
 * The weights are read through a small source abstraction so that a bytea
 * in memory and a server file are walked the same way: the safetensors
 * header first (parsed strictly by the core parser), then each tensor's
 * byte range, one at a time, checked against the architecture's table
 * (tfm/hf_import.h) and converted to float32 into the model.  A file is
 * never held in memory whole: only its header and the largest tensor.
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "import.h"
#include "tfm/safetensors.h"
#include "tfm/tokenizer.h"
#include "tfm_pg.h"
#include "tfm_rows.h"

#define TFM_MAX_JSON_FILE ((off_t) 512 * 1024 * 1024)	/* config / tokenizer.json */

/* where the safetensors bytes come from */
typedef struct WeightSource
{
	const char *what;			/* for messages: "weights" or a file path */
	uint64		size;
	const uint8 *mem;			/* a bytea's data, or NULL */
	int			fd;				/* a file, or -1 */
} WeightSource;

/* read len bytes at off into buf (or point *out into memory) */
static const uint8 *
source_read(WeightSource *src, uint64 off, size_t len, uint8 *buf)
{
	size_t		done = 0;

	if (off > src->size || len > src->size - off)
		elog(ERROR, "read past the end of %s. Please report a bug.", src->what);
	if (src->mem)
		return src->mem + off;
	while (done < len)
	{
		ssize_t		n;

		CHECK_FOR_INTERRUPTS();
		n = pread(src->fd, buf + done, Min(len - done, (size_t) 64 * 1024 * 1024), (off_t) (off + done));
		if (n < 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not read file \"%s\": %m", src->what)));
		if (n == 0)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("file \"%s\" ended early", src->what)));
		done += n;
	}
	return buf;
}

static void
st_check(int status, const tfm_st_err *err, const char *what)
{
	if (status == TFM_ST_OK)
		return;
	ereport(ERROR,
			(errcode(status == TFM_ST_ENOMEM ? ERRCODE_OUT_OF_MEMORY :
					 status == TFM_ST_EDTYPE ? ERRCODE_FEATURE_NOT_SUPPORTED :
					 ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid safetensors %s: %s", what,
					err->msg[0] ? err->msg : tfm_st_status_name(status))));
}

static void
free_st(void *p)
{
	tfm_st_free(p);
}

static void
free_map(void *p)
{
	tfm_hf_map_free(p);
}

/* every tensor of the source into m */
static void
load_weights(tfm_model *m, const TfmHfConfig *hc, WeightSource *src)
{
	uint8		prefix[TFM_ST_PREFIX];
	uint64		hlen;
	const uint8 *hdr;
	uint8	   *hbuf = NULL,
			   *tbuf = NULL;
	size_t		tcap = 0;
	tfm_st_err	err;
	tfm_st_file *f;
	TfmGuard   *gf,
			   *gm;
	tfm_hf_map *map;
	char		msg[512];

	if (src->size < TFM_ST_PREFIX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid safetensors %s: %llu bytes is too short", src->what,
						(unsigned long long) src->size)));
	st_check(tfm_st_header_length(&hlen, source_read(src, 0, TFM_ST_PREFIX, prefix), TFM_ST_PREFIX,
								  src->size, &err), &err, src->what);
	if (!src->mem)
		hbuf = palloc_extended(hlen, MCXT_ALLOC_HUGE);
	hdr = source_read(src, TFM_ST_PREFIX, hlen, hbuf);
	st_check(tfm_st_parse_header(&f, hdr, hlen, src->size, &err), &err, src->what);
	gf = tfm_guard(free_st, f);
	if (hbuf)
		pfree(hbuf);
	map = tfm_hf_map_create(hc->p.arch, &m->cfg);
	if (!map)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	gm = tfm_guard(free_map, map);

	for (size_t i = 0; i < f->n_tensors; i++)
	{
		const tfm_st_tensor *t = &f->tensors[i];
		tfm_hf_entry *e = tfm_hf_match(map, t->name, t->name_len);
		size_t		len = (size_t) (t->end - t->begin);
		const uint8 *bytes;

		CHECK_FOR_INTERRUPTS();
		if (!e)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unexpected tensor \"%s\" in %s", t->name, src->what),
					 errdetail("A %s checkpoint with this config.json has no such tensor.",
							   hc->model_type)));
		if (!src->mem && len > tcap && e->use != TFM_HF_BUFFER)
		{
			if (tbuf)
				pfree(tbuf);
			tbuf = palloc_extended(Max(len, 1), MCXT_ALLOC_HUGE);
			tcap = len;
		}
		/* buffers (the old causal masks) are checked by shape only: not read */
		bytes = e->use == TFM_HF_BUFFER ? NULL :
			source_read(src, f->data_start + t->begin, len, tbuf);
		if (tfm_hf_load_tensor(m, map, e, t, bytes, msg, sizeof(msg)) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("cannot import %s: %s", src->what, msg)));
	}
	if (tfm_hf_finish(m, map, msg, sizeof(msg)) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot import %s: %s", src->what, msg)));
	if (tbuf)
		pfree(tbuf);
	tfm_hf_map_free(map);
	tfm_guard_release(gm);
	tfm_st_free(f);
	tfm_guard_release(gf);
}

/* the tfm.models row, the weights and the returned row */
/* the BERT family imports as classifiers; GPT-2 and Llama as language models */
static bool
is_encoder(tfm_hf_arch arch)
{
	return arch == TFM_HF_BERT || arch == TFM_HF_ROBERTA || arch == TFM_HF_DISTILBERT;
}

static Datum
import_model(FunctionCallInfo fcinfo, const char *name, Jsonb *config, WeightSource *src,
			 Jsonb *tokenizer, const char *task)
{
	TfmHfConfig hc;
	tfm_config	c;
	const char *bad;
	tfm_model  *m;
	TfmModelRow row;
	TfmAsOwner	as;
	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};
	char	   *json;

	tfm_check_writable("import", name);
	if (name[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a model name must not be empty")));
	if (tfm_catalog_lookup(name, &row, true))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("model \"%s\" already exists", name),
				 errhint("Drop it first with tfm_drop_model('%s').", name)));
	tfm_hf_parse_config(config, &hc);
	{
		const char *want = is_encoder(hc.p.arch) ? "classify" : "lm";

		if (task && strcmp(task, want) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a %s checkpoint imports as task \"%s\", not \"%s\"",
							hc.model_type, want, task),
					 !is_encoder(hc.p.arch) ? 0 :
					 errdetail("tfm_embed works on every classifier: it returns the pooled vector.")));
	}
	bad = tfm_hf_config(&c, &hc.p);
	if (bad)
		elog(ERROR, "config check disagrees: %s", bad);

	/* weights first: a bad file stores nothing */
	tfm_backend_ready();
	m = tfm_model_create(&c);
	if (!m)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory creating model \"%s\"", name)));
	tfm_guard_model(m);
	/* a head the checkpoint lacks (a base encoder's cls.*) starts from tfm's init */
	tfm_model_init(m, 42);
	load_weights(m, &hc, src);

	if (tokenizer)
	{
		int32		sp[TFM_TOK_N_SPECIALS];

		tfm_hf_import_tokenizer(name, tokenizer, c.vocab, sp);

		/*
		 * An encoder reads text as the post-processor's [CLS] text [SEP]
		 * (RoBERTa's <s> text </s>) and an empty text as [UNK]: those must be
		 * the checkpoint's own ids, never ids past its vocabulary.
		 */
		if (is_encoder(hc.p.arch) &&
			(sp[TFM_TOK_CLS] >= c.vocab || sp[TFM_TOK_SEP] >= c.vocab || sp[TFM_TOK_UNK] >= c.vocab))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("the tokenizer.json of a %s checkpoint must name its [CLS] and [SEP] "
							"(or <s> and </s>) and its unknown token",
							hc.model_type),
					 errdetail("tfm reads text the way the file's post-processor "
							   "(BertProcessing, RobertaProcessing or a \"[CLS] $A [SEP]\" template) "
							   "and model.unk_token (or a piece \"<unk>\") say; "
							   "import without the tokenizer and pass token ids.")));
	}

	/* the config as tfm stores it, plus the checkpoint's bos/eos and origin */
	json = tfm_config_json(&c);
	json[strlen(json) - 1] = '\0';
	json = psprintf("%s, \"bos_id\": %d, \"eos_id\": %d, \"imported_from\": \"%s\"}",
					json, hc.bos_id, hc.eos_id, hc.model_type);
	{
		Oid			types[5] = {TEXTOID, TEXTOID, TEXTOID, INT8OID, OIDOID};
		Datum		labels = (Datum) 0;
		Datum		args[5];
		char		argnulls[6] = "     ";
		bool		isnull;

		args[0] = CStringGetTextDatum(name);
		args[1] = CStringGetTextDatum(tfm_task_name(c.task));
		args[2] = tokenizer ? CStringGetTextDatum(name) : (Datum) 0;
		if (!tokenizer)
			argnulls[2] = 'n';
		args[3] = Int64GetDatum((int64) m->n_params);
		args[4] = ObjectIdGetDatum(GetUserId());	/* the caller owns it */
		tfm_spi_connect_owner(&as);
		if (SPI_execute_with_args("SELECT 1 FROM tfm.models WHERE name = $1", 1, types, args,
								  NULL, true, 1) == SPI_OK_SELECT && SPI_processed > 0)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("model \"%s\" already exists", name),
					 errhint("Drop it first with tfm_drop_model('%s').", name)));
		args[1] = CStringGetTextDatum(tfm_task_name(c.task));
		if (hc.n_labels > 0)
		{
			Datum	   *el = palloc(sizeof(Datum) * hc.n_labels);

			for (int i = 0; i < hc.n_labels; i++)
				el[i] = CStringGetTextDatum(hc.labels[i]);
			labels = PointerGetDatum(construct_array(el, hc.n_labels, TEXTOID, -1, false, TYPALIGN_INT));
		}
		{
			Oid			t2[7] = {TEXTOID, TEXTOID, TEXTOID, INT8OID, OIDOID, TEXTOID, TEXTARRAYOID};
			Datum		a2[7] = {args[0], args[1], args[2], args[3], args[4], CStringGetTextDatum(json), labels};
			char		n2[8] = "       ";

			n2[2] = argnulls[2];
			if (hc.n_labels == 0)
				n2[6] = 'n';
			if (SPI_execute_with_args("INSERT INTO tfm.models (name, task, tokenizer, config, parameters, "
									  "format_version, owner, labels) VALUES ($1, $2, $3, $6::jsonb, $4, "
									  CppAsString2(TFM_FORMAT_VERSION) ", $5::regrole, $7) RETURNING id, version",
									  7, t2, a2, n2, false, 1) != SPI_OK_INSERT_RETURNING)
				elog(ERROR, "cannot insert into tfm.models");
		}
		memset(&row, 0, sizeof(row));
		row.bos_id = hc.bos_id;
		row.eos_id = hc.eos_id;
		row.id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		row.version = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
		tfm_spi_finish_owner(&as);
		strlcpy(row.name, name, sizeof(row.name));
		row.cfg = c;
		row.n_labels = hc.n_labels;
		row.labels = hc.labels;
	}
	tfm_catalog_save(&row, m, 0);

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = CStringGetTextDatum(name);
	values[1] = CStringGetTextDatum(tfm_task_name(c.task));
	values[2] = Int64GetDatum((int64) m->n_params);
	return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls));
}

PG_FUNCTION_INFO_V1(tfm_import);
Datum
tfm_import(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "name");
	bytea	   *w;
	WeightSource src;

	TFM_ARG_NOT_NULL(1, "config");
	TFM_ARG_NOT_NULL(2, "weights");
	w = PG_GETARG_BYTEA_PP(2);
	src.what = "weights";
	src.mem = (const uint8 *) VARDATA_ANY(w);
	src.size = VARSIZE_ANY_EXHDR(w);
	src.fd = -1;
	PG_RETURN_DATUM(import_model(fcinfo, name, PG_GETARG_JSONB_P(1), &src,
								 PG_ARGISNULL(3) ? NULL : PG_GETARG_JSONB_P(3),
								 PG_ARGISNULL(4) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(4))));
}

/* a whole JSON file of the directory as jsonb, or NULL if absent and optional */
static Jsonb *
read_json_file(const char *dir, const char *file, bool optional)
{
	char	   *path = psprintf("%s/%s", dir, file);
	int			fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	struct stat st;
	char	   *buf;
	WeightSource src;

	if (fd < 0)
	{
		if (optional && errno == ENOENT)
			return NULL;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", path)));
	}
	if (fstat(fd, &st) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not stat file \"%s\": %m", path)));
	if (st.st_size > TFM_MAX_JSON_FILE)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("file \"%s\" is larger than 512 MB", path)));
	buf = palloc_extended(st.st_size + 1, MCXT_ALLOC_HUGE);
	src.what = path;
	src.size = st.st_size;
	src.mem = NULL;
	src.fd = fd;
	source_read(&src, 0, st.st_size, (uint8 *) buf);
	buf[st.st_size] = '\0';
	CloseTransientFile(fd);
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(buf)));
}

PG_FUNCTION_INFO_V1(tfm_import_files);
Datum
tfm_import_files(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "name");
	char	   *dir = tfm_text_arg(fcinfo, 1, "directory");
	Jsonb	   *config,
			   *tokenizer;
	WeightSource src;
	struct stat st;
	char	   *path;
	Datum		result;

	if (!superuser() && !has_privs_of_role(GetUserId(), ROLE_PG_READ_SERVER_FILES))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to read server files"),
				 errdetail("Only superusers and roles with privileges of pg_read_server_files "
						   "may import from a server directory; others can pass the files' "
						   "contents to tfm_import.")));
	if (!is_absolute_path(dir))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("directory must be an absolute path, not \"%s\"", dir)));
	config = read_json_file(dir, "config.json", false);
	tokenizer = read_json_file(dir, "tokenizer.json", true);
	path = psprintf("%s/model.safetensors", dir);
	src.what = path;
	src.mem = NULL;
	src.fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	if (src.fd < 0)
	{
		if (errno == ENOENT &&
			stat(psprintf("%s/model.safetensors.index.json", dir), &st) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("sharded checkpoints (model.safetensors.index.json) are not supported yet")));
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", path)));
	}
	if (fstat(src.fd, &st) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not stat file \"%s\": %m", path)));
	src.size = st.st_size;
	result = import_model(fcinfo, name, config, &src, tokenizer,
						  PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2)));
	CloseTransientFile(src.fd);
	return result;
}

PG_FUNCTION_INFO_V1(tfm_tokenizer_import_json);
Datum
tfm_tokenizer_import_json(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "name");
	int32		sp[TFM_TOK_N_SPECIALS];

	TFM_ARG_NOT_NULL(1, "tokenizer");
	tfm_check_writable("import", name);
	tfm_hf_import_tokenizer(name, PG_GETARG_JSONB_P(1), TFM_MAX_VOCAB, sp);
	PG_RETURN_TEXT_P(cstring_to_text(psprintf("tokenizer \"%s\" imported", name)));
}
