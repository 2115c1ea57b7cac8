#!/usr/bin/env python3
"""CPU benchmark: Emily (libemily through bench/build/libemily_bench.so) against
numpy, in the same run, on the same data.

For every case: Emily's result is checked against a numpy reference first
(a mismatch beyond the dtype's tolerance fails the case loudly), then both
sides are timed (warm-up, then the median of many measurements, each of
enough calls to sit far above the timer's resolution). Emily's timing loop
is in C (bench/timing.c), so ctypes overhead is not measured; each Emily
call creates and releases its output tensor, as a user would. Each Emily
case runs in a forked child so a crash or hang in an op is reported for
that case and the run continues.

ratio = numpy time / Emily time (>= 1.0: Emily at least as fast).
Start it with bench/run (which builds the libraries first)."""

import argparse
import ctypes
import datetime
import mmap
import os
import platform
import shlex
import signal
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results_sections  # noqa: E402
from machine import cpu_flags, cpu_model  # noqa: E402

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BENCH_LIB = os.path.join(HERE, "build", "libemily_bench.so")

SIZES = {"1e3": 10**3, "1e5": 10**5, "1e7": 10**7}
DTYPES = ["f32", "f64"]
NP_DTYPE = {"f32": np.float32, "f64": np.float64}

MIN_MEASURE_NS = 200_000  # each measurement: at least 0.2 ms of calls
MIN_REPS, MAX_REPS = 9, 99  # measurements per side, over all rounds
ROUNDS = 3                   # numpy and Emily alternate this many times
CASE_TIMEOUT_S = 300

BENCH_OK, BENCH_NOT_IMPLEMENTED, BENCH_ERROR = 0, 1, 2

# --------------------------------------------------------------------------
# Cases


def shape_flat(n):
    return (n,)


def shape_rows(n):
    # [n/1000, 1000]: a sum over the contiguous last axis
    return (max(n // 1000, 1), min(n, 1000))


def shape_square(n):
    # the factor pair of n closest to square, rows <= cols
    r = int(n**0.5)
    while n % r:
        r -= 1
    return (r, n // r)


class Case:
    def __init__(self, name, inputs, shape, peer_text, peer, reference, check,
                 out_dtype, out_shape, dtypes=("f32", "f64")):
        self.name = name
        self.inputs = inputs          # 1 or 2
        self.shape = shape            # n -> input shape
        self.peer_text = peer_text    # what the numpy peer does (for the table)
        self.peer = peer              # (a, b) -> callable timed for numpy
        self.reference = reference    # (a, b) -> expected result (numpy array)
        self.check = check            # "exact", "ulp4", "sum"
        self.out_dtype = out_dtype    # input dtype name -> Emily output dtype name
        self.out_shape = out_shape    # input shape -> output shape
        self.dtypes = dtypes


def same(t):
    return t


def bf16_truncate(a):
    """Nx's f32 -> bf16: the value rounded to f32 (it already is), then the
    top 16 bits kept (truncation)."""
    return (a.view(np.uint32) >> np.uint32(16)).astype(np.uint16)


def f64_then_round(fn):
    """Reference for float math: computed in a wider type (f64 for f32,
    x87 long double for f64), rounded once to the input's type."""
    def ref(a, b):
        wide = np.float64 if a.dtype == np.float32 else np.longdouble
        return fn(a.astype(wide)).astype(a.dtype)
    return ref


CASES = [
    Case("add", 2, shape_flat, "np.add(a, b)",
         lambda a, b: (lambda: np.add(a, b)), lambda a, b: np.add(a, b),
         "exact", same, same),
    Case("multiply", 2, shape_flat, "np.multiply(a, b)",
         lambda a, b: (lambda: np.multiply(a, b)), lambda a, b: np.multiply(a, b),
         "exact", same, same),
    Case("exp", 1, shape_flat, "np.exp(a)",
         lambda a, b: (lambda: np.exp(a)), f64_then_round(np.exp),
         "ulp4", same, same),
    Case("tanh", 1, shape_flat, "np.tanh(a)",
         lambda a, b: (lambda: np.tanh(a)), f64_then_round(np.tanh),
         "ulp4", same, same),
    Case("sum_all", 1, shape_flat, "a.sum()",
         lambda a, b: a.sum, lambda a, b: np.sum(a, dtype=np.float64),
         "sum", same, lambda s: ()),
    Case("sum_last", 1, shape_rows, "a.sum(axis=-1)",
         lambda a, b: (lambda: a.sum(axis=-1)),
         lambda a, b: np.sum(a, axis=-1, dtype=np.float64),
         "sum", same, lambda s: s[:-1]),
    Case("reduce_max", 1, shape_flat, "a.max()",
         lambda a, b: a.max, lambda a, b: np.max(a),
         "exact", same, lambda s: ()),
    Case("argmax", 1, shape_flat, "a.argmax()",
         lambda a, b: a.argmax, lambda a, b: np.int32(np.argmax(a)),
         "exact", lambda t: "s32", lambda s: ()),  # Nx's default :type is s32
    Case("as_type_bf16", 1, shape_flat,
         "a.view(u16)[1::2].copy() (bf16 by truncation; numpy has no bf16)",
         lambda a, b: (lambda: a.view(np.uint16)[1::2].copy()),
         lambda a, b: bf16_truncate(a),
         "exact", lambda t: "bf16", same, dtypes=("f32",)),
    Case("as_type_f16", 1, shape_flat, "a.astype(np.float16)",
         lambda a, b: (lambda: a.astype(np.float16)),
         lambda a, b: a.astype(np.float16),
         "exact", lambda t: "f16", same, dtypes=("f32",)),
    Case("transpose", 1, shape_square, "a.T.copy() (2-D, contiguous result)",
         lambda a, b: (lambda: a.T.copy()), lambda a, b: np.ascontiguousarray(a.T),
         "exact", same, lambda s: tuple(reversed(s))),
]
CASE_BY_NAME = {c.name: c for c in CASES}

# --------------------------------------------------------------------------
# Checking


def ordered_bits(x):
    """Float bits as integers ordered like the floats (-0.0 == +0.0)."""
    ib = {2: np.int16, 4: np.int32, 8: np.int64}[x.dtype.itemsize]
    i = x.view(ib).astype(np.int64)
    mag = i & np.int64(np.iinfo(ib).max)
    return np.where(i < 0, -mag, mag), mag, i < 0


def ulp_distance(x, y):
    """Per-element distance in units in the last place (uint64); NaN==NaN."""
    x = np.ascontiguousarray(x).reshape(-1)
    y = np.ascontiguousarray(y).reshape(-1)
    ox, mx, sx = ordered_bits(x)
    oy, my, sy = ordered_bits(y)
    with np.errstate(over="ignore"):
        same_sign = (sx == sy) | (mx == 0) | (my == 0)
        d_same = np.abs(ox - oy).astype(np.uint64)
        d_cross = mx.astype(np.uint64) + my.astype(np.uint64)
    d = np.where(same_sign, d_same, d_cross)
    nx, ny = np.isnan(x), np.isnan(y)
    d = np.where(nx & ny, np.uint64(0), d)
    d = np.where(nx ^ ny, np.uint64(np.iinfo(np.uint64).max), d)
    return d


def fmt_val(x):
    x = np.asarray(x)
    if x.dtype.kind == "f":
        digits = {2: 5, 4: 9, 8: 17}[x.dtype.itemsize]
        return f"{float(x):.{digits}g}"
    return str(x.item())


def first_bad(mask):
    idx = np.flatnonzero(mask.reshape(-1))
    return int(idx[0]), len(idx)


def check_result(case, dt, a, got, ref):
    """Returns (ok, detail)."""
    got = np.asarray(got)
    ref = np.asarray(ref)
    if case.check == "exact":
        g = got.reshape(-1)
        r = ref.reshape(-1)
        if g.dtype.kind == "f":
            bad = (g.view(f"u{g.itemsize}") != r.view(f"u{r.itemsize}")) & ~(np.isnan(g) & np.isnan(r))
        else:
            bad = g != r
        if bad.any():
            i, cnt = first_bad(bad)
            return False, f"{cnt} element(s) differ (bit-exact check); first at flat index {i}: emily {fmt_val(g[i])}, numpy {fmt_val(r[i])}"
        return True, "bit-exact"
    if case.check == "ulp4":
        d = ulp_distance(got, ref)
        worst = int(d.max()) if d.size else 0
        if worst > 4:
            i, cnt = first_bad(d > 4)
            return False, (f"{cnt} element(s) beyond 4 ULP (max {worst}); first at flat index {i}: "
                           f"input {fmt_val(a.reshape(-1)[i])}, emily {fmt_val(got.reshape(-1)[i])}, "
                           f"reference {fmt_val(ref.reshape(-1)[i])}")
        return True, f"max {worst} ULP"
    if case.check == "sum":
        # reference accumulated in f64 (as Nx does); the error allowed is
        # relative to the sum of magnitudes, the scale of rounding errors
        rtol = {"f32": 1e-6, "f64": 1e-13}[dt]
        axis = None if got.ndim == 0 else -1
        scale = np.sum(np.abs(a), axis=axis, dtype=np.float64)
        err = np.abs(got.astype(np.float64) - ref)
        bad = ~(err <= rtol * scale + np.finfo(NP_DTYPE[dt]).tiny)
        if np.any(bad):
            i, cnt = first_bad(np.atleast_1d(bad))
            return False, (f"{cnt} sum(s) off by more than {rtol:g} x sum|a|; first at {i}: emily "
                           f"{fmt_val(np.atleast_1d(got)[i])}, f64 reference "
                           f"{fmt_val(np.atleast_1d(ref)[i])}")
        rel = float(np.max(err / np.maximum(scale, np.finfo(np.float64).tiny)))
        return True, f"max err {rel:.1e} x sum|a|"
    raise ValueError(case.check)


# --------------------------------------------------------------------------
# Timing


def plan(single_ns):
    """Calls per measurement and measurements per round, from one call's time.
    Each side's measurements are split over ROUNDS rounds that alternate
    numpy and Emily, so a change in the machine's load hits both alike."""
    inner = max(1, int(-(-MIN_MEASURE_NS // max(single_ns, 1))))
    per_measure = inner * max(single_ns, 1)
    reps = int(min(MAX_REPS, max(MIN_REPS, BUDGET_NS // per_measure)))
    per_round = max(2, -(-reps // ROUNDS))
    warmup = max(1, min(inner, 1 + int(20e6 // max(single_ns, 1))))
    return warmup, inner, per_round


def time_numpy(fn, warmup, inner, reps):
    """Time per call of each measurement (a list of `reps` ns values)."""
    for _ in range(warmup):
        fn()
    samples = []
    rng = range(inner)
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        for _ in rng:
            fn()
        samples.append((time.perf_counter_ns() - t0) / inner)
    return samples


def single_call_ns(fn):
    fn()
    ts = []
    for _ in range(3):
        t0 = time.perf_counter_ns()
        fn()
        ts.append(time.perf_counter_ns() - t0)
    return float(np.median(ts))


class EmilyRun:
    """What one bench_time call in the child gave back."""
    def __init__(self, code, message, median=None, dtype=None, shape=None, data=None,
                 samples=None):
        self.code, self.message, self.median = code, message, median
        self.dtype, self.shape, self.data, self.samples = dtype, shape, data, samples


HEADER_FMT = "<iidii8q"
MSG_AT, SAMPLES_AT, HEADER_BYTES = 128, 4096, 8192


class Emily:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        L = self.lib
        L.bench_time.restype = ctypes.c_int
        L.bench_time.argtypes = [
            ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_int64),
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int,
            ctypes.POINTER(ctypes.c_double), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
            ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int),
            ctypes.POINTER(ctypes.c_int64)]
        L.bench_error.restype = ctypes.c_char_p
        L.bench_threads.restype = ctypes.c_int
        L.bench_emily_version.restype = ctypes.c_char_p
        L.emily_dtype_from_name.restype = ctypes.c_int
        L.emily_dtype_from_name.argtypes = [ctypes.c_char_p]
        L.emily_dtype_name.restype = ctypes.c_char_p
        L.emily_dtype_name.argtypes = [ctypes.c_int]

    def dtype(self, name):
        return self.lib.emily_dtype_from_name(name.encode())

    def dtype_name(self, code):
        return self.lib.emily_dtype_name(code).decode()

    def time(self, op, dtype, a, b, warmup, inner, reps, result_bytes):
        """Runs bench_time in a forked child (so a crash or a hang in the op
        is reported, not fatal); returns an EmilyRun."""
        assert reps <= (HEADER_BYTES - SAMPLES_AT) // 8
        header = mmap.mmap(-1, HEADER_BYTES)
        body = mmap.mmap(-1, max(result_bytes, 1))
        try:
            return self._time(header, body, op, dtype, a, b, warmup, inner, reps, result_bytes)
        finally:
            header.close()
            body.close()

    def _time(self, header, body, op, dtype, a, b, warmup, inner, reps, result_bytes):
        shape = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # child: run, write into the shared maps, leave
            try:
                med = ctypes.c_double(0.0)
                od, orank = ctypes.c_int(-1), ctypes.c_int(0)
                oshape = (ctypes.c_int64 * 8)()
                samples = (ctypes.c_double * reps)()
                res = (ctypes.c_char * max(result_bytes, 1)).from_buffer(body)
                code = self.lib.bench_time(
                    op.encode(), dtype, a.ndim, shape, a.ctypes.data,
                    b.ctypes.data if b is not None else None, warmup, inner, reps,
                    ctypes.byref(med), samples, res, result_bytes,
                    ctypes.byref(od), ctypes.byref(orank), oshape)
                msg = (self.lib.bench_error() or b"")[:2000]
                header[MSG_AT:MSG_AT + 2 + len(msg)] = struct.pack("<H", len(msg)) + msg
                header[SAMPLES_AT:SAMPLES_AT + 8 * reps] = bytes(samples)
                header[:struct.calcsize(HEADER_FMT)] = struct.pack(
                    HEADER_FMT, 1, code, med.value, od.value, orank.value, *oshape)
                del res
            except BaseException:
                pass
            os._exit(0)
        deadline = time.monotonic() + CASE_TIMEOUT_S
        while True:
            wpid, status = os.waitpid(pid, os.WNOHANG)
            if wpid == pid:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return EmilyRun(BENCH_ERROR, f"timed out after {CASE_TIMEOUT_S:g} s (killed)")
            time.sleep(0.002)
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            return EmilyRun(BENCH_ERROR,
                            f"CRASH: the process died of signal {sig} ({signal.Signals(sig).name})")
        done, code, med, od, orank, *oshape = struct.unpack_from(HEADER_FMT, header, 0)
        if done != 1:
            return EmilyRun(BENCH_ERROR, "the child process exited without a result")
        (mlen,) = struct.unpack_from("<H", header, MSG_AT)
        msg = header[MSG_AT + 2:MSG_AT + 2 + mlen].decode(errors="replace")
        if code != BENCH_OK:
            return EmilyRun(code, msg)
        data = np.frombuffer(body, dtype=np.uint8)[:result_bytes].copy()
        samples = list(struct.unpack_from(f"<{reps}d", header, SAMPLES_AT))
        return EmilyRun(code, msg, med, self.dtype_name(od), tuple(oshape[:orank]), data, samples)


# --------------------------------------------------------------------------
# Running


def fmt_time(ns):
    if ns is None:
        return "-"
    if ns < 1e3:
        return f"{ns:.0f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.3g} µs"
    if ns < 1e9:
        return f"{ns / 1e6:.3g} ms"
    return f"{ns / 1e9:.3g} s"


NP_OF_EMILY = {"f16": np.float16, "bf16": np.uint16, "f32": np.float32,
               "f64": np.float64, "s32": np.int32, "s64": np.int64}


def run_case(emily, case, dt, size_name, n, data, out_rows, verbose):
    a_full, b_full = data
    shape = case.shape(n)
    a = a_full.reshape(shape)
    b = b_full.reshape(shape) if case.inputs == 2 else None
    row = {"case": case.name, "dtype": dt, "size": size_name, "shape": shape,
           "peer": case.peer_text, "np_ns": None, "em_ns": None, "status": "", "detail": ""}
    out_rows.append(row)
    label = f"{case.name} {dt} {size_name} {list(shape)}"

    exp_dtype = case.out_dtype(dt)
    exp_shape = tuple(case.out_shape(shape))
    np_out = NP_OF_EMILY[exp_dtype]
    result_bytes = int(np.prod(exp_shape, dtype=np.int64)) * np.dtype(np_out).itemsize
    ref = case.reference(a, b)
    edt = emily.dtype(dt)
    fn = case.peer(a, b)

    def judge(run):
        """(status, detail) of an Emily run's result."""
        if run.code == BENCH_NOT_IMPLEMENTED:
            return "NOT IMPLEMENTED", run.message
        if run.code != BENCH_OK:
            return "ERROR", run.message
        if run.dtype != exp_dtype or run.shape != exp_shape:
            return ("MISMATCH", f"emily returned {run.dtype}{list(run.shape)}, expected "
                    f"{exp_dtype}{list(exp_shape)}")
        got = run.data.view(np_out).reshape(exp_shape)
        ok, detail = check_result(case, dt, a, got, ref)
        return ("ok" if ok else "MISMATCH"), detail

    # 1. Emily's result first (one warm-up call, three timed ones)
    first = emily.time(case.name, edt, a, b, 1, 1, 3, result_bytes)
    status, detail = judge(first)
    row["status"], row["detail"] = status, detail
    if status != "ok":
        loud = "---" if status == "NOT IMPLEMENTED" else "!!!"
        print(f"{loud} {label}: {status}: {detail}", file=sys.stderr, flush=True)
    if first.code != BENCH_OK or first.median is None:
        # nothing to time on Emily's side; numpy's time still goes in the table
        row["np_ns"] = float(np.median(time_numpy(fn, *plan(single_call_ns(fn)))))
        return

    # 2. Timing: rounds alternating numpy and Emily, samples pooled per side
    np_plan = plan(single_call_ns(fn))
    em_plan = plan(first.median)
    np_samples, em_samples = [], []
    for _ in range(ROUNDS):
        np_samples += time_numpy(fn, *np_plan)
        run = emily.time(case.name, edt, a, b, *em_plan, result_bytes)
        if run.code != BENCH_OK:
            st, det = judge(run)
            row["status"], row["detail"] = st, det + " (in a timed run)"
            print(f"!!! {label}: {st} in a timed run: {det}", file=sys.stderr, flush=True)
            row["np_ns"] = float(np.median(np_samples))
            return
        em_samples += run.samples
    row["np_ns"] = float(np.median(np_samples))
    row["em_ns"] = float(np.median(em_samples))
    # the last timed result is checked too
    if status == "ok":
        status, detail = judge(run)
        row["status"], row["detail"] = status, detail
        if status != "ok":
            print(f"!!! {label}: {status} in a timed run: {detail}", file=sys.stderr, flush=True)
    if verbose:
        print(f"    {label}: numpy {fmt_time(row['np_ns'])} ({len(np_samples)} x {np_plan[1]} "
              f"calls), emily {fmt_time(row['em_ns'])} ({len(em_samples)} x {em_plan[1]} calls); "
              f"{detail}", flush=True)


def ratio(row):
    if row["np_ns"] and row["em_ns"]:
        return row["np_ns"] / row["em_ns"]
    return None


def fmt_ratio(q):
    if q is None:
        return "-"
    return f"{q:.3f}" if 0.99 <= q < 1.005 else f"{q:.2f}"


def table(rows):
    lines = ["| case | dtype | n | shape | numpy | emily | ratio | check | numpy peer |",
             "|---|---|---|---|---:|---:|---:|---|---|"]
    for r in rows:
        q = ratio(r)
        qs = fmt_ratio(q)
        if q is not None and q < 1.0:
            qs = f"**{qs}**"
        st = r["status"] if r["status"] != "ok" else f"ok ({r['detail']})"
        if r["status"] != "ok":
            st = f"**{r['status']}**: {r['detail']}"
        st = st.replace("|", "\\|")
        lines.append(f"| {r['case']} | {r['dtype']} | {r['size']} | {list(r['shape'])} | "
                     f"{fmt_time(r['np_ns'])} | {fmt_time(r['em_ns'])} | {qs} | {st} | "
                     f"`{r['peer']}` |")
    return "\n".join(lines)


def openblas_versions():
    numpy_blas = "?"
    try:
        blas = np.__config__.CONFIG["Build Dependencies"]["blas"]
        numpy_blas = f"{blas.get('name', '?')} {blas.get('version', '?')}"
    except Exception:
        pass
    emily_blas = "?"
    try:
        lib = ctypes.CDLL("libopenblas.so.0")
        lib.openblas_get_config.restype = ctypes.c_char_p
        emily_blas = lib.openblas_get_config().decode()
    except Exception:
        pass
    return numpy_blas, emily_blas


def git_revision():
    if os.environ.get("BENCH_GIT_REVISION"):  # a tree exported without .git
        return os.environ["BENCH_GIT_REVISION"]
    try:
        rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--", "src", "include"],
                               capture_output=True, text=True).stdout.strip()
        return rev + (" (src/ or include/ modified)" if dirty else "")
    except Exception:
        return "?"


def gcc_version():
    try:
        return subprocess.run(["gcc", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    except Exception:
        return "?"


def main():
    global BUDGET_NS, CASE_TIMEOUT_S
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", default=",".join(c.name for c in CASES),
                    help="comma-separated cases (default: all): " + ",".join(CASE_BY_NAME))
    ap.add_argument("--sizes", default=",".join(SIZES), help="comma-separated: 1e3,1e5,1e7")
    ap.add_argument("--dtypes", default=",".join(DTYPES), help="comma-separated: f32,f64")
    ap.add_argument("--budget", type=float, default=0.3,
                    help="seconds of timed calls per side and case (default 0.3)")
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--output", default=os.path.join(HERE, "RESULTS.md"),
                    help="markdown file to write (default bench/RESULTS.md)")
    ap.add_argument("--no-write", action="store_true", help="do not write the results file")
    ap.add_argument("--timeout", type=float, default=CASE_TIMEOUT_S,
                    help=f"seconds before an Emily case is killed (default {CASE_TIMEOUT_S})")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    BUDGET_NS = int(args.budget * 1e9)
    CASE_TIMEOUT_S = args.timeout

    ops = [o.strip() for o in args.ops.split(",") if o.strip()]
    for o in ops:
        if o not in CASE_BY_NAME:
            ap.error(f"unknown case {o!r}; known: {', '.join(CASE_BY_NAME)}")
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    for s in sizes:
        if s not in SIZES:
            ap.error(f"unknown size {s!r}; known: {', '.join(SIZES)}")
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    for d in dtypes:
        if d not in NP_DTYPE:
            ap.error(f"unknown dtype {d!r}; known: {', '.join(NP_DTYPE)}")

    if not os.path.exists(BENCH_LIB):
        sys.exit(f"{BENCH_LIB} is missing: start the benchmark with bench/run")
    emily = Emily(BENCH_LIB)
    command = os.environ.get("BENCH_COMMAND") or shlex.join(["python3", "bench/run.py"] + sys.argv[1:])
    threads = emily.lib.bench_threads()
    numpy_blas, emily_blas = openblas_versions()
    started = datetime.datetime.now().astimezone()
    load0 = os.getloadavg()
    print(f"Emily {emily.lib.bench_emily_version().decode()} ({threads} OpenMP threads) vs "
          f"numpy {np.__version__} (single-threaded for these ops) on {cpu_model()}, "
          f"{os.cpu_count()} CPUs", flush=True)

    rng = np.random.default_rng(args.seed)
    rows = []
    t_start = time.monotonic()
    for size_name in sizes:
        n = SIZES[size_name]
        for dt in dtypes:
            a = rng.uniform(-4.0, 4.0, n).astype(NP_DTYPE[dt])
            b = rng.uniform(-4.0, 4.0, n).astype(NP_DTYPE[dt])
            for name in ops:
                case = CASE_BY_NAME[name]
                if dt not in case.dtypes:
                    continue
                run_case(emily, case, dt, size_name, n, (a, b), rows, args.verbose)
            del a, b
    elapsed = time.monotonic() - t_start
    load1 = os.getloadavg()

    ncpu = len(os.sched_getaffinity(0))
    # before: anything else running; after: the run itself adds about 1-2
    busy_at = 0.5 * ncpu
    busy = load0[0] > busy_at or load1[0] > 1.25 * ncpu
    if busy:
        print(f"warning: the machine was busy (load average {load0[0]:.2f} / {load1[0]:.2f} on "
              f"{ncpu} usable CPUs): timings, Emily's multi-threaded ones most, are unreliable",
              file=sys.stderr)
    tab = table(rows)
    print()
    print(tab)
    failed = [r for r in rows if r["status"] != "ok"]
    slow = [r for r in rows if r["size"] == "1e7" and r["dtype"] == "f32"
            and ratio(r) is not None and ratio(r) < 1.0]
    print()
    print(f"{len(rows)} cases in {elapsed:.0f} s: {len(rows) - len(failed)} ok, "
          f"{sum(r['status'] == 'NOT IMPLEMENTED' for r in rows)} not implemented, "
          f"{sum(r['status'] == 'MISMATCH' for r in rows)} mismatched, "
          f"{sum(r['status'] == 'ERROR' for r in rows)} errors")
    for r in failed:
        print(f"!!! FAILED: {r['case']} {r['dtype']} {r['size']}: {r['status']}: {r['detail']}",
              file=sys.stderr)
    sys.stderr.flush()
    if slow:
        print("below ratio 1.0 at 1e7 f32: " + ", ".join(f"{r['case']} ({fmt_ratio(ratio(r))})" for r in slow))

    if not args.no_write:
        md = [
            "# Emily CPU benchmark results",
            "",
            "Written by `bench/run` (do not edit by hand; rerun it); the op-family "
            "section by `bench/run_families`, its notes kept in bench/NOTES-families.md.",
            "",
            f"- Date: {started.strftime('%Y-%m-%d %H:%M %Z')}",
            f"- Command: `{command}` (from the repository root)",
            f"- Machine: {cpu_model()}, {os.cpu_count()} logical CPUs "
            f"({len(os.sched_getaffinity(0))} usable by this process); {cpu_flags()}",
            f"- OS: {platform.system()} {platform.release()}; Python {platform.python_version()}; "
            f"{gcc_version()}",
            f"- Emily {emily.lib.bench_emily_version().decode()} at git {git_revision()}, "
            f"built with `make build/libemily.so` (-O2); system OpenBLAS: {emily_blas}",
            f"- numpy {np.__version__} from PyPI, its OpenBLAS: {numpy_blas}",
            f"- Threads: numpy runs all of these ops on one thread (its ufuncs and reductions "
            f"do not use threads; BLAS is not involved); Emily may use OpenMP with "
            f"{threads} thread(s) (OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}). "
            f"Both see the same {len(os.sched_getaffinity(0))} CPU(s).",
            f"- Load average before/after: {load0[0]:.2f} / {load1[0]:.2f}; run took {elapsed:.0f} s"
            + (f". **The machine was busy** (load average {max(load0[0], load1[0]):.1f} on {ncpu} usable CPUs): other "
               "processes competed for the cores, which hurts Emily's multi-threaded timings most "
               "(a parallel region waits for its slowest thread); rerun on a quiet machine before "
               "reading much into the ratios." if busy else ""),
            "",
            "Method: inputs are uniform random in [-4, 4) (numpy default_rng, seed "
            f"{args.seed}), the same bytes for both sides. Emily's result is checked first "
            "against a numpy reference: add, multiply, reduce_max, argmax, transpose, "
            "as_type bit-exact; exp and tanh within 4 ULP of the result computed in a wider "
            "type (f64 for f32, long double for f64) and rounded once; sums within 1e-6 (f32) / 1e-13 (f64) x sum|a| of an "
            "f64-accumulated sum (Nx accumulates in f64). as_type f32->bf16 is checked "
            "against Nx's rule (f32 bits truncated to the top 16). Then each side is timed: "
            f"warm-up, then the median of {MIN_REPS}..{MAX_REPS} measurements, each of enough "
            f"calls to last >= {MIN_MEASURE_NS / 1e3:.0f} µs, taken in {ROUNDS} rounds that "
            "alternate numpy and Emily (so changes in the machine's load hit both). Emily's loop is in C (bench/timing.c), each call "
            "creating and releasing its output tensor; numpy's loop is in Python "
            "(time.perf_counter_ns), each call allocating its result.",
            "",
            "ratio = numpy time / Emily time: >= 1.0 means Emily is at least as fast "
            "(below 1.0 in bold).",
            "",
            tab,
            "",
        ]
        if slow:
            md.append("Below ratio 1.0 at 1e7 f32: " +
                      ", ".join(f"{r['case']} ({fmt_ratio(ratio(r))})" for r in slow) + ".")
            md.append("")
        if failed:
            md.append(f"{len(failed)} case(s) did not pass; see the check column.")
            md.append("")
        # the other benchmarks' latest tables, so that one file has them all
        md += results_sections.families() + results_sections.gpu()
        with open(args.output, "w") as f:
            f.write("\n".join(md))
        print(f"wrote {os.path.relpath(args.output, ROOT)}")
    return 1 if failed else 0


BUDGET_NS = 300_000_000

if __name__ == "__main__":
    sys.exit(main())
