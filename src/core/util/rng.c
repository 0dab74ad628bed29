/*
 * rng.c — xoshiro256** seeded through splitmix64 (see rng.h).
 */
#include <math.h>

#include "tfm/rng.h"

static inline uint64_t
rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

void
tfm_rng_seed(tfm_rng *rng, uint64_t seed)
{
	uint64_t	x = seed;

	for (int i = 0; i < 4; i++)
	{
		x = tfm_mix64(x);
		rng->s[i] = x;
	}
	if ((rng->s[0] | rng->s[1] | rng->s[2] | rng->s[3]) == 0)
		rng->s[0] = 1;
}

uint64_t
tfm_rng_next(tfm_rng *rng)
{
	uint64_t   *s = rng->s;
	uint64_t	result = rotl(s[1] * 5, 7) * 9;
	uint64_t	t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

float
tfm_rng_uniform(tfm_rng *rng)
{
	return (float) (tfm_rng_next(rng) >> 40) * (1.0f / 16777216.0f);
}

float
tfm_rng_normal(tfm_rng *rng)
{
	/* one draw per call keeps the stream simple; the second value is dropped */
	double		u1 = ((tfm_rng_next(rng) >> 11) + 1.0) * (1.0 / 9007199254740994.0);
	double		u2 = (tfm_rng_next(rng) >> 11) * (1.0 / 9007199254740992.0);

	return (float) (sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2));
}

uint64_t
tfm_rng_below(tfm_rng *rng, uint64_t n)
{
	/* Lemire's nearly-divisionless method, with rejection for exactness */
	uint64_t	x = tfm_rng_next(rng);
	__uint128_t m = (__uint128_t) x * n;
	uint64_t	l = (uint64_t) m;

	if (l < n)
	{
		uint64_t	t = -n % n;

		while (l < t)
		{
			x = tfm_rng_next(rng);
			m = (__uint128_t) x * n;
			l = (uint64_t) m;
		}
	}
	return (uint64_t) (m >> 64);
}
