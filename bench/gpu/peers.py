#!/usr/bin/env python3
"""PyTorch and JAX peers of bench/gpu/emily_bench.c and bench/gpu/chain.c.

Same cases and sizes as Emily's programs, random data, warm-up first,
median of many runs:

  torch: CUDA events around each call (torch.cuda.Event);
  jax:   jitted functions, host clock around call + block_until_ready
         (JAX has no user-visible CUDA events; the few microseconds of
         dispatch are small against these sizes).

f32 matmuls run without TF32 in both (torch.backends.cuda.matmul.allow_tf32
= False; jax precision HIGHEST for f32 only). The chain case is 10,000
dependent eager adds of 1-element tensors: host time per op.

torch also runs the FP8 dots of issue 17 (torch_fp8: torch._scaled_mm
against emily_dot_fp8) and the family cases of issue 19 (torch_families: sort,
argsort, top_k, take, indexed_add, cumsum, fft, max-pool, conv2d, solve,
cholesky, qr, svd, batched small solves) with emily_bench.c's shapes and
names; jax runs the first group only.

  peers.py torch|jax [--quick] [--runs 20] [--only NAME,...]  -> JSON lines
  peers.py report EMILY.jsonl PEER.jsonl...   -> the comparison table
"""
import argparse
import json
import math
import statistics
import sys
import time


def sizes(quick):
    n = (1 << 22) if quick else (1 << 28)
    rows = 1024 if quick else 65536
    m = 1024 if quick else 8192
    return n, rows, n // rows, m


ONLY = None  # --only: name prefixes


def want(name):
    return ONLY is None or any(name.startswith(p) for p in ONLY)


def emit(name, ms, unit, rate, note=""):
    print(json.dumps({"case": name, "ms": round(ms, 4), unit: round(rate, 2), "note": note}), flush=True)


def chain_emit(framework, host_s, total_s, n):
    print(json.dumps({"case": "chain_add_1elem", "framework": framework, "n": n,
                      "host_us_per_op": round(1e6 * host_s / n, 3),
                      "total_us_per_op": round(1e6 * total_s / n, 3)}), flush=True)


def first_group(n, rows, cols, m, add_ms, sum_ms, rowsum_ms, matmul_ms, f32_note):
    """The cases both frameworks run (add, sum, rowsum, the matmuls), each
    timed by the framework's callable, which returns the median ms:
    add_ms(), sum_ms(), rowsum_ms() and matmul_ms(name) (name: bf16, f16,
    f32). A case --only leaves out is not timed."""
    if want(f"add_f32_{n}"):
        ms = add_ms()
        emit(f"add_f32_{n}", ms, "GB/s", 12.0 * n / (ms * 1e6), "bytes read + written")
    if want(f"sum_f32_{n}"):
        ms = sum_ms()
        emit(f"sum_f32_{n}", ms, "GB/s", 4.0 * n / (ms * 1e6), "bytes read")
    if want(f"rowsum_f32_{rows}x{cols}"):
        ms = rowsum_ms()
        emit(f"rowsum_f32_{rows}x{cols}", ms, "GB/s", 4.0 * n / (ms * 1e6), "bytes read")
    for name in ("bf16", "f16", "f32"):
        if want(f"matmul_{name}_{m}"):
            ms = matmul_ms(name)
            emit(f"matmul_{name}_{m}", ms, "TFLOP/s", 2.0 * m ** 3 / (ms * 1e9), f32_note if name == "f32" else "")


def run_torch(quick, runs):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = "cuda"
    n, rows, cols, m = sizes(quick)
    g = torch.Generator(device=dev)
    g.manual_seed(1)
    a = torch.rand(n, device=dev, generator=g) * 2 - 1
    b = torch.rand(n, device=dev, generator=g) * 2 - 1

    def timed(fn, count=runs):
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        ts = []
        for _ in range(count):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            ts.append(s.elapsed_time(e))
        return statistics.median(ts)

    def matmul_ms(name):
        dt = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[name]
        x = a[: m * m].view(m, m).to(dt)
        y = b[: m * m].view(m, m).to(dt)
        return timed(lambda: x @ y)

    first_group(n, rows, cols, m,
                add_ms=lambda: timed(lambda: a + b),
                sum_ms=lambda: timed(lambda: a.sum()),
                rowsum_ms=lambda: timed(lambda: a.view(rows, cols).sum(dim=1)),
                matmul_ms=matmul_ms, f32_note="no TF32")
    torch_fp8(torch, m, a, b, timed, dev)
    torch_families(torch, quick, a, b, timed, dev, g)
    # the chain of tiny eager adds
    if not want("chain_add_1elem"):
        return
    one = torch.ones(1, device=dev)
    count = 10000
    res = []
    for rep in range(6):
        x = torch.zeros(1, device=dev)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(count if rep else 1000):
            x = x + one
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        if rep:
            res.append((t1 - t0, t2 - t0))
    res.sort()
    chain_emit("torch", res[len(res) // 2][0], statistics.median(r[1] for r in res), count)


def torch_fp8(torch, m, a, b, timed, dev):
    """emily_bench.c's bench_fp8: an m^3 product of float8_e4m3fn operands
    through torch._scaled_mm (cuBLASLt), unit scales, f32 and bf16 output.
    _scaled_mm wants its second operand column-major: the transpose of an
    [N, K] row-major matrix, Emily's b contracted on its axis 1."""
    rows = [(f"dot_fp8_e4m3_{m}_{suffix}", dt) for suffix, dt in (("f32", torch.float32), ("bf16", torch.bfloat16))]
    if not any(want(name) for name, _ in rows):
        return
    x = a[: m * m].view(m, m).to(torch.float8_e4m3fn)
    w = b[: m * m].view(m, m).to(torch.float8_e4m3fn)  # [N, K]
    one = torch.ones((), device=dev, dtype=torch.float32)
    for name, dt in rows:
        if not want(name):
            continue
        try:
            ms = timed(lambda: torch._scaled_mm(x, w.t(), scale_a=one, scale_b=one, out_dtype=dt))
        except (RuntimeError, TypeError) as err:  # an older torch, or no FP8 on this GPU
            print(f"peers.py: {name}: torch._scaled_mm failed: {err}", file=sys.stderr)
            continue
        emit(name, ms, "TFLOP/s", 2.0 * m ** 3 / (ms * 1e9), "torch._scaled_mm, float8_e4m3fn, unit scales")
    del x, w


def torch_families(torch, quick, a, b, timed, dev, g):
    """The family cases of emily_bench.c (bench_families), same names and
    shapes, random data of the same kinds. Every call is timed as it is
    (outputs allocated by the call, as Emily's are)."""
    import torch.nn.functional as F

    def run(name, fn, unit, rate, note="", runs_cap=None):
        if not want(name):
            return
        try:
            ms = timed(fn) if runs_cap is None else timed(fn, runs_cap)
        except Exception as exc:  # a case torch cannot run is reported, not fatal
            print(f"torch: {name}: {exc}", file=sys.stderr)
            return
        emit(name, ms, unit, rate(ms), note)

    # sort and argsort: stable, ascending (Nx's sort is stable)
    n = (1 << 20) if quick else (1 << 26)
    x = a[:n]
    run(f"sort_f32_{n}", lambda: torch.sort(x, stable=True), "Gkeys/s", lambda ms: n / (ms * 1e6),
        "torch.sort stable=True (values and indices)")
    run(f"argsort_f32_{n}", lambda: torch.argsort(x, stable=True), "Gkeys/s", lambda ms: n / (ms * 1e6),
        "torch.argsort stable=True")
    del x
    # top_k
    rows, cols, k = 32, 50000, 50
    x = a[: rows * cols].view(rows, cols)
    run(f"top_k_f32_{rows}x{cols}_k{k}", lambda: torch.topk(x, k, dim=1), "Gelem/s",
        lambda ms: rows * cols / (ms * 1e6), "torch.topk sorted")
    del x
    # take: an embedding lookup, 1M x 768 bf16 table, 64k int32 indices
    v, d, q = (16384, 768, 4096) if quick else (1 << 20, 768, 65536)
    if want(f"take_bf16_{v}x{d}_by_{q}"):
        table = torch.randn(v, d, device=dev, dtype=torch.bfloat16, generator=g)
        idx = torch.randint(0, v, (q,), device=dev, dtype=torch.int32, generator=g)
        run(f"take_bf16_{v}x{d}_by_{q}", lambda: torch.index_select(table, 0, idx), "GB/s",
            lambda ms: 4.0 * q * d / (ms * 1e6), "torch.index_select, int32 indices")
        del table, idx
    # indexed_add: embedding gradient, out of place into zeros (GPT-2 vocabulary)
    v, d, q = (1000, 768, 4096) if quick else (50257, 768, 65536)
    if want(f"indexed_add_f32_{v}x{d}_by_{q}"):
        target = torch.zeros(v, d, device=dev)
        idx = torch.randint(0, v, (q,), device=dev, dtype=torch.int32, generator=g)
        upd = a[: q * d].view(q, d)
        run(f"indexed_add_f32_{v}x{d}_by_{q}", lambda: target.index_add(0, idx, upd), "GB/s",
            lambda ms: 4.0 * (q * d + 2 * v * d) / (ms * 1e6), "Tensor.index_add (out of place, atomics)")
        del target, idx, upd
    # cumsum of the whole vector
    na = int(a.numel())
    run(f"cumsum_f32_{na}", lambda: torch.cumsum(a, 0), "GB/s", lambda ms: 8.0 * na / (ms * 1e6),
        "torch.cumsum (f32 accumulation)")
    # fft c64
    n = (1 << 16) if quick else (1 << 24)
    if want(f"fft_c64_{n}"):
        xc = torch.view_as_complex(a[: 2 * n].view(n, 2))
        run(f"fft_c64_{n}", lambda: torch.fft.fft(xc), "GFLOP/s",
            lambda ms: 5.0 * n * math.log2(n) / (ms * 1e6), "torch.fft.fft (cuFFT)")
        del xc
    # max-pool 3x3 stride 2 padding 1
    bb, c = (4, 16) if quick else (64, 256)
    x = a[: bb * c * 56 * 56].view(bb, c, 56, 56)
    run(f"max_pool_3x3_s2_f32_{bb}x{c}x56x56", lambda: F.max_pool2d(x, 3, 2, 1), "GB/s",
        lambda ms: 4.0 * bb * c * (56 * 56 + 28 * 28) / (ms * 1e6), "F.max_pool2d(x, 3, 2, 1)")
    del x
    # conv2d 3x3, 256 channels, bf16, NCHW, padding 1
    nb, c, h = (2, 32, 28) if quick else (32, 256, 56)
    if want(f"conv2d_3x3_bf16_{nb}x{c}x{h}x{h}"):
        x = a[: nb * c * h * h].view(nb, c, h, h).to(torch.bfloat16)
        w = b[: c * c * 9].view(c, c, 3, 3).to(torch.bfloat16)
        run(f"conv2d_3x3_bf16_{nb}x{c}x{h}x{h}", lambda: F.conv2d(x, w, padding=1), "TFLOP/s",
            lambda ms: 2.0 * nb * c * h * h * c * 9 / (ms * 1e9), "F.conv2d NCHW (cuDNN, benchmark off)")
        del x, w
    # linear algebra, f32
    n = 256 if quick else 4096
    m = 128 if quick else 2048
    if want(f"solve_f32_{n}"):
        A = a[: n * n].view(n, n).clone()
        rhs = b[:n].clone()
        run(f"solve_f32_{n}", lambda: torch.linalg.solve(A, rhs), "GFLOP/s",
            lambda ms: (2.0 / 3.0 * n ** 3 + 2.0 * n * n) / (ms * 1e6), "torch.linalg.solve", runs_cap=5)
        del A, rhs
    if want(f"cholesky_f32_{n}"):
        R = b[: n * n].view(n, n)
        S = (R + R.T) / 2 + n * torch.eye(n, device=dev)
        run(f"cholesky_f32_{n}", lambda: torch.linalg.cholesky(S), "GFLOP/s", lambda ms: n ** 3 / 3.0 / (ms * 1e6),
            "torch.linalg.cholesky", runs_cap=5)
        del R, S
    if want(f"qr_f32_{n}"):
        A = a[: n * n].view(n, n).clone()
        run(f"qr_f32_{n}", lambda: torch.linalg.qr(A), "GFLOP/s", lambda ms: 4.0 / 3.0 * n ** 3 / (ms * 1e6),
            "torch.linalg.qr reduced", runs_cap=5)
        del A
    if want(f"svd_f32_{m}"):
        A = b[: m * m].view(m, m).clone()
        run(f"svd_f32_{m}", lambda: torch.linalg.svd(A, full_matrices=False), "calls/s", lambda ms: 1000.0 / ms,
            "torch.linalg.svd full_matrices=False", runs_cap=5)
        del A
    bsz = 1024 if quick else 65536
    if want(f"solve_batched_f32_{bsz}x4x4"):
        A = a[: 16 * bsz].view(bsz, 4, 4) + 4 * torch.eye(4, device=dev)
        rhs = b[: 4 * bsz].view(bsz, 4)
        run(f"solve_batched_f32_{bsz}x4x4", lambda: torch.linalg.solve(A, rhs), "Msolves/s",
            lambda ms: bsz / (ms * 1e3), "torch.linalg.solve batched")
        del A, rhs
    # fused attention (emily_bench.c's bench_sdpa): bf16 {B, H, S, D}, the
    # default scale, causal and not; PyTorch dispatches to its cuDNN or
    # flash kernel
    sb, sh, ss, sd = (1, 2, 256, 128) if quick else (8, 16, 4096, 128)
    sn = sb * sh * ss * sd
    for causal in (True, False):
        name = f"sdpa_bf16_{sb}x{sh}x{ss}x{sd}" + ("_causal" if causal else "")
        if not want(name) or a.numel() < 2 * sn or b.numel() < sn:
            continue
        q = a[:sn].view(sb, sh, ss, sd).to(torch.bfloat16)
        k = b[:sn].view(sb, sh, ss, sd).to(torch.bfloat16)
        v = a[sn:2 * sn].view(sb, sh, ss, sd).to(torch.bfloat16)
        flops = 4.0 * sb * sh * ss * ss * sd * (0.5 if causal else 1.0)
        run(name, lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), "TFLOP/s",
            lambda ms, flops=flops: flops / (ms * 1e9), "torch.nn.functional.scaled_dot_product_attention")
        del q, k, v

    # fused norms (emily_bench.c's bench_norms): bf16 {R, C}, eps 1e-5,
    # and the copy bandwidth they are judged by
    nr, nc = (1024, 1024) if quick else (16384, 4096)
    x = a[: nr * nc].view(nr, nc).to(torch.bfloat16)
    gw = b[:nc].to(torch.bfloat16)
    bw = b[nc: 2 * nc].to(torch.bfloat16)
    nbytes = 2.0 * 2.0 * nr * nc
    run(f"copy_bf16_{nr}x{nc}", lambda: x.clone(), "GB/s", lambda ms: nbytes / (ms * 1e6),
        "x.clone(): one read, one write")
    run(f"rms_norm_bf16_{nr}x{nc}", lambda: F.rms_norm(x, (nc,), gw, 1e-5), "GB/s",
        lambda ms: nbytes / (ms * 1e6), "torch.nn.functional.rms_norm")
    run(f"layer_norm_bf16_{nr}x{nc}", lambda: F.layer_norm(x, (nc,), gw, bw, 1e-5), "GB/s",
        lambda ms: nbytes / (ms * 1e6), "torch.nn.functional.layer_norm")
    del x, gw, bw


def run_jax(quick, runs):
    import jax
    import jax.numpy as jnp
    from jax import lax
    n, rows, cols, m = sizes(quick)
    key = jax.random.PRNGKey(1)
    ka, kb = jax.random.split(key)
    a = jax.random.uniform(ka, (n,), jnp.float32, -1.0, 1.0)
    b = jax.random.uniform(kb, (n,), jnp.float32, -1.0, 1.0)

    def timed(fn, *args):
        for _ in range(3):
            fn(*args).block_until_ready()
        ts = []
        for _ in range(runs):
            t0 = time.perf_counter()
            fn(*args).block_until_ready()
            ts.append(1e3 * (time.perf_counter() - t0))
        return statistics.median(ts)

    def matmul_ms(name):
        dt = {"bf16": jnp.bfloat16, "f16": jnp.float16, "f32": jnp.float32}[name]
        x = a[: m * m].reshape(m, m).astype(dt)
        y = b[: m * m].reshape(m, m).astype(dt)
        prec = lax.Precision.HIGHEST if name == "f32" else lax.Precision.DEFAULT
        return timed(jax.jit(lambda p, q: jnp.matmul(p, q, precision=prec)), x, y)

    first_group(n, rows, cols, m,
                add_ms=lambda: timed(jax.jit(lambda x, y: x + y), a, b),
                sum_ms=lambda: timed(jax.jit(lambda x: jnp.sum(x)), a),
                rowsum_ms=lambda: timed(jax.jit(lambda x: jnp.sum(x, axis=1)), a.reshape(rows, cols)),
                matmul_ms=matmul_ms, f32_note="precision HIGHEST (no TF32)")
    if not want("chain_add_1elem"):
        return
    one = jnp.ones((1,), jnp.float32)
    count = 10000
    res = []
    for rep in range(6):
        x = jnp.zeros((1,), jnp.float32).block_until_ready()
        t0 = time.perf_counter()
        for _ in range(count if rep else 1000):
            x = x + one
        t1 = time.perf_counter()
        x.block_until_ready()
        t2 = time.perf_counter()
        if rep:
            res.append((t1 - t0, t2 - t0))
    res.sort()
    chain_emit("jax", res[len(res) // 2][0], statistics.median(r[1] for r in res), count)


def load(path):
    out = {}
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    try:
                        r = json.loads(line)
                        out[r["case"]] = r
                    except (ValueError, KeyError):
                        pass
    except OSError:
        pass
    return out


def report(emily_path, peer_paths):
    emily = load(emily_path)
    peers = [(p.rsplit("/", 1)[-1].split(".")[0], load(p)) for p in peer_paths]
    cases = list(emily.keys())
    for _, d in peers:
        cases += [c for c in d if c not in cases]
    w = max([30] + [len(c) for c in cases])
    hdr = f"{'case':{w}} {'emily':>12}"
    for name, _ in peers:
        hdr += f" {name:>12} {'ratio':>7}"
    print(hdr)
    print("-" * len(hdr))

    def metric(r):
        if r is None:
            return None, ""
        if "host_us_per_op" in r:
            return r["host_us_per_op"], "us/op"
        return r.get("ms"), "ms"

    failed = []
    for c in cases:
        e, unit = metric(emily.get(c))
        check = emily.get(c, {}).get("check", "ok")
        shown = ('%.4g %s' % (e, unit)) if e is not None else "FAILED" if check == "FAILED" else "missing"
        line = f"{c:{w}} {shown:>12}"
        if check == "WRONG":
            line += " (WRONG)"
        if check == "FAILED":
            failed.append(f"{c}: {emily[c].get('note', '')}")
        for _, d in peers:
            p, _ = metric(d.get(c))
            ratio = (p / e) if (p is not None and e) else None
            line += f" {('%.4g' % p) if p is not None else '-':>12} {('%.2f' % ratio) if ratio else '-':>7}"
        print(line)
    print("ratio = peer time / Emily time (> 1: Emily faster). ms are medians of CUDA-event (emily, torch) "
          "or host-clock (jax) timings; chain: host microseconds per op issued.")
    for f in failed:
        print(f"FAILED {f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["torch", "jax", "report"])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--only", default=None, help="comma-separated case-name prefixes")
    args = ap.parse_args()
    global ONLY
    ONLY = args.only.split(",") if args.only else None
    if args.what == "torch":
        run_torch(args.quick, args.runs)
    elif args.what == "jax":
        run_jax(args.quick, args.runs)
    else:
        if not args.files:
            sys.exit("report needs EMILY.jsonl and peer files")
        report(args.files[0], args.files[1:])


if __name__ == "__main__":
    main()
