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
#include "runtime/runtime.h"
#include "runtime/cache/shared_weights.h"
#include "storage/models/models.h"

#define SW_DIR      "base/pgsql_tmp"
#define SW_PREFIX   "pgsql_tmp_tfm_"
#define SW_HEADER   4096		/* the floats start page-aligned */
#define SW_MAGIC    "tfmwgt2"

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
	if (fstat(fd, &st) != 0 || (size_t) st.st_size != file_bytes(bytes))
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
		h->precision != (uint32) p || h->bytes != bytes ||
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
	char		path[MAXPGPATH];
	char		tmp[MAXPGPATH];
	SharedHeader h;
	char	   *header = palloc0(SW_HEADER);
	const char *parts[3];
	size_t		sizes[3];
	float		slack[16] = {0};
	int			fd;
	volatile bool ok = false;

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
	parts[1] = data;
	sizes[1] = bytes;
	parts[2] = (const char *) slack;
	sizes[2] = sizeof(slack);

	fd = OpenTransientFile(tmp, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
	if (fd < 0)
		return false;
	/* a cancel while writing leaves no half-written file behind */
	PG_TRY();
	{
		ok = write_parts(fd, tmp, parts, sizes, 3);
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

	if (!tfm_share_weights || m->release_params != unmap || p == TFM_PREC_FP32 ||
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
