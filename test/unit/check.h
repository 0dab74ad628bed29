/*
 * check.h — a small harness for the core's unit tests: counted checks that
 * make the test exit non-zero, aligned buffers and bit patterns, an atol + rtol·|ref| comparison of float
 * arrays, a central finite-difference gradient checker, and a reader of the
 * PyTorch fixture files (test/reference/README.md describes the format).
 * Header-only; each test includes it once.
 */
#ifndef TFM_TEST_CHECK_H
#define TFM_TEST_CHECK_H

/* not every test uses every helper */
#pragma GCC diagnostic ignored "-Wunused-function"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int	checks_run = 0;
static int	checks_failed = 0;

#define CHECK(cond, ...) \
	do { checks_run++; if (!(cond)) { checks_failed++; \
		fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
		fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

static int
check_summary(const char *name)
{
	printf("%s: %d checks, %d failed\n", name, checks_run, checks_failed);
	return checks_failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

static int
quick_mode(void)
{
	const char *q = getenv("TFM_TEST_QUICK");

	return q != NULL && q[0] == '1';
}

/* bytes rounded up to 64, 64-byte aligned (the packed weights' and work buffers' alignment) */
static void *
alloc64(size_t bytes)
{
	return aligned_alloc(64, (bytes + 63) / 64 * 64);
}

/* the float of a bit pattern */
static float
bits_f(uint32_t u)
{
	float		f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

/* compare got against ref with |got-ref| <= atol + rtol·|ref| */
static int
check_close(const char *what, const float *got, const float *ref, size_t n,
			double atol, double rtol)
{
	double		worst = 0.0;
	size_t		bad = 0,
				first = 0;

	for (size_t i = 0; i < n; i++)
	{
		double		diff = fabs((double) got[i] - (double) ref[i]);
		double		lim = atol + rtol * fabs((double) ref[i]);

		if (!(diff <= lim))
		{
			if (bad == 0)
				first = i;
			bad++;
		}
		if (diff > worst || isnan(diff))
			worst = diff;
	}
	checks_run++;
	if (bad)
	{
		checks_failed++;
		fprintf(stderr, "FAIL %s: %zu of %zu differ (first [%zu] got %.8g want %.8g), max |diff| %.3g\n",
				what, bad, n, first, got[first], ref[first], worst);
		return 0;
	}
	if (getenv("TFM_TEST_VERBOSE"))
		printf("  ok %-40s n=%-6zu max |diff| %.3g\n", what, n, worst);
	return 1;
}

/* ---- finite differences ---- */

typedef double (*fd_loss_fn) (void *ctx);

/*
 * Central differences of loss(ctx) w.r.t. each element of x (n floats,
 * perturbed in place and restored), compared with the analytic gradient
 * grad.  Checks at most max_points elements, spread over the buffer.
 */
static int
check_fd(const char *what, fd_loss_fn loss, void *ctx, float *x,
		 const float *grad, size_t n, size_t max_points, double h,
		 double atol, double rtol)
{
	size_t		stride = (max_points && n > max_points) ? n / max_points : 1;
	size_t		bad = 0,
				checked = 0;
	double		worst = 0.0;

	for (size_t i = (stride > 1 ? stride / 2 : 0); i < n; i += stride)
	{
		float		orig = x[i];
		double		lp,
					lm,
					num,
					diff;

		x[i] = orig + (float) h;
		lp = loss(ctx);
		x[i] = orig - (float) h;
		lm = loss(ctx);
		x[i] = orig;
		num = (lp - lm) / ((double) (orig + (float) h) - (double) (orig - (float) h));
		diff = fabs(num - grad[i]);
		checked++;
		if (!(diff <= atol + rtol * fabs(num)))
		{
			if (bad < 3)
				fprintf(stderr, "  %s[%zu]: analytic %.6g numeric %.6g\n",
						what, i, grad[i], num);
			bad++;
		}
		if (diff > worst || isnan(diff))
			worst = diff;
	}
	checks_run++;
	if (bad)
	{
		checks_failed++;
		fprintf(stderr, "FAIL fd %s: %zu of %zu points differ, max |diff| %.3g\n",
				what, bad, checked, worst);
		return 0;
	}
	if (getenv("TFM_TEST_VERBOSE"))
		printf("  ok fd %-37s %zu points, max |diff| %.3g\n", what, checked, worst);
	return 1;
}

/* ---- fixtures ---- */

typedef struct fx_record
{
	char	   *name;
	int			dtype;			/* 0 float32, 1 int32 */
	int			ndim;
	int			dims[4];
	size_t		n;
	void	   *data;
} fx_record;

typedef struct fixture
{
	int			n;
	fx_record  *rec;
	void	   *blob;
} fixture;

static void
fixture_free(fixture *fx)
{
	for (int i = 0; i < fx->n; i++)
		free(fx->rec[i].name);
	free(fx->rec);
	free(fx->blob);
	memset(fx, 0, sizeof(*fx));
}

static int
fixture_load(fixture *fx, const char *file)
{
	char		path[1024];
	const char *dir = getenv("TFM_TEST_DATA");
	FILE	   *fp;
	long		size;
	unsigned char *buf,
			   *p,
			   *end;
	int			cap = 16;

	memset(fx, 0, sizeof(*fx));
	snprintf(path, sizeof(path), "%s/%s", dir ? dir : "test/fixtures", file);
	fp = fopen(path, "rb");
	if (!fp)
	{
		fprintf(stderr, "cannot open fixture %s\n", path);
		return -1;
	}
	fseek(fp, 0, SEEK_END);
	size = ftell(fp);
	fseek(fp, 0, SEEK_SET);
	buf = malloc(size);
	if (fread(buf, 1, size, fp) != (size_t) size || size < 8 || memcmp(buf, "TFMFIX01", 8) != 0)
	{
		fclose(fp);
		free(buf);
		fprintf(stderr, "bad fixture %s\n", path);
		return -1;
	}
	fclose(fp);
	fx->blob = buf;
	fx->rec = malloc(sizeof(fx_record) * cap);
	p = buf + 8;
	end = buf + size;
	while (p + 4 <= end)
	{
		uint32_t	len,
					dtype,
					ndim,
					dim;
		fx_record  *r;

		if (fx->n == cap)
		{
			cap *= 2;
			fx->rec = realloc(fx->rec, sizeof(fx_record) * cap);
		}
		r = &fx->rec[fx->n++];
		memcpy(&len, p, 4);
		p += 4;
		r->name = malloc(len + 1);
		memcpy(r->name, p, len);
		r->name[len] = '\0';
		p += len;
		memcpy(&dtype, p, 4);
		memcpy(&ndim, p + 4, 4);
		p += 8;
		r->dtype = (int) dtype;
		r->ndim = (int) ndim;
		r->n = 1;
		for (uint32_t i = 0; i < ndim; i++)
		{
			memcpy(&dim, p, 4);
			p += 4;
			if (i < 4)
				r->dims[i] = (int) dim;
			r->n *= dim;
		}
		r->data = p;
		p += r->n * 4;
	}
	return 0;
}

static const fx_record *
fixture_get(const fixture *fx, const char *name)
{
	for (int i = 0; i < fx->n; i++)
		if (strcmp(fx->rec[i].name, name) == 0)
			return &fx->rec[i];
	return NULL;
}

static int
fixture_int(const fixture *fx, const char *name)
{
	const fx_record *r = fixture_get(fx, name);

	return r ? *(const int32_t *) r->data : -1;
}

/* the whole of a gzip file (gzip -dc), NUL-terminated; NULL if it is missing */
static char *
check_read_gz(const char *path, size_t *len)
{
	char		cmd[4096];
	FILE	   *f;
	char	   *buf = NULL;
	size_t		cap = 0,
				n = 0,
				r;

	if (!(f = fopen(path, "rb")))
		return NULL;
	fclose(f);
	snprintf(cmd, sizeof(cmd), "gzip -dc '%s'", path);
	if (!(f = popen(cmd, "r")))
		return NULL;
	for (;;)
	{
		if (n + 65536 + 1 > cap)
		{
			cap = cap ? cap * 2 : 1 << 20;
			buf = realloc(buf, cap);
		}
		r = fread(buf + n, 1, 65536, f);
		if (r == 0)
			break;
		n += r;
	}
	pclose(f);
	buf[n] = '\0';
	*len = n;
	return buf;
}

/* a fixture file (rel under $TFM_TEST_DATA, else test/fixtures), whole and
 * NUL-terminated; NULL if it is missing */
static uint8_t *
check_fixture(const char *rel, size_t *len)
{
	char		path[1024];
	const char *dir = getenv("TFM_TEST_DATA");
	FILE	   *f;
	uint8_t    *buf;
	long		n;

	snprintf(path, sizeof(path), "%s/%s", dir ? dir : "test/fixtures", rel);
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

#endif							/* TFM_TEST_CHECK_H */
