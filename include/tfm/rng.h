/*
 * rng.h — tfm's seeded pseudo-random numbers.
 *
 * Two generators, both reproducible bit for bit from a 64-bit seed:
 *   - tfm_rng: a sequential xoshiro256** stream (initialisation, shuffling,
 *     sampling), state kept by the caller;
 *   - tfm_drop_bits: a counter-based generator (a pure function of key and
 *     index), used for dropout so that a mask can be regenerated in the
 *     backward pass and does not depend on the number of threads.
 */
#ifndef TFM_RNG_H
#define TFM_RNG_H

#include <stdint.h>

typedef struct tfm_rng
{
	uint64_t	s[4];
} tfm_rng;

void		tfm_rng_seed(tfm_rng *rng, uint64_t seed);
uint64_t	tfm_rng_next(tfm_rng *rng);
/* uniform in [0, 1) with 24 random bits */
float		tfm_rng_uniform(tfm_rng *rng);
/* standard normal (Box-Muller) */
float		tfm_rng_normal(tfm_rng *rng);
/* uniform integer in [0, n) for n > 0 */
uint64_t	tfm_rng_below(tfm_rng *rng, uint64_t n);

/* splitmix64 finaliser: a strong 64-bit mixing function */
static inline uint64_t
tfm_mix64(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ULL;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
	return x ^ (x >> 31);
}

/* 32 random bits that depend only on (key, index) */
static inline uint32_t
tfm_hash32(uint64_t key, uint64_t index)
{
	return (uint32_t) (tfm_mix64(key ^ tfm_mix64(index)) >> 32);
}

/* murmur3's 32-bit finaliser */
static inline uint32_t
tfm_fmix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x85EBCA6BU;
	h ^= h >> 13;
	h *= 0xC2B2AE35U;
	h ^= h >> 16;
	return h;
}

/*
 * 32 random bits for dropout: a pure function of (key, index) in 32-bit
 * arithmetic, so loops over it vectorize (AVX2 has no 64-bit multiply).
 */
static inline uint32_t
tfm_drop_bits(uint64_t key, uint64_t index)
{
	uint32_t	k = (uint32_t) key ^ (uint32_t) (key >> 32);
	uint32_t	hi = (uint32_t) (index >> 32);

	return tfm_fmix32((uint32_t) index * 0x9E3779B1U + k + hi * 0x85EBCA77U);
}

/*
 * tfm_drop_bits in two parts, for loops over runs of indices that share
 * their upper 32 bits (tfm_drop_run long): a seed per run, then 32-bit
 * lanes only (tfm_drop_bits's 64-bit index halves the vector width).
 * tfm_drop_bits(key, i) == tfm_drop_bits_lo(tfm_drop_seed(key, i), (uint32_t) i).
 */
static inline uint32_t
tfm_drop_seed(uint64_t key, uint64_t index)
{
	return ((uint32_t) key ^ (uint32_t) (key >> 32)) + (uint32_t) (index >> 32) * 0x85EBCA77U;
}

static inline uint32_t
tfm_drop_bits_lo(uint32_t seed, uint32_t lo)
{
	return tfm_fmix32(lo * 0x9E3779B1U + seed);
}

/*
 * how many of the n indices from index on share its upper 32 bits (at most
 * 2^32 − 1, so that the count fits the loop's 32-bit counter)
 */
static inline uint64_t
tfm_drop_run(uint64_t index, uint64_t n)
{
	uint64_t	left = 0x100000000ULL - (uint32_t) index;

	left = left > 0xFFFFFFFFULL ? 0xFFFFFFFFULL : left;
	return n < left ? n : left;
}

/*
 * for (i = lo; i < hi; i++) BODY, with `bits` the dropout bits of index
 * i + off, in runs of 32-bit lanes
 */
#define TFM_DROP_LOOP(i, lo, hi, key, off, bits, BODY) \
	for (uint64_t run0_ = (lo); run0_ < (uint64_t) (hi);) \
	{ \
		uint64_t	runn_ = tfm_drop_run(run0_ + (off), (uint64_t) (hi) - run0_); \
		uint32_t	seed_ = tfm_drop_seed((key), run0_ + (off)), \
					lo_ = (uint32_t) (run0_ + (off)); \
		for (uint32_t j_ = 0; j_ < (uint32_t) runn_; j_++) \
		{ \
			size_t		i = run0_ + j_; \
			uint32_t	bits = tfm_drop_bits_lo(seed_, lo_ + j_); \
			BODY; \
		} \
		run0_ += runn_; \
	}

/* derive a sub-key from a key and a small tag (layer, site, step ...) */
static inline uint64_t
tfm_subkey(uint64_t key, uint64_t tag)
{
	return tfm_mix64(key + 0x632BE59BD9B4E019ULL * (tag + 1));
}

#endif							/* TFM_RNG_H */
