#!/usr/bin/env python3
"""CPU benchmark of the later op families: Emily (libemily through
bench/build/libemily_families.so, built from bench/timing_families.c) against
numpy/scipy, in the same run, on the same data.

Method as bench/run.py: inputs made with numpy (fixed seed); Emily's result is
checked first (against numpy/scipy, decompositions by reconstruction), then both
sides are timed: warm-up, then the median of several measurements (fewer at the
big sizes, each side capped at a few seconds). Emily's loop is in C; each call
creates and releases its outputs. ratio = peer time / Emily time (>= 1: Emily
at least as fast). Start it with bench/run_families."""

import argparse
import ctypes
import datetime
import os
import platform
import subprocess
import sys
import time

import numpy as np
import scipy
import scipy.linalg

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LIB = os.path.join(HERE, "build", "libemily_families.so")

sys.path.insert(0, HERE)
import results_sections  # noqa: E402
from machine import cpu_model  # noqa: E402

EMILY_DT = {"f32": 10, "f64": 11, "c64": 12, "c128": 13, "s32": 6, "s64": 7}
NP_OF_CODE = {10: np.float32, 11: np.float64, 12: np.complex64, 13: np.complex128,
              6: np.int32, 7: np.int64}
CODE_OF_NP = {np.dtype(v): k for k, v in NP_OF_CODE.items()}

MAX_SECONDS = 0.4   # per side, per case and round (at least 3 measurements)
MIN_MEASURE_S = 0.002
# numpy's own OpenBLAS and the Debian OpenBLAS that Emily links both keep
# their worker threads spinning for about 0.1 s after a call; on 2 cores
# the idle side's spinning threads took up to half the CPU from the side
# being timed (64 x 128^2 f32 matmul: Emily 2.0 to 5.5 ms from run to run).
# Each side is timed after this pause.
SETTLE_S = 0.3
ROUNDS = 3

lib = None


def load_lib():
    global lib
    lib = ctypes.CDLL(LIB)
    lib.fam_error.restype = ctypes.c_char_p
    lib.fam_emily_version.restype = ctypes.c_char_p
    lib.fam_live.restype = ctypes.c_longlong
    lib.fam_input.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int,
                              ctypes.POINTER(ctypes.c_int64), ctypes.c_void_p, ctypes.c_size_t]
    lib.fam_run.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int64), ctypes.c_int]
    lib.fam_out_info.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                                 ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int64)]
    lib.fam_out_copy.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]
    lib.fam_time.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int64), ctypes.c_int,
                             ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_double,
                             ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double),
                             ctypes.POINTER(ctypes.c_int)]


class EmilyError(Exception):
    pass


def err():
    return lib.fam_error().decode(errors="replace")


def emily_load(inputs):
    for i, a in enumerate(inputs):
        a = np.ascontiguousarray(a)
        shape = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
        rc = lib.fam_input(i, CODE_OF_NP[a.dtype], a.ndim, shape, a.ctypes.data, a.nbytes)
        if rc:
            raise EmilyError(err())


def params_arr(params):
    return (ctypes.c_int64 * max(len(params), 1))(*params), len(params)


def emily_run(op, params):
    p, n = params_arr(params)
    rc = lib.fam_run(op.encode(), p, n)
    if rc:
        raise EmilyError(("NOT IMPLEMENTED: " if rc == 1 else "") + err())
    outs = []
    for i in range(3):
        dt, rank, shape = ctypes.c_int(), ctypes.c_int(), (ctypes.c_int64 * 8)()
        if lib.fam_out_info(i, ctypes.byref(dt), ctypes.byref(rank), shape) != 0:
            break
        arr = np.empty(tuple(shape[:rank.value]), dtype=NP_OF_CODE[dt.value])
        if lib.fam_out_copy(i, arr.ctypes.data, arr.nbytes):
            raise EmilyError(err())
        outs.append(arr)
    return outs


def emily_time(op, params, warmup, inner, reps):
    p, n = params_arr(params)
    med, done = ctypes.c_double(), ctypes.c_int()
    rc = lib.fam_time(op.encode(), p, n, warmup, inner, reps, MAX_SECONDS,
                      ctypes.byref(med), None, ctypes.byref(done))
    if rc:
        raise EmilyError(err())
    return med.value * 1e-9, done.value


def peer_time(fn, warmup, inner, reps):
    for _ in range(warmup):
        fn()
    samples = []
    start = time.perf_counter()
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        t1 = time.perf_counter()
        samples.append((t1 - t0) / inner)
        if len(samples) >= 3 and t1 - start > MAX_SECONDS:
            break
    return float(np.median(samples)), len(samples)


# ---------------------------------------------------------------- checks

def rel_max(got, ref):
    ref = np.asarray(ref)
    scale = np.max(np.abs(ref)) if ref.size else 1.0
    return float(np.max(np.abs(got.astype(ref.dtype) - ref)) / (scale or 1.0))


def close(got, ref, tol):
    r = rel_max(got, ref)
    return r <= tol, f"max rel err {r:.1e} (tol {tol:.0e})"


def exact(got, ref):
    ref = np.asarray(ref)
    if got.shape != ref.shape or got.dtype != ref.dtype:
        return False, f"got {got.dtype}{got.shape}, expected {ref.dtype}{ref.shape}"
    bad = np.count_nonzero(got != ref)
    return bad == 0, ("exact" if bad == 0 else f"{bad} element(s) differ")


def fro_rel(x, ref):
    return float(np.linalg.norm(x - ref) / np.linalg.norm(ref))


def check_all(parts):
    ok = all(p[0] for p in parts)
    return ok, "; ".join(p[1] for p in parts)


def tol_f(dt):
    return 1e-5 if dt == np.float32 else 1e-12


# ---------------------------------------------------------------- cases

class Case:
    def __init__(self, family, name, size, dtype, op, params, inputs, peer_text, peer,
                 check, target, mode=""):
        self.family, self.name, self.size, self.dtype = family, name, size, dtype
        self.op, self.params, self.inputs = op, params, inputs
        self.peer_text, self.peer, self.check = peer_text, peer, check
        self.target, self.mode = target, mode


def make_cases(rng, only):
    cases = []

    def want(fam):
        return not only or fam in only

    if want("matmul"):
        for n in (256, 1024, 2048):
            for dt in (np.float32, np.float64):
                for mode in ("HIGHEST", "FAST"):
                    def inputs(n=n, dt=dt):
                        return [rng.uniform(-1, 1, (n, n)).astype(dt),
                                rng.uniform(-1, 1, (n, n)).astype(dt)]

                    def check(outs, a, b):
                        ref = np.matmul(a.astype(np.float64), b.astype(np.float64))
                        return close(outs[0], ref, tol_f(a.dtype))
                    cases.append(Case("matmul", "matmul", f"{n}x{n}", np.dtype(dt).name,
                                      "matmul", [0], inputs, "np.matmul(a, b)",
                                      lambda a, b: (lambda: np.matmul(a, b)), check,
                                      0.95, mode))
    if want("bmatmul"):
        for mode in ("HIGHEST", "FAST"):
            def inputs():
                return [rng.uniform(-1, 1, (64, 128, 128)).astype(np.float32),
                        rng.uniform(-1, 1, (64, 128, 128)).astype(np.float32)]

            def check(outs, a, b):
                return close(outs[0], np.matmul(a.astype(np.float64), b.astype(np.float64)),
                             1e-5)
            cases.append(Case("bmatmul", "batched matmul", "64x128x128", "float32", "matmul",
                              [1], inputs, "np.matmul(a, b)",
                              lambda a, b: (lambda: np.matmul(a, b)), check, 0.95, mode))
    if want("conv"):
        def conv_ref(x, w):
            # numpy im2col + matmul: windows [N, C, H, W, 3, 3] . w [O, C, 3, 3]
            xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
            win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))
            y = np.tensordot(win, w, axes=([1, 4, 5], [1, 2, 3]))  # [N, H, W, O]
            return np.ascontiguousarray(y.transpose(0, 3, 1, 2))

        for mode in ("HIGHEST", "FAST"):
            def inputs():
                return [rng.uniform(-1, 1, (8, 64, 56, 56)).astype(np.float32),
                        rng.uniform(-1, 1, (64, 64, 3, 3)).astype(np.float32)]

            def check(outs, x, w):
                return close(outs[0], conv_ref(x.astype(np.float64), w.astype(np.float64)),
                             1e-5)
            cases.append(Case("conv", "conv2d 3x3 pad 1", "8x64x56x56,O=64", "float32", "conv",
                              [1], inputs, "numpy im2col (sliding_window_view) + tensordot",
                              lambda x, w: (lambda: conv_ref(x, w)), check, None, mode))
    N = 10**6
    if want("sort"):
        def inputs():
            return [rng.uniform(-4, 4, N).astype(np.float32)]
        cases.append(Case("sort", "sort", "1e6", "float32", "sort", [], inputs, "np.sort(a)",
                          lambda a: (lambda: np.sort(a)),
                          lambda outs, a: exact(outs[0], np.sort(a)), 1.0))
        cases.append(Case("sort", "argsort", "1e6", "float32", "argsort", [], inputs,
                          "np.argsort(a)", lambda a: (lambda: np.argsort(a)),
                          lambda outs, a: exact(outs[0], np.argsort(a, kind="stable")), 1.0))

        def topk_peer(a, k=10):
            idx = np.argpartition(a, -k)[-k:]
            return idx[np.argsort(-a[idx], kind="stable")]

        def topk_check(outs, a):
            idx = np.argsort(-a, kind="stable")[:10]
            return check_all([exact(outs[0], a[idx]), exact(outs[1], idx.astype(np.int64))])
        cases.append(Case("sort", "top_k k=10", "1e6", "float32", "top_k", [10], inputs,
                          "np.argpartition + sort of the k", lambda a: (lambda: topk_peer(a)),
                          topk_check, 1.0))
    if want("cumsum"):
        def inputs():
            return [rng.uniform(-4, 4, 10**7).astype(np.float32)]
        cases.append(Case("cumsum", "cumulative_sum", "1e7", "float32", "cumsum", [], inputs,
                          "np.cumsum(a)", lambda a: (lambda: np.cumsum(a)),
                          lambda outs, a: close(outs[0], np.cumsum(a.astype(np.float64)), 1e-6),
                          None))
    if want("fft"):
        for n in (2**16, 2**20):
            def inputs(n=n):
                return [(rng.uniform(-1, 1, n) + 1j * rng.uniform(-1, 1, n)).astype(np.complex64)]
            cases.append(Case("fft", "fft", f"2^{n.bit_length() - 1}", "complex64", "fft", [],
                              inputs, "np.fft.fft(a)", lambda a: (lambda: np.fft.fft(a)),
                              lambda outs, a: close(outs[0], np.fft.fft(a.astype(np.complex128)),
                                                    1e-5), 0.5))
    if want("linalg"):
        for n in (256, 1024):
            def spd(n=n):
                m = rng.uniform(-1, 1, (n, n))
                return m @ m.T + n * np.eye(n)

            def gen(n=n):
                return rng.uniform(-1, 1, (n, n)) + n ** 0.5 * np.eye(n)

            def solve_check(outs, a, b):
                x = outs[0]
                r = np.linalg.norm(a @ x - b) / (np.linalg.norm(a) * np.linalg.norm(x))
                return r <= 1e-13, f"residual {r:.1e}"
            cases.append(Case("linalg", "solve", f"{n}x{n}", "float64", "solve", [],
                              lambda gen=gen, n=n: [gen(), rng.uniform(-1, 1, (n, 1))],
                              "scipy.linalg.solve(a, b)",
                              lambda a, b: (lambda: scipy.linalg.solve(a, b)), solve_check, 0.9))

            def chol_check(outs, a):
                l = outs[0]
                return check_all([(np.allclose(l, np.tril(l)), "lower"),
                                  # Nx's cholesky divides by l_jj + 1e-10 (kept on
                                  # purpose, ops_linalg.h): ~1e-12 relative here
                                  (fro_rel(l @ l.T, a) <= 1e-10,
                                   f"|LL^T-A|/|A| {fro_rel(l @ l.T, a):.1e} (tol 1e-10: Nx's "
                                   "l_jj + 1e-10 divisor)")])
            cases.append(Case("linalg", "cholesky", f"{n}x{n}", "float64", "cholesky", [],
                              lambda spd=spd: [spd()], "np.linalg.cholesky(a)",
                              lambda a: (lambda: np.linalg.cholesky(a)), chol_check, 0.9))

            def qr_check(outs, a):
                q, r = outs
                k = q.shape[1]
                return check_all([(np.allclose(r, np.triu(r)), "R upper"),
                                  (fro_rel(q @ r, a) <= 1e-13, f"|QR-A|/|A| {fro_rel(q @ r, a):.1e}"),
                                  (np.linalg.norm(q.T @ q - np.eye(k)) <= 1e-12, "Q orthonormal")])
            cases.append(Case("linalg", "qr", f"{n}x{n}", "float64", "qr", [],
                              lambda gen=gen: [gen()], "np.linalg.qr(a)",
                              lambda a: (lambda: np.linalg.qr(a)), qr_check, 0.9))

            def svd_check(outs, a):
                u, s, vt = outs
                rec = (u * s) @ vt
                return check_all([(bool(np.all(np.diff(s) <= 0)), "s descending"),
                                  (fro_rel(rec, a) <= 1e-13, f"|USV^T-A|/|A| {fro_rel(rec, a):.1e}")])
            cases.append(Case("linalg", "svd", f"{n}x{n}", "float64", "svd", [],
                              lambda gen=gen: [gen()], "np.linalg.svd(a, full_matrices=False)",
                              lambda a: (lambda: np.linalg.svd(a, full_matrices=False)),
                              svd_check, 0.9))

            def eigh_check(outs, a):
                w, v = outs
                r = np.linalg.norm(a @ v - v * w) / np.linalg.norm(a)
                return r <= 1e-13, f"|AV-VW|/|A| {r:.1e}"
            cases.append(Case("linalg", "eigh", f"{n}x{n}", "float64", "eigh", [],
                              lambda spd=spd: [spd()], "np.linalg.eigh(a)",
                              lambda a: (lambda: np.linalg.eigh(a)), eigh_check, 0.9))
    return cases


def run_case(c):
    ins = c.inputs()
    row = {"case": c.name, "size": c.size, "dtype": c.dtype, "mode": c.mode or "-",
           "peer": c.peer_text, "target": c.target}
    try:
        if c.mode:
            if lib.fam_set_precision(1 if c.mode == "FAST" else 0):
                raise EmilyError(err())
        emily_load(ins)
        t0 = time.perf_counter()
        outs = emily_run(c.op, c.params)
        first = time.perf_counter() - t0
        ok, detail = c.check(outs, *ins)
        row["check"] = ("ok: " if ok else "MISMATCH: ") + detail
        row["ok"] = ok
        if not ok:
            return row
        # One call was the check; big ops need no more warm-up and few reps.
        warmup = 0 if first > 0.2 else 2
        inner = max(1, int(MIN_MEASURE_S / max(first, 1e-6)))
        reps = 1 if first > 2.0 else (5 if first > 0.2 else 15)
        fn = c.peer(*ins)
        fn()
        # ROUNDS alternating rounds, so that both sides see the same
        # stretches of this shared machine's load; the median of the
        # rounds' medians
        peer_meds, emily_meds = [], []
        row["peer_n"] = row["emily_n"] = 0
        for _ in range(ROUNDS):
            time.sleep(SETTLE_S)
            med, n = peer_time(fn, warmup, inner, max(1, reps // ROUNDS))
            peer_meds.append(med)
            row["peer_n"] += n
            time.sleep(SETTLE_S)
            med, n = emily_time(c.op, c.params, warmup, inner, max(1, reps // ROUNDS))
            emily_meds.append(med)
            row["emily_n"] += n
        row["peer_s"], row["emily_s"] = float(np.median(peer_meds)), float(np.median(emily_meds))
        row["ratio"] = row["peer_s"] / row["emily_s"]
    except EmilyError as e:
        row["check"] = "ERROR: " + str(e)
        row["ok"] = False
    finally:
        lib.fam_clear()
        lib.fam_set_precision(0)
    if lib.fam_live() != 0:
        row["check"] += f"; LEAK: {lib.fam_live()} live tensor(s)"
        row["ok"] = False
    return row


def fmt_t(s):
    return "-" if s is None else (f"{s * 1e3:.3f}" if s < 0.01 else f"{s * 1e3:.1f}")


def table(rows):
    head = ("| case | size | dtype | Emily dot mode | peer | peer ms | Emily ms | ratio | "
            "target | meets | check |")
    lines = [head, "|" + "---|" * 11]
    for r in rows:
        ratio = r.get("ratio")
        tgt = r["target"]
        meets = "-" if ratio is None or tgt is None else ("yes" if ratio >= tgt else "no")
        lines.append(f"| {r['case']} | {r['size']} | {r['dtype']} | {r['mode']} | {r['peer']} | "
                     f"{fmt_t(r.get('peer_s'))} | {fmt_t(r.get('emily_s'))} | "
                     f"{'-' if ratio is None else f'{ratio:.2f}x'} | "
                     f"{'-' if tgt is None else f'>= {tgt}x'} | {meets} | {r['check']} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="",
                    help="comma list of families: matmul,bmatmul,conv,sort,cumsum,fft,linalg")
    ap.add_argument("--no-write", action="store_true", help="do not write RESULTS-families.md")
    args = ap.parse_args()
    only = set(x for x in args.only.split(",") if x)
    load_lib()
    load_before = os.environ.get("BENCH_LOAD_BEFORE") or "%.2f %.2f %.2f" % os.getloadavg()
    rng = np.random.default_rng(12)
    start = time.time()
    rows = []
    for c in make_cases(rng, only):
        r = run_case(c)
        rows.append(r)
        print(f"{r['case']:>16} {r['size']:>16} {r['dtype']:>9} {r['mode']:>7}  peer "
              f"{fmt_t(r.get('peer_s')):>9} ms  emily {fmt_t(r.get('emily_s')):>9} ms  "
              f"{'-' if r.get('ratio') is None else format(r['ratio'], '.2f') + 'x':>7}  "
              f"{r['check']}", flush=True)
    elapsed = time.time() - start
    load_after = "%.2f %.2f %.2f" % os.getloadavg()
    md = [
        "# Op-family CPU benchmark: Emily vs numpy/scipy",
        "",
        f"- date: {datetime.datetime.now().strftime('%Y-%m-%d %H:%M:%S')}",
        f"- machine: {cpu_model()}, {os.cpu_count()} CPUs, OpenMP threads {lib.fam_threads()}",
        f"- Emily {lib.fam_emily_version().decode()}, numpy {np.__version__}, "
        f"scipy {scipy.__version__}, Python {platform.python_version()}",
        f"- load average before: {load_before}; after: {load_after}",
    ]
    ncpu = len(os.sched_getaffinity(0))
    if max(float(load_before.split()[0]), float(load_after.split()[0])) > 0.75 * ncpu:
        md += [
            f"- NOTE: the machine was busy (load average above {0.75 * ncpu:.1f} on {ncpu} CPUs),",
            "  so these timings are noisy; ratios can swing by 2x between runs. Re-run on a",
            "  quiet machine for numbers to rely on.",
        ]
    md += [
        f"- command: `{os.environ.get('BENCH_COMMAND', 'bench/run_families')}` "
        f"({elapsed:.0f} s in all)",
        "- method: inputs from numpy (seed 12); Emily's result checked first (matmul, conv,",
        "  cumsum, fft against an f64/c128 numpy reference; sort/argsort/top_k exactly;",
        "  decompositions by reconstruction), then timed in "
        f"{ROUNDS} alternating rounds (peer, Emily, peer, ...),",
        "  each a warm-up and the median of up to 5 measurements (fewer for calls over 0.2 s),",
        f"  capped at {MAX_SECONDS} s, after a {SETTLE_S} s pause (both OpenBLAS builds in this",
        "  process leave their threads spinning ~0.1 s after a call); a side's time is the",
        "  median of its rounds' medians.",
        "  ratio = peer time / Emily time (>= 1: Emily faster). 'Emily dot mode' is",
        "  emily_dot_set_precision: HIGHEST (the default, Nx.BinaryBackend's answers)",
        "  or FAST (BLAS in the type's own precision, like numpy).",
        "- conv peer: numpy im2col (sliding_window_view) + tensordot (a BLAS sgemm),",
        "  not scipy.signal.correlate. argsort is checked against the stable order",
        "  (Emily's sorts are stable); the numpy peer timed is the default np.argsort.",
        "",
        table(rows),
        "",
    ]
    text = "\n".join(md)
    print()
    print(text)
    if not args.no_write:
        with open(os.path.join(HERE, "RESULTS-families.md"), "w") as f:
            f.write(text)
        results_sections.splice_families()
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
