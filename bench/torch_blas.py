"""torch_blas.py — give the PyTorch baselines the same BLIS kernels tfm runs.

Debian's torch does its matrix products through whatever libblas.so.3 points
to; with libblis-dev installed that is BLIS 0.9 (OpenMP build).  BLIS 0.9
does not know AMD Zen 5 (family 26) and falls back to its `generic` kernels
there: a 1024³ sgemm on one core runs 35 GFLOP/s instead of 198 with the
`skx` kernels.  On Intel models newer than its table (a Sapphire Rapids VM)
it picks `haswell`: 226 GFLOP/s on 2 cores instead of 338 with `skx`.  tfm
picks `skx` itself on such CPUs (src/core/kernels/blas/blas.c), so a baseline left on the
slower kernels would be too slow and the comparison unfair.

Call use_native_blis_kernels() before `import torch`: BLIS reads
BLIS_ARCH_TYPE once, at its first call.  A BLIS_ARCH_TYPE already in the
environment is left alone.  blas_summary() says which library and kernels
the run used, for the INFO line every baseline prints.
"""
import os

BLIS_ARCH_SKX = 0     # index of BLIS_ARCH_SKX in BLIS 0.9's arch_t
BLIS_ARCH_HASWELL = 3
_choice = "detected by BLIS"


def _cpu():
    vendor, family, flags = "", 0, set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "vendor_id":
                    vendor = value.strip()
                elif key == "cpu family":
                    family = int(value)
                elif key == "flags":
                    flags = set(value.split())
                    break
    except OSError:
        pass
    return vendor, family, flags


def use_native_blis_kernels():
    """The same rule as tfm_blas_init: AVX-512 → skx except on AMD Zen 4
    (family 25, BLIS's zen3); AVX2 on AMD family >= 26 → haswell."""
    global _choice
    if os.environ.get("BLIS_ARCH_TYPE"):
        _choice = "BLIS_ARCH_TYPE from the environment"
        return
    vendor, family, flags = _cpu()
    amd = vendor == "AuthenticAMD"
    if {"avx512f", "avx512dq", "avx512bw", "avx512vl"} <= flags and not (amd and family < 26):
        os.environ["BLIS_ARCH_TYPE"] = str(BLIS_ARCH_SKX)
        _choice = f"skx, chosen as tfm does ({'AMD' if amd else 'non-AMD'} family {family})"
    elif amd and family >= 26 and {"avx2", "fma"} <= flags:
        os.environ["BLIS_ARCH_TYPE"] = str(BLIS_ARCH_HASWELL)
        _choice = f"haswell, chosen as tfm does (AMD family {family})"


def blas_summary():
    lib = os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")
    return f"libblas={lib} blis_kernels=\"{_choice}\" BLIS_ARCH_TYPE={os.environ.get('BLIS_ARCH_TYPE', 'unset')}"
