/*
 * weights.c — where tfm_import's safetensors bytes come from and how
 * they are walked: a bytea in memory, a server file (model.safetensors), or
 * the shards of a sharded checkpoint (model.safetensors.index.json and the
 * files it names), all as one TfmWeightSource of one or more files.
 *
 * Each file is opened, its header parsed strictly by the core parser
 * (tfm/safetensors.h), then its tensors read one at a time, checked against
 * the architecture's table (tfm/hf_map.h) and converted to float32 into
 * the model; the file is closed before the next one opens.  Nothing holds
 * a file whole: only one header and the largest tensor are in memory.
 *
 * A sharded checkpoint is checked twice against its index (tfm/safetensors_index.h):
 * first every shard's header alone, before any tensor is read, so that a
 * wrong index fails fast; then again while the tensors load, so that what
 * was loaded is what was checked.
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "miscadmin.h"
#include "storage/fd.h"

#include "import/hf_files.h"
#include "tfm/hf_import.h"
#include "tfm/precision.h"
#include "tfm/safetensors_index.h"
#include "storage/storage.h"

#define INDEX_FILE "model.safetensors.index.json"

/*
 * A regular file of the server opened for reading, or -1 if it is absent
 * (ENOENT) and optional.  Symbolic links are followed (a Hugging Face cache
 * snapshot is made of them); O_NONBLOCK keeps a FIFO from blocking the
 * open, and anything but a regular file is refused.
 */
int
tfm_open_server_file(const char *path, bool optional, uint64 *size)
{
	int			fd = OpenTransientFile(path, O_RDONLY | O_NONBLOCK | PG_BINARY);
	struct stat st;

	if (fd < 0)
	{
		if (optional && errno == ENOENT)
			return -1;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", path)));
	}
	if (fstat(fd, &st) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not stat file \"%s\": %m", path)));
	if (!S_ISREG(st.st_mode))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a regular file", path)));
	*size = (uint64) st.st_size;
	return fd;
}

/* read len bytes at off into buf (or point into memory) */
const uint8 *
tfm_file_read(TfmWeightFile *f, uint64 off, size_t len, uint8 *buf)
{
	size_t		done = 0;

	if (off > f->size || len > f->size - off)
		elog(ERROR, "read past the end of %s. Please report a bug.", f->what);
	if (f->mem)
		return f->mem + off;
	while (done < len)
	{
		ssize_t		n;

		CHECK_FOR_INTERRUPTS();
		n = pread(f->fd, buf + done, Min(len - done, (size_t) 64 * 1024 * 1024), (off_t) (off + done));
		if (n < 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not read file \"%s\": %m", f->what)));
		if (n == 0)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("file \"%s\" ended early", f->what)));
		done += n;
	}
	return buf;
}

/* a whole server file, NUL-terminated; NULL if absent and optional */
char *
tfm_read_server_file(const char *path, bool optional, uint64 limit, size_t *len)
{
	TfmWeightFile f;
	char	   *buf;

	memset(&f, 0, sizeof(f));
	f.what = path;
	f.fd = tfm_open_server_file(path, optional, &f.size);
	if (f.fd < 0)
		return NULL;
	if (f.size > limit)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("file \"%s\" is larger than %llu bytes", path, (unsigned long long) limit)));
	buf = palloc_extended(f.size + 1, MCXT_ALLOC_HUGE);
	tfm_file_read(&f, 0, f.size, (uint8 *) buf);
	buf[f.size] = '\0';
	CloseTransientFile(f.fd);
	*len = f.size;
	return buf;
}

static void
free_st(void *p)
{
	tfm_st_free(p);
}

static void
free_index(void *p)
{
	tfm_st_index_free(p);
}

static void
free_map(void *p)
{
	tfm_hf_map_free(p);
}

/*
 * File i of src open, its header parsed into f->st (guarded) and, for a
 * shard, checked against the index (marking found, adding to *bytes).
 */
static void
file_begin(TfmWeightSource *src, int i, uint8 *found, uint64 *bytes)
{
	TfmWeightFile *f = &src->files[i];
	uint8		prefix[TFM_ST_PREFIX];
	uint64		hlen;
	const uint8 *hdr;
	uint8	   *hbuf = NULL;
	tfm_status	err = {0};

	if (!f->mem)
	{
		uint64		size;

		f->fd = tfm_open_server_file(f->what, false, &size);
		if (f->seen && size != f->size)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("file \"%s\" changed during the import", f->what)));
		f->size = size;
		f->seen = true;
	}
	if (f->size < TFM_ST_PREFIX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid safetensors %s: %llu bytes is too short", f->what,
						(unsigned long long) f->size)));
	tfm_raise(tfm_st_header_length(&hlen, tfm_file_read(f, 0, TFM_ST_PREFIX, prefix), TFM_ST_PREFIX,
								   f->size, &err),
			  &err, psprintf("invalid safetensors %s", f->what));
	if (!f->mem)
		hbuf = palloc_extended(hlen, MCXT_ALLOC_HUGE);
	hdr = tfm_file_read(f, TFM_ST_PREFIX, hlen, hbuf);
	tfm_raise(tfm_st_parse_header(&f->st, hdr, hlen, f->size, &err),
			  &err, psprintf("invalid safetensors %s", f->what));
	f->st_guard = tfm_guard(free_st, f->st);
	if (hbuf)
		pfree(hbuf);
	if (src->index)
		tfm_raise(tfm_st_index_check_shard(src->index, (size_t) i, f->st, found, bytes, &err),
				  &err, psprintf("invalid sharded checkpoint \"%s\"", src->what));
}

/* file i closed, its header freed */
static void
file_end(TfmWeightSource *src, int i)
{
	TfmWeightFile *f = &src->files[i];

	if (f->fd >= 0)
		CloseTransientFile(f->fd);
	f->fd = -1;
	tfm_st_free(f->st);
	tfm_guard_release(f->st_guard);
	f->st = NULL;
}

void
tfm_weights_from_bytea(TfmWeightSource *src, const uint8 *data, uint64 size)
{
	memset(src, 0, sizeof(*src));
	src->what = "weights";
	src->n_files = 1;
	src->files = palloc0(sizeof(TfmWeightFile));
	src->files[0].what = "weights";
	src->files[0].mem = data;
	src->files[0].size = size;
	src->files[0].fd = -1;
}

/*
 * The weights of a server directory: model.safetensors when it exists (as
 * Hugging Face's from_pretrained, which reads it before any index), else
 * model.safetensors.index.json and its shards, every shard's header checked
 * against the index before any tensor is read.
 */
void
tfm_weights_from_dir(TfmWeightSource *src, const char *dir)
{
	char	   *path = psprintf("%s/model.safetensors", dir);
	uint64		size;
	int			fd = tfm_open_server_file(path, true, &size);
	char	   *json;
	size_t		len;
	tfm_status	err = {0};
	tfm_st_index *ix;
	uint8	   *found;
	uint64		bytes = 0;

	memset(src, 0, sizeof(*src));
	if (fd >= 0)
	{
		CloseTransientFile(fd);
		src->what = path;
		src->n_files = 1;
		src->files = palloc0(sizeof(TfmWeightFile));
		src->files[0].what = path;
		src->files[0].fd = -1;
		src->files[0].size = size;	/* checked again when opened */
		return;
	}
	src->what = psprintf("%s/%s", dir, INDEX_FILE);
	json = tfm_read_server_file(src->what, true, TFM_ST_MAX_INDEX, &len);
	if (!json)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FILE),
				 errmsg("directory \"%s\" holds neither model.safetensors nor %s", dir, INDEX_FILE)));
	tfm_raise(tfm_st_parse_index(&ix, (const uint8 *) json, len, &err),
			  &err, psprintf("invalid sharded checkpoint \"%s\"", src->what));
	pfree(json);
	src->index = ix;
	src->index_guard = tfm_guard(free_index, ix);
	src->n_files = (int) ix->n_shards;
	src->files = palloc0(sizeof(TfmWeightFile) * ix->n_shards);
	for (size_t i = 0; i < ix->n_shards; i++)
	{
		src->files[i].what = psprintf("%s/%s", dir, ix->shards[i]);
		src->files[i].fd = -1;
	}

	/* the first check, headers only */
	found = palloc0(Max(ix->n_tensors, 1));
	for (int i = 0; i < src->n_files; i++)
	{
		CHECK_FOR_INTERRUPTS();
		file_begin(src, i, found, &bytes);
		file_end(src, i);
	}
	tfm_raise(tfm_st_index_check_done(ix, found, bytes, &err),
			  &err, psprintf("invalid sharded checkpoint \"%s\"", src->what));
	pfree(found);
}

uint64
tfm_weights_bytes(const TfmWeightSource *src)
{
	uint64		n = 0;

	for (int i = 0; i < src->n_files; i++)
		n += src->files[i].size;
	return n;
}

void
tfm_weights_close(TfmWeightSource *src)
{
	for (int i = 0; i < src->n_files; i++)
		if (src->files[i].fd >= 0 || src->files[i].st)
			file_end(src, i);
	if (src->index)
	{
		tfm_st_index_free(src->index);
		tfm_guard_release(src->index_guard);
		src->index = NULL;
	}
}

/* every tensor of every file of src into m; the checkpoint's own precision */
tfm_precision
tfm_weights_load(tfm_model *m, const TfmHfConfig *hc, TfmWeightSource *src)
{
	tfm_source_tally tally = {{0}};
	uint8	   *tbuf = NULL,
			   *found = NULL;
	size_t		tcap = 0;
	uint64		bytes = 0;
	TfmGuard   *gm;
	tfm_hf_map *map;
	char		msg[512];

	map = tfm_hf_map_create(hc->p.arch, &m->cfg);
	if (!map)
		tfm_raise_code(TFM_ENOMEM, "out of memory");
	gm = tfm_guard(free_map, map);
	if (src->index)
		found = palloc0(Max(src->index->n_tensors, 1));

	for (int i = 0; i < src->n_files; i++)
	{
		TfmWeightFile *wf = &src->files[i];
		const tfm_st_file *f;

		file_begin(src, i, found, &bytes);
		f = wf->st;
		for (size_t k = 0; k < f->n_tensors; k++)
		{
			const tfm_st_tensor *t = &f->tensors[k];
			tfm_hf_entry *e = tfm_hf_match(map, t->name, t->name_len);
			size_t		len = (size_t) (t->end - t->begin);
			const uint8 *vals;

			CHECK_FOR_INTERRUPTS();
			if (!e)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("unexpected tensor \"%s\" in %s", t->name, wf->what),
						 errdetail("A %s checkpoint with this config.json has no such tensor.",
								   hc->model_type)));
			if (!wf->mem && len > tcap && e->use != TFM_HF_BUFFER)
			{
				if (tbuf)
					pfree(tbuf);
				tbuf = palloc_extended(Max(len, 1), MCXT_ALLOC_HUGE);
				tcap = len;
			}
			/* buffers (the old causal masks) are checked by shape only: not read */
			vals = e->use == TFM_HF_BUFFER ? NULL :
				tfm_file_read(wf, f->data_start + t->begin, len, tbuf);
			if (e->use != TFM_HF_BUFFER)
				tfm_source_tally_add(&tally, t->dtype == TFM_ST_BF16 ? TFM_PREC_BF16 : TFM_PREC_FP32,
									 t->ndim, t->n_values);
			if (tfm_hf_load_tensor(m, map, e, t, vals, msg, sizeof(msg)) != 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("cannot import %s: %s", wf->what, msg)));
		}
		file_end(src, i);
	}
	if (src->index)
	{
		tfm_status	err = {0};

		tfm_raise(tfm_st_index_check_done(src->index, found, bytes, &err),
				  &err, psprintf("invalid sharded checkpoint \"%s\"", src->what));
		pfree(found);
	}
	if (tfm_hf_finish(m, map, msg, sizeof(msg)) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot import %s: %s", src->what, msg)));
	if (tbuf)
		pfree(tbuf);
	tfm_hf_map_free(map);
	tfm_guard_release(gm);
	return tfm_source_tally_result(&tally);
}
