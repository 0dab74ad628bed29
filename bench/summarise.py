#!/usr/bin/python3
"""summarise.py — the side-by-side table of bench/run.sh, from its log
(RESULT / MACHINE / INFO lines of bench_core and torch_core.py).

    /usr/bin/python3 bench/summarise.py bench/last-run.log
"""
import re, statistics, sys

res = {}          # (impl, kind, threads) -> [dict per round]
info = []
machine = []
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if line.startswith("RESULT ") or line.startswith("MACHINE "):
        kv = {k: v.strip('"') for k, v in re.findall(r'(\w+)=("[^"]*"|\S+)', line)}
        if line.startswith("RESULT "):
            res.setdefault((kv["impl"], kv["kind"], int(kv["threads"])), []).append(kv)
        else:
            machine.append(kv)
    elif line.startswith("INFO "):
        info.append(line[5:])

def rounds(impl, kind, n, key="tok_s"):
    return [float(r[key]) for r in res.get((impl, kind, n), []) if key in r]

def med(impl, kind, n, key="tok_s"):
    v = rounds(impl, kind, n, key)
    return statistics.median(v) if v else None

def best(impl, kind, n, key="tok_s_best"):
    v = rounds(impl, kind, n, key)
    return max(v) if v else None

def paired_ratio(kind, n, key="tok_s"):
    a = {r.get("round"): float(r[key]) for r in res.get(("tfm", kind, n), [])}
    b = {r.get("round"): float(r[key]) for r in res.get(("torch", kind, n), [])}
    rs = [a[k] / b[k] for k in a if k in b and b[k] > 0]
    return (statistics.median(rs) if rs else None), rs

threads = sorted({k[2] for k in res})
fmt = lambda v, f="{:.0f}": f.format(v) if v is not None else "-"

print()
print("== tfm core vs PyTorch: reference encoder classifier (B 32 x T 256 = 8192 tokens per batch)")
print("   tok/s: median over rounds of each round's median iteration; ratio: median of the per-round ratios")
print("   GFLOP/s as TRAINING-NOTES counts: forward/token = 2 x non-embedding weights + 4·n·d per layer")
print("   = 2.098 MFLOP; training = 3 x forward = 6.293 MFLOP/token")
print()
hdr = ("threads", "tfm train tok/s", "torch train tok/s", "ratio", "tfm infer tok/s",
       "torch infer tok/s", "ratio", "tfm GFLOP/s train/infer", "% of measured peak")
rows = []
for n in threads:
    rt, _ = paired_ratio("train", n)
    ri, _ = paired_ratio("infer", n)
    gt, gi = med("tfm", "train", n, "gflops"), med("tfm", "infer", n, "gflops")
    peak = med("tfm", "peak", n, "gflops")
    rows.append((str(n), fmt(med("tfm", "train", n)), fmt(med("torch", "train", n)), fmt(rt, "{:.2f}x"),
                 fmt(med("tfm", "infer", n)), fmt(med("torch", "infer", n)), fmt(ri, "{:.2f}x"),
                 f"{fmt(gt, '{:.1f}')} / {fmt(gi, '{:.1f}')}",
                 f"{fmt(100 * gt / peak if gt and peak else None, '{:.0f}%')} / "
                 f"{fmt(100 * gi / peak if gi and peak else None, '{:.0f}%')}"))
w = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(hdr)]
print(" | ".join(h.rjust(w[i]) for i, h in enumerate(hdr)))
print("-|-".join("-" * x for x in w))
for r in rows:
    print(" | ".join(c.rjust(w[i]) for i, c in enumerate(r)))
print()
print("targets: tfm >= 1.0x PyTorch in training, >= 1.5x in inference")
for n in threads:
    a, _ = paired_ratio("train", n)
    b, _ = paired_ratio("infer", n)
    if a is None or b is None:
        continue
    print(f"  {n} thread(s): training {a:.2f}x {'MET' if a >= 1.0 else 'not met'}; "
          f"inference {b:.2f}x {'MET' if b >= 1.5 else 'not met'}")
print()
print("per round (tok/s, tfm / torch = ratio):")
for n in threads:
    for kind in ("train", "infer"):
        a, b = rounds("tfm", kind, n), rounds("torch", kind, n)
        cells = ", ".join(f"{x:.0f}/{y:.0f}={x / y:.2f}x" for x, y in zip(a, b))
        print(f"  {n} thr {kind:<5}: {cells}")
print()
print("fastest single iteration of each side over all rounds (least disturbed by other processes):")
for n in threads:
    bt = (best("tfm", "train", n), best("torch", "train", n))
    bi = (best("tfm", "infer", n), best("torch", "infer", n))
    print(f"  {n} thread(s): train {fmt(bt[0])} vs {fmt(bt[1])} = "
          f"{fmt(bt[0] / bt[1] if all(bt) else None, '{:.2f}x')}; infer {fmt(bi[0])} vs {fmt(bi[1])} = "
          f"{fmt(bi[0] / bi[1] if all(bi) else None, '{:.2f}x')}")
print()
print("PyTorch detail (tok/s, median over rounds):")
for n in threads:
    paths = [r.get("path", "?") for r in res.get(("torch", "infer", n), [])]
    print(f"  {n} thread(s): train {fmt(med('torch', 'train', n))} "
          f"({fmt(med('torch', 'train', n, 'gflops'), '{:.1f}')} GFLOP/s); inference: fast path "
          f"{fmt(med('torch', 'infer_fastpath', n))}, standard path {fmt(med('torch', 'infer_standard', n))}; "
          f"compared with the faster in each round ({', '.join(paths)})")
print()
print("peak fp32 GFLOP/s:")
for n in threads:
    th = (res.get(("tfm", "theory", n)) or [{}])[-1]
    print(f"  {n} thread(s): measured {fmt(med('tfm', 'peak', n, 'gflops'), '{:.1f}')} "
          f"(fastest sgemm 2048^3 through tfm_gemm; median run {fmt(med('tfm', 'peak', n, 'median_gflops'), '{:.1f}')}); "
          f"theoretical {th.get('gflops', '?')} at cpuinfo's {th.get('cpuinfo_ghz', '?')} GHz, "
          f"{th.get('gflops_measured_clock', '?')} at the {th.get('measured_ghz', '?')} GHz measured then "
          f"({th.get('why', '?')} flops per cycle per core; bf16 dot products: "
          f"{th.get('bf16_gflops_measured_clock', '?')})")
print()
print("inference precision (tfm.precision): the reference classifier's forward pass, tok/s median over rounds;")
print("ratio to tfm's fp32 in the same rounds; GFLOP/s counted as for fp32")
print(f"  {'threads':>7}  {'precision':>9}  {'tok/s':>8}  {'vs fp32':>8}  {'GFLOP/s':>8}  {'% of fp32 peak':>14}  {'vs torch fp32':>13}")
for n in threads:
    peak = med("tfm", "peak", n, "gflops")
    base = {r.get("round"): float(r["tok_s"]) for r in res.get(("tfm", "infer", n), [])}
    torch = {r.get("round"): float(r["tok_s"]) for r in res.get(("torch", "infer", n), [])}
    for kind, name in (("infer", "fp32"), ("infer_bf16", "bf16"), ("infer_int8", "int8"), ("infer_int4", "int4")):
        rs = res.get(("tfm", kind, n), [])
        if not rs:
            continue
        vs = [float(r["tok_s"]) / base[r.get("round")] for r in rs if r.get("round") in base]
        vt = [float(r["tok_s"]) / torch[r.get("round")] for r in rs if r.get("round") in torch]
        g = med("tfm", kind, n, "gflops")
        print(f"  {n:>7}  {name:>9}  {fmt(med('tfm', kind, n)):>8}  "
              f"{fmt(statistics.median(vs) if vs else None, '{:.2f}x'):>8}  {fmt(g, '{:.1f}'):>8}  "
              f"{fmt(100 * g / peak if g and peak else None, '{:.0f}%'):>14}  "
              f"{fmt(statistics.median(vt) if vt else None, '{:.2f}x'):>13}")
print()
print("configuration:")
seen = set()
for i in info:
    kv = {k: v.strip('"') for k, v in re.findall(r'(\w+)=("[^"]*"|\S+)', i)}
    if kv.get("impl") == "tfm" and "blis_arch" in kv and "tfm" not in seen:
        seen.add("tfm")
        print(f"  tfm: BLIS kernel set (tfm_blas_arch) {kv['blis_arch']} ({kv['blis_reason']}); "
              f"Debian BLIS 0.9 OpenMP build; threads by tfm_set_threads(n)")
    if kv.get("impl") == "torch" and "torch" not in seen:
        seen.add("torch")
        print(f"  PyTorch {kv['version']}: BLAS_INFO={kv['blas_info']}, libblas.so.3 -> {kv['libblas']} "
              f"(the same BLIS), CPU capability {kv['cpu_capability']}, mkldnn={kv['mkldnn']}; threads by "
              f"torch.set_num_threads(n) and BLIS_/OPENBLAS_/OMP_NUM_THREADS=n, a fresh process per run")
    if "cpu_model" in kv and "cpu" not in seen:
        seen.add("cpu")
        print(f"  CPU: {kv['cpu_model'].replace('_', ' ')}, cpuinfo {kv['cpu_mhz']} MHz, "
              f"avx2={kv['avx2']} fma={kv['fma']} avx512f={kv['avx512f']}")
print()
print("machine around each run (others: CPU share other processes used in the 2 s before it;")
print("busy: all CPUs during it, this benchmark included; steal: taken by the hypervisor):")
for kv in machine:
    print(f"  {kv['threads']} thr {kv['label']:<24} others {kv.get('others_before_pct', '?'):>3}%  "
          f"busy {kv['busy_pct']:>3}%  steal {kv['steal_pct']}%")
