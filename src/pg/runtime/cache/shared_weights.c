/*
 * shared_weights.c — one copy of a model's weights for every backend.
 *
 * Loading a model for inference in each backend would cost each one a
 * private copy of its weights (GPT-2 small: 500 MB per connection).
 * Instead the first backend that loads a (model, version) writes the
 * parameter block to a file and every backend maps that file read-only
 * (MAP_SHARED): the pages are the kernel's page cache, held once however
 * many backends use the model.  No shared_preload_libraries is needed.
 *
 * The file lives in the default tablespace's temporary directory,
 * base/pgsql_tmp, named pgsql_tmp_tfm_<database>_<catalog>_<model id>_<version>
 * (<catalog>: the OID of table tfm.models, new with every CREATE EXTENSION,
 * so a reinstalled extension whose ids start again never meets old files):
 * PostgreSQL removes such files when it starts, base backups skip them, and
 * each server (primary or standby) keeps its own.  A version number names
 * one set of weights forever (tfm.version_seq is never reused), so a file
 * never needs to be checked against the table; it is written under a
 * temporary name and renamed into place, so readers see whole files only.
 * Sessions that load the same version at the same moment wait for the
 * one that writes it.  Older versions' files are removed when a newer one is written and when the
 * model is dropped.  tfm.share_weights = off keeps private copies.
 *
 * The bf16 or int8 copies of the matrices that tfm.precision packs are
 * shared the same way: the first session that packs a mapped model at a
 * precision writes the packed block to <file>_bf16 or <file>_int8 (their
 * layout depends only on the configuration), and the others lay their
 * copies over a mapping of it without packing; a session that cannot share
 * them packs its own (tfm_pack_model, stopped by a cancel).
 *
 * Models mapped this way are read-only: training takes a private copy
 * (model_cache.c).
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "miscadmin.h"
#include "storage/fd.h"
#include "storage/lock.h"
#include "utils/lsyscache.h"
#include "catalog/namespace.h"

#include "tfm/lowp.h"
#include "tfm/precision.h"
#include "tfm/kept_block.h"
#include "runtime/runtime.h"
#include "runtime/cache/shared_weights.h"
#include "storage/models/models.h"

#define SW_DIR      "base/pgsql_tmp"
#define SW_PREFIX   "pgsql_tmp_tfm_"
#define SW_HEADER   4096		/* the floats start page-aligned */
#define SW_MAGIC    "tfmwgt3"	/* 3: the _gguf file of a model loaded for gguf */

typedef struct SharedHeader
{
	char		magic[8];
	uint32		format_version;
	uint32		database;
	uint32		catalog;		/* OID of tfm.models */
	int32		model_id;
	int64		version;
	uint64		n_floats;		/* the model's parameter block */
	uint32		precision;		/* what follows: fp32 parameters, or packed copies */
	uint32		pack_version;	/* TFM_LOWP_PACK_VERSION of packed copies */
	uint64		bytes;			/* of what follows (without slack) */
} SharedHeader;

typedef struct Mapping
{
	void	   *base;
	size_t		len;
} Mapping;

/* the OID of tfm.models: names this installation of the extension */
static Oid
catalog_oid(void)
{
	return get_relname_relid("models", get_namespace_oid("tfm", false));
}

/* the file of (model, version): its parameters (fp32), or packed copies */
static void
path_of(char *buf, size_t len, int32 model_id, int64 version, tfm_precision p)
{
	snprintf(buf, len, SW_DIR "/" SW_PREFIX "%u_%u_%d_%lld%s", MyDatabaseId, catalog_oid(),
			 model_id, (long long) version,
			 p == TFM_PREC_FP32 ? "" : p == TFM_PREC_BF16 ? "_bf16" :
			 p == TFM_PREC_INT4 ? "_int4" : p == TFM_PREC_GGUF ? "_gguf" : "_int8");
}

static size_t
file_bytes(size_t bytes)
{
	return SW_HEADER + bytes + 16 * sizeof(float);
}

static void
unmap(float *params, void *arg)
{
	Mapping    *mp = arg;

	(void) params;
	munmap(mp->base, mp->len);
	free(mp);
}

/*
 * Map the file of (model, version) at p if it is there, whole and what it
 * should be; else NULL.  Returns the payload (after the header).
 */
static Mapping *
map_file(const TfmModelRow *row, tfm_precision p, size_t n_floats, size_t bytes)
{
	char		path[MAXPGPATH];
	int			fd;
	struct stat st;
	void	   *base;
	const SharedHeader *h;
	Mapping    *mp;

	path_of(path, sizeof(path), row->id, row->version, p);
	fd = open(path, O_RDONLY | PG_BINARY, 0);
	if (fd < 0)
		return NULL;
	/* bytes 0: what the header says (a file loaded for gguf: its blocks' size) */
	if (fstat(fd, &st) != 0 || (bytes != 0 && (size_t) st.st_size != file_bytes(bytes)) ||
		(size_t) st.st_size < file_bytes(0))
	{
		close(fd);
		return NULL;
	}
	base = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (base == MAP_FAILED)
		return NULL;
	h = base;
	if (memcmp(h->magic, SW_MAGIC, sizeof(h->magic)) != 0 ||
		h->format_version != TFM_FORMAT_VERSION || h->database != MyDatabaseId ||
		h->catalog != catalog_oid() ||
		h->model_id != row->id || h->version != row->version || h->n_floats != n_floats ||
		h->precision != (uint32) p ||
		(bytes != 0 ? h->bytes != bytes : (size_t) st.st_size != file_bytes(h->bytes)) ||
		h->pack_version != TFM_LOWP_PACK_VERSION ||
		(mp = malloc(sizeof(Mapping))) == NULL)
	{
		munmap(base, st.st_size);
		return NULL;
	}
	mp->base = base;
	mp->len = st.st_size;
	return mp;
}

static void *
payload(const Mapping *mp)
{
	return (char *) mp->base + SW_HEADER;
}

/* a model over the mapped parameters of (model, version), or NULL */
static tfm_model *
map_model(const TfmModelRow *row, size_t n_floats)
{
	Mapping    *mp = map_file(row, TFM_PREC_FP32, n_floats, n_floats * sizeof(float));
	tfm_model  *m;

	if (mp == NULL)
		return NULL;
	m = tfm_model_create_borrowed(&row->cfg, (float *) payload(mp), unmap, mp);
	if (!m)
	{
		unmap(NULL, mp);
		tfm_raise_code(TFM_ENOMEM, "out of memory loading model \"%s\"", row->name);
	}
	m->poll = tfm_poll_interrupts;
	return m;
}

static bool publish_parts(const TfmModelRow *row, tfm_precision p, size_t n_floats,
						  const char **data, const size_t *data_sizes, int n);

/* remove the files of a model's versions older than keep (0: all) */
static void
remove_files(int32 model_id, int64 keep)
{
	char		prefix[64];
	size_t		plen;
	DIR		   *dir;
	struct dirent *de;

	snprintf(prefix, sizeof(prefix), SW_PREFIX "%u_%u_%d_", MyDatabaseId, catalog_oid(), model_id);
	plen = strlen(prefix);
	dir = AllocateDir(SW_DIR);
	if (dir == NULL)
		return;
	while ((de = ReadDirExtended(dir, SW_DIR, LOG)) != NULL)
	{
		char		path[MAXPGPATH];

		if (strncmp(de->d_name, prefix, plen) != 0 ||
			strchr(de->d_name, '.') != NULL ||	/* another backend's file being written */
			(keep > 0 && strtoll(de->d_name + plen, NULL, 10) >= keep))
			continue;
		snprintf(path, sizeof(path), SW_DIR "/%s", de->d_name);
		(void) unlink(path);
	}
	FreeDir(dir);
}

/* write the parts to fd; false (fd closed, tmp removed, errno set) on failure */
static bool
write_parts(int fd, const char *tmp, const char **parts, const size_t *sizes, int n)
{
	for (int i = 0; i < n; i++)
	{
		size_t		done = 0;

		/* no bytes: a hole (values never made: read as zeros, stored nowhere) */
		if (parts[i] == NULL)
		{
			if (lseek(fd, (off_t) sizes[i], SEEK_CUR) < 0)
			{
				int			save = errno;

				CloseTransientFile(fd);
				(void) unlink(tmp);
				errno = save;
				return false;
			}
			continue;
		}
		while (done < sizes[i])
		{
			size_t		chunk = Min(sizes[i] - done, (size_t) 64 << 20);
			ssize_t		w = write(fd, parts[i] + done, chunk);

			if (w <= 0)
			{
				int			save = errno;

				CloseTransientFile(fd);
				(void) unlink(tmp);
				errno = save;
				return false;
			}
			done += w;
			CHECK_FOR_INTERRUPTS();
		}
	}
	return true;
}

/*
 * Write bytes at data as the file of (model, version) at p; false on
 * failure.  Older versions' files go.
 */
static bool
publish(const TfmModelRow *row, tfm_precision p, size_t n_floats, const void *data, size_t bytes)
{
	const char *parts[1] = {data};
	size_t		sizes[1] = {bytes};

	return publish_parts(row, p, n_floats, parts, sizes, 1);
}

/* as publish, the payload in n parts (a NULL part: a hole of its size) */
static bool
publish_parts(const TfmModelRow *row, tfm_precision p, size_t n_floats, const char **data,
			  const size_t *data_sizes, int n)
{
	char		path[MAXPGPATH];
	char		tmp[MAXPGPATH];
	SharedHeader h;
	char	   *header = palloc0(SW_HEADER);
	const char **parts = palloc(sizeof(char *) * (n + 2));
	size_t	   *sizes = palloc(sizeof(size_t) * (n + 2));
	size_t		bytes = 0;
	float		slack[16] = {0};
	int			fd;
	volatile bool ok = false;

	for (int i = 0; i < n; i++)
		bytes += data_sizes[i];

	path_of(path, sizeof(path), row->id, row->version, p);
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, MyProcPid);
	if (MakePGDirectory(SW_DIR) < 0 && errno != EEXIST)
		return false;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, SW_MAGIC, sizeof(h.magic));
	h.format_version = TFM_FORMAT_VERSION;
	h.database = MyDatabaseId;
	h.catalog = catalog_oid();
	h.model_id = row->id;
	h.version = row->version;
	h.n_floats = n_floats;
	h.precision = (uint32) p;
	h.pack_version = TFM_LOWP_PACK_VERSION;
	h.bytes = bytes;
	memcpy(header, &h, sizeof(h));
	parts[0] = header;
	sizes[0] = SW_HEADER;
	for (int i = 0; i < n; i++)
	{
		parts[1 + i] = data[i];
		sizes[1 + i] = data_sizes[i];
	}
	parts[n + 1] = (const char *) slack;
	sizes[n + 1] = sizeof(slack);

	fd = OpenTransientFile(tmp, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
	if (fd < 0)
		return false;
	/* a cancel while writing leaves no half-written file behind */
	PG_TRY();
	{
		ok = write_parts(fd, tmp, parts, sizes, n + 2);
	}
	PG_CATCH();
	{
		(void) unlink(tmp);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (!ok)
		return false;
	if (CloseTransientFile(fd) != 0 || rename(tmp, path) != 0)
	{
		(void) unlink(tmp);
		return false;
	}
	remove_files(row->id, row->version);
	return true;
}

/* load from the catalog and publish; the private copy if publishing fails */
static tfm_model *
load_and_publish(const TfmModelRow *row, size_t n_floats)
{
	tfm_model  *m = tfm_catalog_load(row);
	TfmGuard   *guard = tfm_guard_model(m);
	tfm_model  *shared;

	if (!publish(row, TFM_PREC_FP32, m->n_floats, m->params, m->n_floats * sizeof(float)))
	{
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not share the weights of model \"%s\" between sessions: %m", row->name),
				 errdetail("This session keeps a private copy.")));
		tfm_guard_release(guard);
		return m;
	}
	shared = map_model(row, n_floats);
	tfm_guard_release(guard);
	if (shared == NULL)
		return m;
	/* the mapping replaces the private copy */
	tfm_model_free(m);
	return shared;
}

/*
 * A model loaded for gguf (tfm_catalog_load_at: the float32 values its
 * kept blocks stand for never made) is shared as one file too, named with
 * _gguf: its parameter block with holes where the absent values are (so
 * the file stores, and the page cache holds, only the values made: norms
 * and the like), then a table of its kept blocks and which tensors are
 * absent, then the blocks, each entry 64-byte aligned.  Sessions map it
 * and run the blocks where they lie (tfm_model_keep_kept_view): the
 * database's size of the model, held once.
 */
typedef struct SwTable
{
	uint32		n;				/* kept entries */
	uint32		n_tensors;		/* absent flags after the entries */
	uint64		pad;
} SwTable;

typedef struct SwKept
{
	uint64		offset;			/* tfm_int4_kept's */
	uint64		at;				/* its blocks: bytes from the payload's start */
	int32		K,
				col0,
				cols;
	uint32		type;
	uint32		rows_only;
	uint32		pad;
} SwKept;

/* the bytes of the parameter block in the payload, its slack included */
static size_t
params_part(size_t n_floats)
{
	return TYPEALIGN(64, n_floats * sizeof(float) + 16 * sizeof(float));
}

static int
range_cmp(const void *a, const void *b)
{
	size_t		x = ((const size_t *) a)[0],
				y = ((const size_t *) b)[0];

	return x < y ? -1 : x > y ? 1 : 0;
}

/* write m (loaded for gguf, private) as the _gguf file of its version */
static bool
publish_gguf(const TfmModelRow *row, const tfm_model *m)
{
	const struct tfm_int4_kept_set *ks = m->int4_kept;
	int			max_parts = 2 * m->n_tensors + 4 + 2 * ks->n,
				np = 0,
				na = 0;
	const char **parts = palloc(sizeof(char *) * max_parts);
	size_t	   *sizes = palloc(sizeof(size_t) * max_parts);
	size_t	   *ranges = palloc(sizeof(size_t) * 2 * Max(m->n_tensors, 1));
	size_t		cur = 0,
				pb = params_part(m->n_floats),
				tb,
				at;
	char	   *table,
			   *zeros = palloc0(128);
	SwTable    *t;
	SwKept	   *e;

	/* the parameter block: the values made, holes where the absent ones are */
	for (int i = 0; i < m->n_tensors; i++)
		if (m->absent && m->absent[i])
		{
			ranges[2 * na] = m->info[i].offset * sizeof(float);
			ranges[2 * na + 1] = (m->info[i].offset + m->info[i].size) * sizeof(float);
			na++;
		}
	qsort(ranges, na, 2 * sizeof(size_t), range_cmp);
	for (int i = 0; i < na; i++)
	{
		if (ranges[2 * i] > cur)
		{
			parts[np] = (const char *) m->params + cur;
			sizes[np++] = ranges[2 * i] - cur;
		}
		parts[np] = NULL;
		sizes[np++] = ranges[2 * i + 1] - ranges[2 * i];
		cur = ranges[2 * i + 1];
	}
	if (m->n_floats * sizeof(float) > cur)
	{
		parts[np] = (const char *) m->params + cur;
		sizes[np++] = m->n_floats * sizeof(float) - cur;
	}
	parts[np] = zeros;
	sizes[np++] = pb - m->n_floats * sizeof(float);
	/* the table */
	tb = TYPEALIGN(64, sizeof(SwTable) + sizeof(SwKept) * ks->n + m->n_tensors);
	table = palloc0(tb);
	t = (SwTable *) table;
	t->n = ks->n;
	t->n_tensors = m->n_tensors;
	e = (SwKept *) (t + 1);
	at = pb + tb;
	for (int i = 0; i < ks->n; i++)
	{
		const tfm_int4_kept *k = &ks->k[i];

		e[i] = (SwKept) {k->offset, at, k->K, k->col0, k->cols, k->type, k->rows_only, 0};
		at += TYPEALIGN(64, tfm_kept_bytes(k));
	}
	for (int i = 0; i < m->n_tensors; i++)
		((uint8 *) (e + ks->n))[i] = m->absent ? m->absent[i] : 0;
	parts[np] = table;
	sizes[np++] = tb;
	/* the blocks */
	for (int i = 0; i < ks->n; i++)
	{
		size_t		b = tfm_kept_bytes(&ks->k[i]);

		parts[np] = (const char *) ks->k[i].blocks;
		sizes[np++] = b;
		if (TYPEALIGN(64, b) > b)
		{
			parts[np] = zeros;
			sizes[np++] = TYPEALIGN(64, b) - b;
		}
	}
	return publish_parts(row, TFM_PREC_GGUF, m->n_floats, parts, sizes, np);
}

/* a model over the mapped _gguf file of (model, version), or NULL */
static tfm_model *
map_gguf_model(const TfmModelRow *row, size_t n_floats)
{
	Mapping    *mp = map_file(row, TFM_PREC_GGUF, n_floats, 0);
	const SharedHeader *h;
	char	   *pl;
	size_t		pb = params_part(n_floats);
	const SwTable *t;
	const SwKept *e;
	tfm_model  *m;
	tfm_int4_kept *k;
	bool	   *want;
	int			absent = 0;

	if (mp == NULL)
		return NULL;
	h = mp->base;
	pl = payload(mp);
	t = (const SwTable *) (pl + pb);
	e = (const SwKept *) (t + 1);
	if (h->bytes < pb + sizeof(SwTable) ||
		h->bytes < pb + sizeof(SwTable) + sizeof(SwKept) * (uint64) t->n + t->n_tensors)
	{
		unmap(NULL, mp);
		return NULL;
	}
	m = tfm_model_create_borrowed(&row->cfg, (float *) pl, unmap, mp);
	if (!m)
	{
		unmap(NULL, mp);
		tfm_raise_code(TFM_ENOMEM, "out of memory loading model \"%s\"", row->name);
	}
	m->poll = tfm_poll_interrupts;
	if ((int) t->n_tensors != m->n_tensors || t->n == 0)
	{
		tfm_model_free(m);
		return NULL;
	}
	k = palloc(sizeof(tfm_int4_kept) * t->n);
	for (uint32 i = 0; i < t->n; i++)
	{
		k[i] = (tfm_int4_kept) {e[i].offset, e[i].K, e[i].col0, e[i].cols, (const uint8 *) pl + e[i].at,
		e[i].type, e[i].rows_only != 0};
		if (e[i].at < pb || e[i].at > h->bytes || tfm_kept_bytes(&k[i]) > h->bytes - e[i].at)
		{
			tfm_model_free(m);
			return NULL;
		}
	}
	want = palloc(sizeof(bool) * m->n_tensors);
	for (int i = 0; i < m->n_tensors; i++)
	{
		want[i] = ((const uint8 *) (e + t->n))[i] != 0;
		absent += want[i] ? 1 : 0;
	}
	if (tfm_model_keep_kept_view(m, k, (int) t->n) != 0 || tfm_model_leave_absent(m, want) != absent)
	{
		tfm_model_free(m);
		return NULL;
	}
	pfree(k);
	pfree(want);
	return m;
}

tfm_model *
tfm_shared_load_gguf(const TfmModelRow *row)
{
	tfm_model  *volatile m = NULL;
	size_t		n_floats;
	tfm_param_info *info;
	LOCKTAG		tag;

	if (!tfm_share_weights)
		return tfm_catalog_load_at(row, true);
	(void) tfm_config_tensors(&row->cfg, &info, &n_floats);
	free(info);
	if ((m = map_gguf_model(row, n_floats)) != NULL)
		return m;
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) row->id, (uint32) row->version, 3);
	(void) LockAcquire(&tag, ExclusiveLock, true, false);
	PG_TRY();
	{
		m = map_gguf_model(row, n_floats);
		if (m == NULL)
		{
			tfm_model  *own = tfm_catalog_load_at(row, true);
			TfmGuard   *guard = tfm_guard_model(own);

			m = own;
			if (own->absent && own->int4_kept)
			{
				if (!publish_gguf(row, own))
					ereport(WARNING,
							(errcode_for_file_access(),
							 errmsg("could not share the blocks of model \"%s\" between sessions: %m", row->name),
							 errdetail("This session keeps a private copy.")));
				else if ((m = map_gguf_model(row, n_floats)) == NULL)
					m = own;
			}
			tfm_guard_release(guard);
			if (m != own)
				tfm_model_free(own);
		}
	}
	PG_FINALLY();
	{
		LockRelease(&tag, ExclusiveLock, true);
	}
	PG_END_TRY();
	return m;
}

tfm_model *
tfm_shared_load(const TfmModelRow *row)
{
	tfm_model  *volatile m = NULL;
	size_t		n_floats;
	tfm_param_info *info;
	LOCKTAG		tag;

	if (!tfm_share_weights)
		return tfm_catalog_load(row);
	(void) tfm_config_tensors(&row->cfg, &info, &n_floats);
	free(info);
	if ((m = map_model(row, n_floats)) != NULL)
		return m;

	/*
	 * One session writes the file while the others starting at the same time
	 * wait for it and map it (an advisory lock on (model, version) held for
	 * the write only; field 4 = 3 keeps it apart from user advisory locks).
	 */
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) row->id, (uint32) row->version, 3);
	(void) LockAcquire(&tag, ExclusiveLock, true, false);
	PG_TRY();
	{
		m = map_model(row, n_floats);
		if (m == NULL)
			m = load_and_publish(row, n_floats);
	}
	PG_FINALLY();
	{
		LockRelease(&tag, ExclusiveLock, true);
	}
	PG_END_TRY();
	return m;
}

void
tfm_shared_forget(int32 model_id)
{
	remove_files(model_id, 0);
}

/* the release of packed copies laid over a mapping */
static void
unmap_block(void *block, void *arg)
{
	(void) block;
	unmap(NULL, arg);
}

static bool
lay_over_file(tfm_model *m, const TfmModelRow *row, tfm_precision p, size_t bytes)
{
	Mapping    *mp = map_file(row, p, m->n_floats, bytes);

	return mp != NULL && tfm_model_set_precision_from(m, p, payload(mp), unmap_block, mp) == 0;
}

/*
 * m (mapped from the file of its version) packed at p from the shared file of
 * its packed copies, written first by this session if no other has.  False
 * when sharing is off, m is a private copy, or anything fails (the caller
 * then packs privately).
 */
bool
tfm_shared_precision(tfm_model *m, const TfmModelRow *row, tfm_precision p)
{
	size_t		bytes;
	LOCKTAG		tag;
	volatile bool done = false;

	/* gguf runs the model's own kept blocks where they are: nothing to share */
	if (!tfm_share_weights || m->release_params != unmap || p == TFM_PREC_FP32 || p == TFM_PREC_GGUF ||
		(bytes = tfm_model_precision_block_bytes(m, p)) == 0)
		return false;
	if (lay_over_file(m, row, p, bytes))
		return true;
	/* as for the parameters: one session packs and writes, the others wait */
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) row->id, (uint32) row->version, 4 + (uint16) p);
	(void) LockAcquire(&tag, ExclusiveLock, true, false);
	PG_TRY();
	{
		if (lay_over_file(m, row, p, bytes))
			done = true;
		else if (tfm_pack_model(m, p) == 0)
		{
			if (publish(row, p, m->n_floats, tfm_model_precision_block(m), bytes))
				/* the mapping replaces the private packed copies */
				(void) lay_over_file(m, row, p, bytes);
			else
				ereport(WARNING,
						(errcode_for_file_access(),
						 errmsg("could not share the %s copies of model \"%s\" between sessions: %m",
								tfm_precision_name(p), row->name),
						 errdetail("This session keeps a private copy.")));
			done = tfm_model_precision(m) == p;
		}
	}
	PG_FINALLY();
	{
		LockRelease(&tag, ExclusiveLock, true);
	}
	PG_END_TRY();
	return done;
}

/*
 * Pack m for p; a cancel or statement_timeout stops the packing (the model
 * stays at fp32) and is raised here.  0, or -1 without the memory.
 */
int
tfm_pack_model(tfm_model *m, tfm_precision p)
{
	for (;;)
	{
		int			rc = tfm_model_set_precision_polled(m, p, tfm_interrupt_pending, NULL);

		if (rc != TFM_ECANCELED)
			return rc;
		CHECK_FOR_INTERRUPTS();
	}
}
