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

  peers.py torch|jax [--quick] [--runs 20]   -> JSON lines on stdout
  peers.py report EMILY.jsonl PEER.jsonl...   -> the comparison table
"""
import argparse
import json
import statistics
import sys
import time


def sizes(quick):
    n = (1 << 22) if quick else (1 << 28)
    rows = 1024 if quick else 65536
    m = 1024 if quick else 8192
    return n, rows, n // rows, m


def emit(name, ms, unit, rate, note=""):
    print(json.dumps({"case": name, "ms": round(ms, 4), unit: round(rate, 2), "note": note}), flush=True)


def chain_emit(framework, host_s, total_s, n):
    print(json.dumps({"case": "chain_add_1elem", "framework": framework, "n": n,
                      "host_us_per_op": round(1e6 * host_s / n, 3),
                      "total_us_per_op": round(1e6 * total_s / n, 3)}), flush=True)


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

    def timed(fn):
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        ts = []
        for _ in range(runs):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            ts.append(s.elapsed_time(e))
        return statistics.median(ts)

    ms = timed(lambda: a + b)
    emit(f"add_f32_{n}", ms, "GB/s", 12.0 * n / (ms * 1e6), "bytes read + written")
    ms = timed(lambda: a.sum())
    emit(f"sum_f32_{n}", ms, "GB/s", 4.0 * n / (ms * 1e6), "bytes read")
    mat = a.view(rows, cols)
    ms = timed(lambda: mat.sum(dim=1))
    emit(f"rowsum_f32_{rows}x{cols}", ms, "GB/s", 4.0 * n / (ms * 1e6), "bytes read")
    for name, dt in (("bf16", torch.bfloat16), ("f16", torch.float16), ("f32", torch.float32)):
        x = a[: m * m].view(m, m).to(dt)
        y = b[: m * m].view(m, m).to(dt)
        ms = timed(lambda: x @ y)
        emit(f"matmul_{name}_{m}", ms, "TFLOP/s", 2.0 * m ** 3 / (ms * 1e9),
             "no TF32" if name == "f32" else "")
        del x, y
    # the chain of tiny eager adds
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

    ms = timed(jax.jit(lambda x, y: x + y), a, b)
    emit(f"add_f32_{n}", ms, "GB/s", 12.0 * n / (ms * 1e6), "bytes read + written")
    ms = timed(jax.jit(lambda x: jnp.sum(x)), a)
    emit(f"sum_f32_{n}", ms, "GB/s", 4.0 * n / (ms * 1e6), "bytes read")
    mat = a.reshape(rows, cols)
    ms = timed(jax.jit(lambda x: jnp.sum(x, axis=1)), mat)
    emit(f"rowsum_f32_{rows}x{cols}", ms, "GB/s", 4.0 * n / (ms * 1e6), "bytes read")
    for name, dt in (("bf16", jnp.bfloat16), ("f16", jnp.float16), ("f32", jnp.float32)):
        x = a[: m * m].reshape(m, m).astype(dt)
        y = b[: m * m].reshape(m, m).astype(dt)
        prec = lax.Precision.HIGHEST if name == "f32" else lax.Precision.DEFAULT
        f = jax.jit(lambda p, q, prec=prec: jnp.matmul(p, q, precision=prec))
        ms = timed(f, x, y)
        emit(f"matmul_{name}_{m}", ms, "TFLOP/s", 2.0 * m ** 3 / (ms * 1e9),
             "precision HIGHEST (no TF32)" if name == "f32" else "")
        del x, y
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
    hdr = f"{'case':30} {'emily':>12}"
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

    for c in cases:
        e, unit = metric(emily.get(c))
        line = f"{c:30} {('%.4g %s' % (e, unit)) if e is not None else 'missing':>12}"
        if emily.get(c, {}).get("check", "ok") != "ok":
            line += " (WRONG)"
        for _, d in peers:
            p, _ = metric(d.get(c))
            ratio = (p / e) if (p is not None and e) else None
            line += f" {('%.4g' % p) if p is not None else '-':>12} {('%.2f' % ratio) if ratio else '-':>7}"
        print(line)
    print("ratio = peer time / Emily time (> 1: Emily faster). ms are medians of CUDA-event (emily, torch) "
          "or host-clock (jax) timings; chain: host microseconds per op issued.")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["torch", "jax", "report"])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
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
