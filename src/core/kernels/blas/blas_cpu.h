/*
 * blas_cpu.h — what blas.c needs to know of the CPU family it is built for,
 * from blas_cpu_x86.c (x86-64) or blas_cpu_arm.c (AArch64): the BLIS kernel
 * sets a user may name and what each needs of the CPU, tfm's own choice
 * where BLIS 0.9's detection goes wrong, and vector transposes that turn
 * rows into micro-panels.
 */
#ifndef TFM_BLAS_CPU_H
#define TFM_BLAS_CPU_H

#include <stdbool.h>
#include <stddef.h>

#include <blis.h>

typedef struct blas_arch_entry
{
	const char *name;
	arch_t		id;
	int			needs;			/* a blas_cpu_level: 0 needs nothing */
} blas_arch_entry;

/* the kernel sets offered by name; the list ends with a NULL name */
extern const blas_arch_entry blas_arch_table[];
/* "auto" and the table's names, comma separated (tfm_blas_arch_names) */
extern const char blas_arch_names[];

/* what the CPU offers, in the table's `needs` units */
int			blas_cpu_level(void);

/*
 * The kernel set tfm sets itself before bli_init (an arch_t), or -1 to
 * leave the choice to BLIS; why, either way, into reason.
 */
int			blas_cpu_auto_arch(char *reason, size_t len);

/* whether blas_cpu_pack_rows has vector code for this CPU */
bool		blas_cpu_pack_rows_ok(void);

/*
 * One full panel of R rows stored along their columns (rows rs apart) into
 * d (column p of the panel at d[p·R]), some columns at a time by vector
 * transposes; returns the columns done, the caller copies the rest.  A
 * last group of fewer rows than a transpose takes may spill zeros past its
 * rows, which later stores or the panels' slack absorb (blas_cpu_x86.c).
 */
int			blas_cpu_pack_rows(float *restrict d, int R, const float *x, ptrdiff_t rs, int K);

#endif							/* TFM_BLAS_CPU_H */
