#!/usr/bin/env bash
# The GPU run, on the machine with the GPU (an H200: CUDA 13, driver 580,
# python with torch and jax, no network), from the repository root:
#
#   bash bench/gpu/run.sh [--quick]
#
# It needs bench/gpu/carry/emily-gpu.tar.xz, made here by
# bench/gpu/prepare.sh and sent along (device call: carry
# ["bench/gpu/carry"]). Steps, each with its log under $OUT (or
# /tmp/emily-gpu-out):
#   1. test_cuda and test_dot: allocator, streams, transfers, async, errors,
#      every op compared with the CPU engine, dot on cuBLAS;
#   2. the conformance corpus (both files) with --device cuda;
#   3. benchmarks: Emily (bench/gpu/emily_bench.c, chain.c) against PyTorch
#      and JAX (bench/gpu/peers.py) in the same run, then the ratio table.
# Prints a short summary last; exits non-zero if a step failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
QUICK=""
[ "${1:-}" = "--quick" ] && QUICK="--quick"
OUT=${OUT:-/tmp/emily-gpu-out}
mkdir -p "$OUT"
W=/tmp/emily-gpu
PACK=bench/gpu/carry/emily-gpu.tar.xz
[ -f "$PACK" ] || { echo "run.sh: $PACK missing: run bench/gpu/prepare.sh where it was built and carry bench/gpu/carry" >&2; exit 2; }
rm -rf "$W"
tar -xJf "$PACK" -C /tmp 2>/dev/null ||
    python3 -c "import tarfile, sys; tarfile.open(sys.argv[1]).extractall('/tmp')" "$PACK" || exit 2
export LD_LIBRARY_PATH="$W/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# CUDA libraries: the toolkit's lib64 (rpath) or, failing that, the ones
# pip installed for torch.
if ldd "$W/lib/libemily.so" | grep -q "not found"; then
    extra=$(python3 - <<'PY' 2>/dev/null
import importlib, os
dirs = []
for m in ("nvidia.cublas", "nvidia.cuda_runtime", "nvidia.cu13", "nvidia.cu12"):
    try:
        p = importlib.import_module(m)
        for base in list(getattr(p, "__path__", [])):
            d = os.path.join(base, "lib")
            if os.path.isdir(d):
                dirs.append(d)
    except Exception:
        pass
print(":".join(dirs))
PY
)
    [ -n "$extra" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$extra"
fi
if ldd "$W/lib/libemily.so" "$W"/bin/* | grep "not found"; then
    echo "run.sh: libraries missing (above); nothing can run" >&2
    exit 2
fi

summary=()
failed=0
note() { summary+=("$1"); }
# One device call may run 600 s: every step gets at most its own limit and
# never more than what is left of BUDGET seconds, so the summary is printed.
BUDGET=${BUDGET:-540}
START=$SECONDS
limit() { # limit STEP_MAX -> seconds for the next step (>= 5)
    local left=$((BUDGET - (SECONDS - START)))
    local t=$1
    [ $left -lt $t ] && t=$left
    [ $t -lt 5 ] && t=5
    echo $t
}

echo "== machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv 2>&1 | tee "$OUT/report.txt"
nproc | sed 's/^/cpus: /' | tee -a "$OUT/report.txt"

echo "== 1. unit tests on the GPU"
for t in test_cuda test_dot; do
    timeout $(limit 150) "$W/bin/$t" > "$OUT/$t.log" 2>&1
    rc=$?
    tail -n 25 "$OUT/$t.log"
    note "$t: rc=$rc, $(grep -E 'tests, [0-9]+ failed' "$OUT/$t.log" | tr '\n' ' ')"
    [ $rc -eq 0 ] || failed=1
    if grep -q SKIPPED "$OUT/$t.log"; then failed=1; note "$t saw no CUDA device: its GPU cases did not run"; fi
done

echo "== 2. conformance corpus on cuda:0"
: > "$OUT/conformance.log"
for f in doctests sweep; do
    echo "### $f" >> "$OUT/conformance.log"
    timeout $(limit 150) "$W/bin/conformance" --device cuda:0 "$W/corpus/$f.jsonl" >> "$OUT/conformance.log" 2>&1
    rc=$?
    total=$(grep '^device cuda' "$OUT/conformance.log" | tail -n 1)
    [ $rc -eq 2 ] && total="$(tail -n 1 "$OUT/conformance.log")"
    note "conformance $f: rc=$rc, $total"
done
# ops with failures, both files (full per-op tables in conformance.log)
awk '/^### /{file=$2} NF>=4 && $2 ~ /^[0-9]+$/ && $3 ~ /^[0-9]+$/ && $4 ~ /^[0-9]+$/ && $3 > 0 {print file": "$0}' "$OUT/conformance.log" | head -n 60
grep -E '^FAIL' "$OUT/conformance.log" | head -n 20

echo "== 3. benchmarks"
: > "$OUT/emily.jsonl"
timeout $(limit 60) "$W/bin/chain" --device cuda:0 >> "$OUT/emily.jsonl" 2>> "$OUT/report.txt" || { failed=1; note "chain failed"; }
timeout $(limit 30) "$W/bin/launch_floor" | tee "$OUT/launch_floor.jsonl" || note "launch_floor failed"
timeout $(limit 150) "$W/bin/emily_bench" --device cuda:0 $QUICK >> "$OUT/emily.jsonl" 2>> "$OUT/report.txt" \
    || { failed=1; note "emily_bench failed or a result was WRONG (see report.txt)"; }
cat "$OUT/emily.jsonl"
PYTHONUNBUFFERED=1 timeout $(limit 120) python3 bench/gpu/peers.py torch $QUICK > "$OUT/torch.jsonl" 2>> "$OUT/report.txt" \
    || note "torch peer failed (see report.txt)"
XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1 timeout $(limit 150) python3 bench/gpu/peers.py jax $QUICK \
    > "$OUT/jax.jsonl" 2>> "$OUT/report.txt" || note "jax peer failed (see report.txt)"
python3 bench/gpu/peers.py report "$OUT/emily.jsonl" "$OUT/torch.jsonl" "$OUT/jax.jsonl" | tee -a "$OUT/report.txt"

echo "== summary"
for s in "${summary[@]}"; do echo "$s"; done | tee -a "$OUT/report.txt"
exit $failed
