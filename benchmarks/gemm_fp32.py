"""fp32 GEMMs on the GPU: cuBLAS fp32 and TF32 against the fp32-accurate tensor-core
constructions of `kernels/gemm_emulated.py`, side by side in one run.

For each shape: every method's median time (`triton.testing.do_bench`, L2 flushed
before each call, medians), TFLOP/s (2·B·M·N·K / t), and its max error against a
float64 GEMM of the same inputs (max|C - C64| / max|C64|), also as a ratio to
cuBLAS fp32's error. A method is *admissible* on a shape when its error is no
larger than cuBLAS fp32's; the geomean over shapes takes per shape the fastest
admissible method's speedup over cuBLAS fp32 (1.0x where none is faster).
Times include everything the method does per call (the split pass included);
rows marked `info` (GEMM-only, operands split beforehand, as for a weight split
once per job) are reported but not ranked.

    python benchmarks/gemm_fp32.py --out DIR               # the six shapes of issue 8
    python benchmarks/gemm_fp32.py --smoke --out DIR       # two shapes + checks
    cd .gemm && PYTHONPATH=. python3 gemm_fp32.py ...      # the library beside it, as one file written by
    python -c 'from kernelopt.kernels.gemm_emulated import library_source as s; print(s())' >.gemm/gemm_emulated.py

Writes DIR/gemm_fp32.json and DIR/gemm_fp32.md (after every shape).
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import sys
import time
import traceback

import torch

try:
    from kernelopt.kernels import gemm_emulated as ge
except ImportError:  # run from a folder holding gemm_emulated.py
    import gemm_emulated as ge

#: name -> (batch, M, K, N): M×K×N as in issue 8 and TOOLCHAIN-NOTES
SHAPES = {
    "square 4096": (1, 4096, 4096, 4096),
    "2048x8192x4096": (1, 2048, 8192, 4096),
    "1024x8192x8192": (1, 1024, 8192, 8192),
    "bmm 128x(512x1024 . 1024x2048)": (128, 512, 1024, 2048),
    "large K 256x524288x256": (1, 256, 524288, 256),
    "small K 32768x64x32768": (1, 32768, 64, 32768),
}
SMOKE_SHAPES = ["2048x8192x4096", "large K 256x524288x256"]

#: method -> (description, ranked?) ; the callables are built in `methods()`
INFO = {
    'cublas_fp32': ('cuBLAS fp32 (allow_tf32 off): the reference', True),
    'cublas_tf32': ('cuBLAS TF32 (allow_tf32 on): not fp32-accurate', True),
    'split3_chunk256': ('3xTF32 on cuBLAS, RN split, K in chunks of 256: one GEMM per chunk on [A_lo|A_hi|A_hi]·[B_hi;B_lo;B_hi], chunks added by beta=1', True),
    'triton_presplit': ('Triton kernel on K-major hi/lo parts (the split pass, B transposed, timed)', True),
    'triton_bf16x6': ('Triton kernel, tl.dot bf16x6', True),
    'triton_tf32x3': ('Triton persistent TMA kernel, tl.dot tf32x3', True),
    'split3_chunk512': ('as split3_chunk256 with chunks of 512', True),
    'split3_chunk1024': ('as split3_chunk256 with chunks of 1024', True),
    'split3_textbook_trunc': ('3xTF32 on cuBLAS as specified: truncation split (hi = x & ~0x1FFF), 3 GEMMs over all of K chained by beta=1', True),
    'split3_textbook_rn': ('the same with a round-to-nearest split', True),
    'triton_3xtf32': ('Triton kernel, 3xTF32 written out (RN split in registers, per-K-tile sums)', True),
    'triton_bf16x3': ('Triton kernel, tl.dot bf16x3', True),
    'triton_tf32': ('Triton kernel, plain tf32 (kernel efficiency vs cuBLAS TF32)', True),
    'info_split3_chunk256_gemm_only': ("info: split3_chunk256's GEMMs on parts split beforehand", False),
    'info_presplit_gemm_only': ("info: triton_presplit's kernel on parts split beforehand", False),
}


def methods(a, b, batched):
    """name -> zero-argument callable returning C (fp32)."""
    mm = torch.bmm if batched else torch.mm
    tmm = ge.triton_bmm if batched else ge.triton_mm
    s3 = ge.bmm_3xtf32 if batched else ge.mm_3xtf32
    a3 = a if batched else a.unsqueeze(0)
    b3 = b if batched else b.unsqueeze(0)

    def cublas(tf32):
        def f():
            with ge.tf32_matmul_scope(tf32):
                return mm(a, b)
        return f

    parts = {}

    def chunk_gemm_only():
        if "cub" not in parts:
            parts["cub"] = ge.split3_operands(a3, b3, k_chunk=256)
        out = torch.empty((a3.shape[0], a3.shape[1], b3.shape[2]), device=a.device)
        ge.split3_gemm(parts["cub"], out)
        return out if batched else out[0]

    def presplit_gemm_only():
        if "tri" not in parts:
            parts["tri"] = (*ge.split_kmajor(a, "a"), *ge.split_kmajor(b, "b"))
        return ge.triton_mm_presplit(*parts["tri"])

    return {
        "cublas_fp32": cublas(False),
        "cublas_tf32": cublas(True),
        "split3_textbook_trunc": lambda: s3(a, b, rounding="trunc", layout="separate", k_chunk=0),
        "split3_textbook_rn": lambda: s3(a, b, rounding="rn", layout="separate", k_chunk=0),
        "split3_chunk256": lambda: s3(a, b, rounding="rn", layout="concat", k_chunk=256),
        "split3_chunk512": lambda: s3(a, b, rounding="rn", layout="concat", k_chunk=512),
        "split3_chunk1024": lambda: s3(a, b, rounding="rn", layout="concat", k_chunk=1024),
        "triton_tf32x3": lambda: tmm(a, b, precision="tf32x3"),
        "triton_3xtf32": lambda: tmm(a, b, precision="3xtf32"),
        "triton_presplit": lambda: tmm(a, b, precision="presplit"),
        "triton_bf16x6": lambda: tmm(a, b, precision="bf16x6"),
        "triton_bf16x3": lambda: tmm(a, b, precision="bf16x3"),
        "triton_tf32": lambda: tmm(a, b, precision="tf32"),
        "info_split3_chunk256_gemm_only": chunk_gemm_only,
        "info_presplit_gemm_only": presplit_gemm_only,
    }, parts


def tuned_config(name, a, b, batched):
    """The Triton config chosen for this method and shape (None if not a Triton method)."""
    prec = {"triton_tf32x3": "tf32x3", "triton_3xtf32": "3xtf32", "triton_presplit": "presplit",
            "triton_bf16x6": "bf16x6", "triton_bf16x3": "bf16x3", "triton_tf32": "tf32",
            "info_presplit_gemm_only": "presplit"}.get(name)
    if prec is None:
        return None, None
    nb = a.shape[0] if batched else 1
    m, k = a.shape[-2:]
    n = b.shape[-1]
    for key, (cfg, results) in ge.TUNED.items():
        if key[:4] == (nb, m, n, k) and key[6] == prec:
            return cfg.short(), {kk: (round(v, 4) if isinstance(v, float) else v) for kk, v in results.items()}
    return None, None


def tf32_operand_rounding():
    """Does a TF32 tensor-core product read fp32 operands truncated or rounded?"""
    g = torch.Generator(device="cuda").manual_seed(7)
    x = torch.randn(512, 512, device="cuda", generator=g)
    y = torch.randn(512, 512, device="cuda", generator=g)
    with ge.tf32_matmul_scope(True):
        raw = torch.mm(x, y)
        tr = torch.mm(ge.truncate_tf32(x), ge.truncate_tf32(y))
        rn = torch.mm(ge.round_tf32(x), ge.round_tf32(y))
    out = {"cublas_raw_eq_trunc": bool(torch.equal(raw, tr)), "cublas_raw_eq_rn": bool(torch.equal(raw, rn))}
    try:
        cfg = ge.TF32_CONFIGS[0]
        traw = ge.triton_mm(x, y, precision="tf32", config=cfg)
        ttr = ge.triton_mm(ge.truncate_tf32(x), ge.truncate_tf32(y), precision="tf32", config=cfg)
        trn = ge.triton_mm(ge.round_tf32(x), ge.round_tf32(y), precision="tf32", config=cfg)
        out.update(triton_raw_eq_trunc=bool(torch.equal(traw, ttr)), triton_raw_eq_rn=bool(torch.equal(traw, trn)))
    except Exception as e:
        out["triton_error"] = repr(e)[:300]
    return out


def checks():
    """Small correctness checks of every entry point on the GPU (errors vs float64)."""
    res = {}
    g = torch.Generator(device="cuda").manual_seed(3)
    r = lambda *s: torch.randn(*s, device="cuda", generator=g)  # noqa: E731
    a, b, bias = r(300, 1000), r(1000, 200), r(200)
    ref = torch.addmm(bias.double(), a.double(), b.double(), beta=0.5, alpha=2.0)
    e32 = ge.max_rel_error(torch.addmm(bias, a, b, beta=0.5, alpha=2.0), ref)
    res["addmm fp32"] = e32
    res["addmm split3 chunk256"] = ge.max_rel_error(ge.addmm_3xtf32(bias, a, b, beta=0.5, alpha=2.0), ref)
    res["addmm split3 separate chunk128"] = ge.max_rel_error(
        ge.addmm_3xtf32(bias, a, b, beta=0.5, alpha=2.0, layout="separate", k_chunk=128), ref)
    cfg = ge.HOPPER_CONFIGS[0]
    res["addmm triton tf32x3"] = ge.max_rel_error(
        ge.triton_addmm(bias, a, b, beta=0.5, alpha=2.0, config=cfg), ref)
    res["addmm triton tf32x3 splitk4"] = ge.max_rel_error(
        ge.triton_addmm(bias[None, :].expand(300, 200), a, b, beta=0.5, alpha=2.0,
                        config=ge.GemmConfig(**{**cfg.__dict__, "split_k": 4})), ref)
    bt = b.t().contiguous().t()
    res["mm triton B K-major"] = ge.max_rel_error(ge.triton_mm(a, bt, config=cfg), a.double() @ b.double())
    A, B, X = r(6, 136, 260), r(6, 260, 72), r(6, 136, 72)
    R = torch.baddbmm(X.double(), A.double(), B.double(), beta=0.25, alpha=1.5)
    res["baddbmm fp32"] = ge.max_rel_error(torch.baddbmm(X, A, B, beta=0.25, alpha=1.5), R)
    res["baddbmm split3 chunk256 (K padded)"] = ge.max_rel_error(ge.baddbmm_3xtf32(X, A, B, beta=0.25, alpha=1.5), R)
    res["baddbmm split3 chunk100"] = ge.max_rel_error(
        ge.baddbmm_3xtf32(X, A, B, beta=0.25, alpha=1.5, k_chunk=100), R)
    res["baddbmm triton"] = ge.max_rel_error(ge.triton_baddbmm(X, A, B, beta=0.25, alpha=1.5, config=cfg), R)
    At = A.transpose(1, 2).contiguous().transpose(1, 2)
    R2 = torch.bmm(A.double(), B.double())
    res["bmm triton A_T (K padded)"] = ge.max_rel_error(ge.triton_bmm(At, B, config=cfg), R2)
    res["bmm triton presplit"] = ge.max_rel_error(ge.triton_bmm(A, B, precision="presplit",
                                                                config=ge.PRESPLIT_CONFIGS[0]), R2)
    # K-chunk sweep of the cuBLAS construction (tensor-core accumulation length vs error)
    p_, q_ = r(1024, 8192), r(8192, 1024)
    P = p_.double() @ q_.double()
    res["chunk sweep 1024x8192x1024: fp32"] = ge.max_rel_error(p_ @ q_, P)
    for kc in (64, 128, 256, 512, 1024, 2048, 0):
        res[f"chunk sweep 1024x8192x1024: split3 concat k_chunk={kc or 'K'}"] = ge.max_rel_error(
            ge.mm_3xtf32(p_, q_, layout="concat", k_chunk=kc), P)
    del p_, q_, P
    # positive data: where a truncation split is biased
    u, v = torch.rand(2048, 64, device="cuda", generator=g), torch.rand(64, 2048, device="cuda", generator=g)
    U = u.double() @ v.double()
    res["uniform+ K=64 fp32"] = ge.max_rel_error(u @ v, U)
    res["uniform+ K=64 split3 rn"] = ge.max_rel_error(ge.mm_3xtf32(u, v, rounding="rn"), U)
    res["uniform+ K=64 split3 trunc"] = ge.max_rel_error(ge.mm_3xtf32(u, v, rounding="trunc"), U)
    res["uniform+ K=64 triton tf32x3"] = ge.max_rel_error(ge.triton_mm(u, v, config=cfg), U)
    res["uniform+ K=64 triton 3xtf32"] = ge.max_rel_error(ge.triton_mm(u, v, precision="3xtf32", config=cfg), U)
    return res


def bench_shape(name, shape, method_names, rep_ms, budget_end, log):
    from triton.testing import do_bench

    nb, m, k, n = shape
    batched = nb > 1
    g = torch.Generator(device="cuda").manual_seed(0)
    if batched:
        a = torch.randn(nb, m, k, device="cuda", generator=g)
        b = torch.randn(nb, k, n, device="cuda", generator=g)
        ref = torch.bmm(a.double(), b.double())
    else:
        a = torch.randn(m, k, device="cuda", generator=g)
        b = torch.randn(k, n, device="cuda", generator=g)
        ref = a.double() @ b.double()
    ref_max = ref.abs().max().item()
    flop = 2.0 * nb * m * n * k
    fns, parts = methods(a, b, batched)
    rows = {}
    for meth in method_names:
        if time.time() > budget_end:
            rows[meth] = {"skipped": "time budget"}
            continue
        t0 = time.time()
        try:
            c = fns[meth]()  # compile / tune / warm
            torch.cuda.synchronize()
            err = (c.double() - ref).abs().max().item() / ref_max
            finite = bool(torch.isfinite(c).all())
            del c
            ms = do_bench(fns[meth], warmup=10, rep=rep_ms, return_mode="median")
            cfg, tune = tuned_config(meth, a, b, batched)
            rows[meth] = {"ms": ms, "tflops": flop / ms / 1e9, "err": err, "finite": finite,
                          "config": cfg, "tune": tune, "wall_s": round(time.time() - t0, 1)}
        except Exception as e:
            rows[meth] = {"error": f"{type(e).__name__}: {str(e)[:400]}", "wall_s": round(time.time() - t0, 1)}
            log(traceback.format_exc(limit=3))
        torch.cuda.empty_cache()
        log(f"  {name:34s} {meth:26s} " + (
            f"{rows[meth]['ms']:8.3f} ms {rows[meth]['tflops']:7.1f} TF/s err {rows[meth]['err']:.2e}"
            f" ({rows[meth]['wall_s']} s) {rows[meth]['config'] or ''}" if "ms" in rows[meth]
            else str(rows[meth])))
    parts.clear()
    del a, b, ref
    torch.cuda.empty_cache()
    base = rows.get("cublas_fp32", {})
    if "ms" in base:
        for r in rows.values():
            if "ms" in r:
                r["speedup"] = base["ms"] / r["ms"]
                r["err_ratio"] = r["err"] / base["err"] if base["err"] else float("inf")
                r["admissible"] = bool(r["err"] <= base["err"] and r["finite"])
    return {"shape": {"batch": nb, "M": m, "K": k, "N": n}, "flop": flop, "methods": rows}


#: a safety margin for the second geomean: admissible with rho <= MARGIN
MARGIN = 0.9


def _best(res, max_rho):
    best, best_s = None, 1.0
    for meth, r in res["methods"].items():
        if meth == "cublas_fp32" or not INFO[meth][1] or not r.get("admissible"):
            continue
        if r["err_ratio"] <= max_rho and r["speedup"] > best_s:
            best, best_s = meth, r["speedup"]
    return {"best": best, "speedup": best_s}


def _geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def summarize(results):
    per_shape = {name: _best(res, 1.0) for name, res in results["shapes"].items()}
    margin = {name: _best(res, MARGIN) for name, res in results["shapes"].items()}
    gm = _geomean([v["speedup"] for v in per_shape.values()])
    per_method = {}
    for meth in INFO:
        vals = []
        for res in results["shapes"].values():
            r = res["methods"].get(meth, {})
            vals.append(r["speedup"] if r.get("admissible") and r["speedup"] > 1 else 1.0)
        if vals:
            per_method[meth] = math.exp(sum(math.log(v) for v in vals) / len(vals))
    return {"best_per_shape": per_shape, "geomean_best_admissible": gm,
            "best_per_shape_margin": margin, "margin_rho": MARGIN,
            "geomean_best_admissible_margin": _geomean([v["speedup"] for v in margin.values()]),
            "geomean_per_method_admissible_else_1": per_method}


def markdown(results):
    lines = [f"# fp32 GEMMs on {results['env']['gpu']}: cuBLAS vs emulated fp32 on tensor cores", "",
             f"{results['env']['date']}; torch {results['env']['torch']}, triton {results['env']['triton']}, "
             f"CUDA {results['env']['cuda']}.", "",
             f"Command: `{results['env']['command']}`", "",
             "Time: `triton.testing.do_bench` median (L2 flushed), whole call (split pass included). "
             "err = max|C − C64| / max|C64| against a float64 GEMM of the same inputs (randn); "
             "ρ = err / err(cuBLAS fp32); ✓ = admissible (ρ ≤ 1). Shapes are B×M×K×N.", ""]
    names = list(results["shapes"])
    for name in names:
        res = results["shapes"][name]
        s = res["shape"]
        lines += [f"## {name} (B={s['batch']}, M={s['M']}, K={s['K']}, N={s['N']})", "",
                  "| method | ms | TFLOP/s | vs cuBLAS fp32 | err | ρ | adm. | config |",
                  "|---|---|---|---|---|---|---|---|"]
        for meth, r in res["methods"].items():
            if "ms" in r:
                lines.append(f"| {meth} | {r['ms']:.3f} | {r['tflops']:.1f} | {r.get('speedup', float('nan')):.2f}× | "
                             f"{r['err']:.2e} | {r.get('err_ratio', float('nan')):.3g} | "
                             f"{'✓' if r.get('admissible') else '✗'} | {r.get('config') or ''} |")
            else:
                lines.append(f"| {meth} | — | — | — | — | — | — | {r.get('error') or r.get('skipped')} |")
        lines.append("")
    sm = results.get("summary")
    if sm:
        lines += ["## Summary: best admissible method per shape (speedup vs cuBLAS fp32)", "",
                  "| shape | best admissible | speedup |", "|---|---|---|"]
        for name, v in sm["best_per_shape"].items():
            lines.append(f"| {name} | {v['best'] or '(none faster: 1.0×)'} | {v['speedup']:.2f}× |")
        if sm["geomean_best_admissible"]:
            lines += ["", f"**Geomean of the best admissible method per shape: "
                          f"{sm['geomean_best_admissible']:.2f}×** over {len(sm['best_per_shape'])} shapes.", ""]
        if sm.get("geomean_best_admissible_margin"):
            lines += [f"With a margin (only methods at ρ ≤ {sm['margin_rho']} count): "
                      f"**{sm['geomean_best_admissible_margin']:.2f}×** — "
                      + ", ".join(f"{k}: {v['best'] or 'none'} {v['speedup']:.2f}×"
                                  for k, v in sm["best_per_shape_margin"].items()), ""]
        lines += ["Geomean per single method (admissible and faster, else 1.0×):", ""]
        for meth, v in sm["geomean_per_method_admissible_else_1"].items():
            if INFO[meth][1] and meth != "cublas_fp32":
                lines.append(f"- {meth}: {v:.2f}×")
        lines.append("")
    if results.get("tf32_operand_rounding"):
        lines += ["TF32 operand reading (bit-equality of a TF32 product on raw fp32 operands with the same "
                  f"product on pre-truncated / pre-rounded operands): `{json.dumps(results['tf32_operand_rounding'])}`", ""]
    if results.get("checks"):
        lines += ["Checks (max error vs float64, small shapes):", ""]
        lines += [f"- {k}: {v:.2e}" if isinstance(v, float) else f"- {k}: {v}" for k, v in results["checks"].items()]
        lines.append("")
    lines += ["Methods:", ""] + [f"- `{k}`: {v[0]}" for k, v in INFO.items()] + [""]
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--smoke", action="store_true", help="two shapes, all methods, plus checks")
    ap.add_argument("--shapes", default=None, help="comma-separated names (substrings) of SHAPES")
    ap.add_argument("--methods", default=None, help="comma-separated method names")
    ap.add_argument("--rep-ms", type=float, default=60.0, help="do_bench rep per method (ms)")
    ap.add_argument("--budget-s", type=float, default=260.0, help="skip methods after this many seconds")
    ap.add_argument("--checks", action="store_true", help="run the small correctness checks")
    args = ap.parse_args(argv)
    start = time.time()
    os.makedirs(args.out, exist_ok=True)
    logf = open(os.path.join(args.out, "gemm_fp32.log"), "w")

    def log(msg):
        print(msg, flush=True)
        logf.write(msg + "\n")
        logf.flush()

    import triton
    shape_names = SMOKE_SHAPES if args.smoke else list(SHAPES)
    if args.shapes:
        want = [s.strip() for s in args.shapes.split(",")]
        shape_names = [n for n in SHAPES if any(w in n for w in want)]
    meth_names = args.methods.split(",") if args.methods else list(INFO)
    results = {"env": {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "triton": triton.__version__, "cuda": torch.version.cuda,
                       "python": platform.python_version(), "host": platform.node(),
                       "sms": torch.cuda.get_device_properties(0).multi_processor_count,
                       "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                       "command": " ".join([os.path.basename(sys.executable)] + sys.argv)},
               "shapes": {}}

    def dump():
        with open(os.path.join(args.out, "gemm_fp32.json"), "w") as f:
            json.dump(results, f, indent=1)
        with open(os.path.join(args.out, "gemm_fp32.md"), "w") as f:
            f.write(markdown(results))

    try:
        results["tf32_operand_rounding"] = tf32_operand_rounding()
        log(f"tf32 operand reading: {results['tf32_operand_rounding']}")
    except Exception as e:
        results["tf32_operand_rounding"] = {"error": repr(e)[:300]}
    if args.smoke or args.checks:
        try:
            results["checks"] = checks()
        except Exception as e:
            results["checks"] = {"error": f"{type(e).__name__}: {str(e)[:400]}"}
            log(traceback.format_exc(limit=4))
        log(f"checks: {json.dumps(results['checks'], indent=0)}")
    dump()
    budget_end = start + args.budget_s
    for name in shape_names:
        results["shapes"][name] = bench_shape(name, SHAPES[name], meth_names, args.rep_ms, budget_end, log)
        results["summary"] = summarize(results)
        results["env"]["wall_s"] = round(time.time() - start, 1)
        dump()
    log(markdown(results))
    log(f"total wall {time.time() - start:.1f} s")


if __name__ == "__main__":
    main()
