#!/usr/bin/env bash
# The GPU run, on the machine with the GPU (an H200: CUDA 13, driver 580,
# python with torch, sentence-transformers and jax; no Erlang, no network),
# from the repository root:
#
#   bash bench/gpu/run.sh [--quick] [STEP...]  STEP: engine beam minilm bench generate sanitize sanitize_corpus
#
# No STEP: the first five (the sanitize steps are asked for by name). The packs come from this machine's bench/gpu/carry
# (made by bench/gpu/prepare.sh and bench/gpu/pack_beam.sh, sent with the
# device calls' `carry`; docs/GPU.md lists the calls):
#   engine  emily-gpu.tar.xz: the unit tests with CUDA cases (test_cuda*,
#           test_dot; ENGINE_TESTS: an extended regex picking them by name)
#           on the GPU, and the conformance corpus (both files) with
#           --device cuda:0 (ENGINE_CORPUS=0: not);
#   beam    emily-beam.tar.xz too: Emily's Elixir package with `mix test`
#           (prebuilt: nothing but the test files compiles): the :cuda
#           tests, Nx's doctests with Emily.Backend on :cuda
#           (EMILY_DOCTEST_DEVICE) and the corpus through the NIF on :cuda
#           (EMILY_CORPUS_DEVICE);
#   minilm  minilm.tar.xz.00 and .01 too: all-MiniLM-L6-v2 through Bumblebee
#           on Emily with device :cuda (bench/models/minilm.exs), then
#           PyTorch and sentence-transformers on the GPU on the same token
#           ids (bench/models/minilm_torch.py): max abs difference and
#           smallest cosine of the embeddings, and times;
#   bench   Emily (emily_bench, chain) against PyTorch and JAX, ratio table;
#   generate smollm2.gguf.NN and smollm2.sha256 too (bench/gpu/pack_smollm2.sh,
#           one part per call: every call stashes the parts it carries):
#           SmolLM2-135M-Instruct from C on the GPU: test_generate (greedy
#           ids and logits against PyTorch's reference, the GPU against
#           the CPU engine), then bench/models/generate for each weights
#           mode: emily_generate on the GPU (GENERATE_DEVICE) against
#           PyTorch's generate() there on the same prompt ids;
#   sanitize the unit tests with CUDA cases under compute-sanitizer
#           (memcheck, then racecheck and synccheck on the kernels with
#           shared memory: SANITIZE_TESTS names others), each within
#           SANITIZE_SECONDS (120); a report or a failed check fails it;
#   sanitize_corpus  test_cuda and the conformance corpus (doctests,
#           narrow, sweep) on cuda:0 under compute-sanitizer memcheck and
#           racecheck (CORPUS_TOOLS, CORPUS_FILES; CORPUS_CASES: an
#           extended regex picking test_cuda's cases by name), each within
#           CORPUS_SECONDS (240), each run split over CORPUS_SHARDS (8)
#           processes at once (test_cuda's each again over CORPUS_PARTS,
#           1, by the cases' work items: --part):
#           any report, a failed case or a run cut short fails it.
#
# Steps may be spread over several device calls (the machine keeps /tmp
# and the repository's ignored files while it stays warm): the state,
# logs and the summary of every step run so far live in
# /tmp/emily-gpu-state, and each call prints the whole summary. What comes
# back in $OUT: summary.txt and logs.tar.gz (this call's logs). Exits
# non-zero if a step of this call failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
QUICK=""
STEPS=()
for a in "$@"; do
    case "$a" in
        --quick) QUICK="--quick" ;;
        engine|beam|minilm|bench|generate|sanitize|sanitize_corpus) STEPS+=("$a") ;;
        *) echo "run.sh: unknown argument $a (steps: engine beam minilm bench generate sanitize sanitize_corpus; --quick)" >&2
           exit 2 ;;
    esac
done
[ ${#STEPS[@]} -eq 0 ] && STEPS=(engine beam minilm bench generate)
OUT=${OUT:-/tmp/emily-gpu-out}
STATE=${STATE:-/tmp/emily-gpu-state}
CARRY=bench/gpu/carry
W=/tmp/emily-gpu
B=/tmp/emily-beam
mkdir -p "$OUT" "$STATE/logs"
SUMMARY=$STATE/summary.txt
call=$(date -u +%H:%M:%S)
failed=0
note() { echo "[call $call, $step] $1" | tee -a "$SUMMARY"; }
fail() { failed=1; note "FAILED: $1"; }

# One device call may run 600 s: every step gets at most its own limit and
# never more than what is left of BUDGET seconds, so the summary is printed.
BUDGET=${BUDGET:-560}
START=$SECONDS
limit() { # limit STEP_MAX -> seconds for the next step (>= 5)
    local left=$((BUDGET - (SECONDS - START)))
    local t=$1
    [ $left -lt $t ] && t=$left
    [ $t -lt 5 ] && t=5
    echo $t
}

# unpack PACK: into /tmp once per pack (a pack sent again is unpacked again)
unpack() {
    local pack=$CARRY/$1 stamp
    [ -f "$pack" ] || { echo "run.sh: $pack missing: make it here with bench/gpu/prepare.sh and pack_beam.sh and carry it" >&2; return 1; }
    stamp="$1 $(stat -c '%s %Y' "$pack")"
    [ "$(cat "$STATE/unpacked.$1" 2>/dev/null)" = "$stamp" ] && return 0
    echo "unpacking $pack"
    rm -rf "/tmp/${1%.tar.xz}"
    tar -xJf "$pack" -C /tmp || return 1
    echo "$stamp" > "$STATE/unpacked.$1"
}

engine_env() {
    unpack emily-gpu.tar.xz || return 1
    export LD_LIBRARY_PATH="$W/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    # CUDA libraries: the toolkit's lib64 (rpath) or, failing that, the
    # ones pip installed for torch.
    if ldd "$W/lib/libemily.so" | grep -q "not found"; then
        local extra
        extra=$(python3 - <<'PY' 2>/dev/null
import importlib, os
dirs = []
for m in ("nvidia.cublas", "nvidia.cuda_runtime", "nvidia.cudnn", "nvidia.cu13", "nvidia.cu12"):
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
        return 1
    fi
}

step_engine() {
    local L=$STATE/logs/engine t rc total
    mkdir -p "$L"
    echo "== machine"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv 2>&1 | tee "$L/machine.txt"
    nproc | sed 's/^/cpus: /' | tee -a "$L/machine.txt"

    echo "== unit tests on the GPU"
    for t in "$W"/bin/test_dot "$W"/bin/test_cuda*; do
        t=$(basename "$t")
        [[ $t =~ ${ENGINE_TESTS:-.} ]] || continue
        timeout "$(limit 150)" "$W/bin/$t" > "$L/$t.log" 2>&1
        rc=$?
        tail -n 15 "$L/$t.log"
        note "$t: rc=$rc, $(grep -E 'tests, [0-9]+ failed' "$L/$t.log" | tr '\n' ' ')"
        [ $rc -eq 0 ] || fail "$t (rc=$rc, log engine/$t.log)"
        if grep -q SKIPPED "$L/$t.log"; then fail "$t saw no CUDA device: its GPU cases did not run"; fi
    done

    [ "${ENGINE_CORPUS:-1}" = 0 ] && { note "conformance: not run (ENGINE_CORPUS=0)"; return 0; }
    echo "== conformance corpus on cuda:0"
    : > "$L/conformance.log"
    for f in doctests sweep narrow; do
        echo "### $f" >> "$L/conformance.log"
        timeout "$(limit 150)" "$W/bin/conformance" --device cuda:0 "$W/corpus/$f.jsonl" >> "$L/conformance.log" 2>&1
        rc=$?
        total=$(grep '^device cuda' "$L/conformance.log" | tail -n 1)
        [ $rc -eq 2 ] && total="$(tail -n 1 "$L/conformance.log")"
        note "conformance $f: rc=$rc, $total"
    done
    # ops with failures, both files (full per-op tables in conformance.log)
    awk '/^### /{file=$2} NF>=4 && $2 ~ /^[0-9]+$/ && $3 ~ /^[0-9]+$/ && $4 ~ /^[0-9]+$/ && $3 > 0 {print file": "$0}' \
        "$L/conformance.log" | head -n 60
    grep -E '^FAIL' "$L/conformance.log" | head -n 20
}

beam_env() {
    unpack emily-beam.tar.xz || return 1
    export PATH="$B/erlang/bin:$B/elixir/bin:$PATH" LD_LIBRARY_PATH="$B/lib:$LD_LIBRARY_PATH"
    export MIX_ENV=test MIX_HOME=$STATE/mix HEX_OFFLINE=1 LANG=C.UTF-8 EMILY_PREBUILT=1
    export EMILY_NX_PATH=$B/repo/deps/nx-0.13.1/nx EMILY_CORPUS=$REPO/tests/corpus
}

# mix_test NAME VARS... -- ARGS: one `mix test` in the packed beam/, its
# ExUnit totals in the summary; failures that are ops the CUDA engine lacks
# ("not implemented/available on ... cuda") counted by op
mix_test() {
    local name=$1 rc log=$STATE/logs/beam/$1.log vars=()
    shift
    while [ "$1" != "--" ]; do vars+=("$1"); shift; done
    shift
    (cd "$B/repo/beam" && env "${vars[@]}" timeout "$(limit 300)" mix test "$@") > "$log" 2>&1
    rc=$?
    tail -n 6 "$log"
    note "mix test $name: rc=$rc, $(grep -E '^[0-9]+ (doctests?|tests?|propert)' "$log" | tail -n 1)"
    local lacking
    lacking=$(grep -oE '\*\* \([A-Za-z.]+\) [a-z_0-9]+: not (implemented|available) on (the )?(device )?cuda' "$log" |
        awk '{sub(/:$/, "", $3); print $3}' | sort | uniq -c | sort -rn | awk '{printf "%s%s x%s", sep, $2, $1; sep=", "}')
    [ -n "$lacking" ] && note "  failures from ops the CUDA engine lacks: $lacking"
    # the corpus runs: each file's totals and the ops with failed cases
    grep -E '^[a-z_]+\.jsonl: [0-9]+ passed' "$log" | while read -r line; do note "  $line"; done
    local ops
    ops=$(awk '/^conformance through Emily.Native: /{file=$4} file && NF == 4 && $2 ~ /^[0-9]+$/ && $3 ~ /^[0-9]+$/ && $3 > 0 \
        {printf "%s%s %s(%s)", sep, file, $1, $3; sep=", "}' "$log")
    [ -n "$ops" ] && note "  corpus ops with failed cases: $ops"
    return $rc
}

step_beam() {
    mkdir -p "$STATE/logs/beam"
    beam_env || return 1
    echo "== Emily's Elixir package: $(erl -noshell -eval 'io:format("OTP ~s", [erlang:system_info(otp_release)]), halt().'), Elixir $(elixir --short-version 2>/dev/null)"
    mix_test cuda -- --only cuda || fail "the :cuda tests (log beam/cuda.log)"
    # Nx's doctests and the corpus on the GPU: ops without CUDA kernels fail
    # there (counted above), so their failures are reported, not fatal
    mix_test nx_doctests_cuda EMILY_DOCTEST_DEVICE=cuda -- test/nx/nx_doctest_test.exs
    mix_test corpus_cuda EMILY_CORPUS_DEVICE=cuda -- test/emily/conformance_doctests_test.exs \
        test/emily/conformance_sweep_test.exs
}

step_minilm() {
    local L=$STATE/logs/minilm M=$STATE/minilm paths=() d
    rm -rf "$L"; mkdir -p "$L"
    beam_env || return 1
    if [ ! -f "$M/all-MiniLM-L6-v2/model.safetensors" ]; then
        local parts=("$CARRY"/minilm.tar.xz.*)
        if [ ${#parts[@]} -lt 2 ] || [ ! -f "$CARRY/minilm.sha256" ]; then
            fail "MiniLM: ${parts[*]} and minilm.sha256 here: both parts must be on this machine (the first comes with the first call)"
            return 1
        fi
        rm -rf "$M"
        python3 bench/gpu/minilm_files.py unpack "$M" "$CARRY/minilm.sha256" "${parts[@]}" ||
            { fail "MiniLM: the parts did not unpack (above)"; return 1; }
    fi
    # Bumblebee on Emily without Mix: the compiled ebin folders on the path
    for d in "$B"/repo/beam/_build/nx-*/test/lib/*/ebin "$B"/models/*/ebin; do paths+=(-pa "$d"); done
    local shapes=${MINILM_SHAPES:-8x128,32x128} runs=${MINILM_RUNS:-10}
    [ -n "$QUICK" ] && { shapes=8x128; runs=3; }
    # (MINILM_DEVICE=cpu tries this step on a machine without a GPU)
    local dev=${MINILM_DEVICE:-cuda}
    echo "== MiniLM on Emily ($dev): $shapes, $runs runs"
    EMILY_GRAPH_TRACE=1 MINILM_DEVICE=$dev MINILM_SHAPES=$shapes MINILM_RUNS=$runs EMILY_MODELS_DATA=$M EMILY_MODELS_OUT=$L \
        timeout "$(limit 240)" elixir "${paths[@]}" bench/models/minilm.exs > "$L/emily.log" 2>&1
    local rc=$?
    cat "$L/emily.log"
    [ $rc -eq 0 ] || fail "minilm.exs rc=$rc (log minilm/emily.log)"
    grep -q '"how":"error"' "$L/results.jsonl" 2>/dev/null && fail "an Emily lane raised (minilm/results.jsonl)"
    echo "== MiniLM on PyTorch and sentence-transformers ($dev), compared"
    PYTHONUNBUFFERED=1 timeout "$(limit 180)" python3 bench/models/minilm_torch.py --device "$dev" \
        --shapes "$shapes" --runs "$runs" --data "$M" --out "$L" > "$L/torch.log" 2>&1 ||
        fail "minilm_torch.py (log minilm/torch.log)"
    cat "$L/torch.log"
    # bf16 at a serving batch (the compiler issue's H200 target): Emily.Compiler and PyTorch
    local bshapes=${MINILM_BF16_SHAPES:-256x128}
    [ -n "$QUICK" ] && bshapes=""
    if [ -n "$bshapes" ]; then
        echo "== MiniLM bf16 on Emily.Compiler and PyTorch ($dev): $bshapes"
        EMILY_GRAPH_TRACE=1 MINILM_TYPE=bf16 MINILM_LANES=compiler MINILM_DEVICE=$dev MINILM_SHAPES=$bshapes MINILM_RUNS=$runs \
            EMILY_MODELS_DATA=$M EMILY_MODELS_OUT=$L timeout "$(limit 240)" elixir "${paths[@]}" \
            bench/models/minilm.exs > "$L/emily_bf16.log" 2>&1 || fail "minilm.exs bf16 (log minilm/emily_bf16.log)"
        cat "$L/emily_bf16.log"
        MINILM_TYPE=bf16 PYTHONUNBUFFERED=1 timeout "$(limit 180)" python3 bench/models/minilm_torch.py \
            --device "$dev" --shapes "$bshapes" --runs "$runs" --data "$M" --out "$L" > "$L/torch_bf16.log" 2>&1 ||
            fail "minilm_torch.py bf16 (log minilm/torch_bf16.log)"
        cat "$L/torch_bf16.log"
    fi
    # where the GPU time goes: each callback's time, the device synchronized
    # around every call (no replay), one run each of f32 32x128 and bf16
    # 256x128 (minilm/profile.log, profile_bf16.log)
    if [ -z "$QUICK" ]; then
        local pt ps
        for pt in f32:32x128 bf16:256x128; do
            ps=${pt#*:}; pt=${pt%%:*}
            EMILY_GRAPH_PROFILE=2 MINILM_TYPE=$pt MINILM_LANES=compiler MINILM_DEVICE=$dev MINILM_SHAPES=$ps \
                MINILM_RUNS=1 EMILY_MODELS_DATA=$M EMILY_MODELS_OUT=$L/profile timeout "$(limit 120)" \
                elixir "${paths[@]}" bench/models/minilm.exs > "$L/profile_$pt.log" 2>&1 ||
                note "the profile run failed (minilm/profile_$pt.log)"
            echo "-- profile $pt $ps"
            awk '/emily graph run/{n++} n==2' "$L/profile_$pt.log" | head -n 30
        done
    fi
    [ -f "$L/results.jsonl" ] || return 1
    python3 bench/models/report.py "$L" | tee "$L/table.md"
    python3 - "$L/results.jsonl" <<'PY' | while read -r line; do note "$line"; done
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "agree" in r:
        who = "torch" if r["agree"] == "torch" else f"Emily {r['agree']}"
        print(f"MiniLM {r['shape']}: {who} vs {r.get('agree_with', 'torch')}: "
              f"max abs diff {r['max_abs_diff']:.2e}, min cosine {r['min_cosine']:.8f} "
              f"(1 - cosine {1 - r['min_cosine']:.1e})")
    elif r.get("how") == "error":
        print(f"MiniLM {r['shape']}: {r['lane']} raised: {r['detail'][:200]}")
    elif "median_ms" in r:
        print(f"MiniLM {r['shape']}: {r['lane']} median {r['median_ms']} ms ({r['how']})")
PY
}

step_bench() {
    local L=$STATE/logs/bench
    rm -rf "$L"; mkdir -p "$L"
    echo "== benchmarks"
    : > "$L/emily.jsonl"
    timeout "$(limit 60)" "$W/bin/chain" --device cuda:0 >> "$L/emily.jsonl" 2>> "$L/report.txt" || fail "chain (bench/report.txt)"
    timeout "$(limit 30)" "$W/bin/launch_floor" | tee "$L/launch_floor.jsonl" || note "launch_floor failed"
    # BENCH_ONLY=sort,conv2d,...: only the cases whose names start so (both sides)
    local only=${BENCH_ONLY:+--only $BENCH_ONLY}
    timeout "$(limit 300)" "$W/bin/emily_bench" --device cuda:0 $QUICK $only >> "$L/emily.jsonl" 2>> "$L/report.txt" \
        || fail "emily_bench failed or a result was WRONG (bench/report.txt)"
    cat "$L/emily.jsonl"
    PYTHONUNBUFFERED=1 timeout "$(limit 200)" python3 bench/gpu/peers.py torch $QUICK $only > "$L/torch.jsonl" 2>> "$L/report.txt" \
        || note "torch peer failed (bench/report.txt)"
    XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1 timeout "$(limit 150)" python3 bench/gpu/peers.py jax $QUICK $only \
        > "$L/jax.jsonl" 2>> "$L/report.txt" || note "jax peer failed (bench/report.txt)"
    python3 bench/gpu/peers.py report "$L/emily.jsonl" "$L/torch.jsonl" "$L/jax.jsonl" | tee -a "$L/report.txt"
    note "benchmark table: bench/report.txt"
}

step_sanitize() {
    local L=$STATE/logs/sanitize t tool rc cs
    rm -rf "$L"; mkdir -p "$L"
    cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1)
    [ -n "$cs" ] || { fail "no compute-sanitizer on this machine"; return 1; }
    local tests=${SANITIZE_TESTS:-test_cuda_sdpa test_cuda_fast_norm test_cuda_rope test_cuda_softmax test_cuda_quant test_cuda_fp8}
    for t in $tests; do
        # test_cuda_sdpa's timing case (8 x 16 x 4096 x 128, many runs) would
        # take hours under the tools: every other case of it
        local only=()
        [ "$t" = test_cuda_sdpa ] && only=(--only gpu_sdpa_shapes --only gpu_sdpa_causal --only gpu_sdpa_masks
                                           --only gpu_sdpa_fully --only gpu_sdpa_views)
        for tool in memcheck racecheck synccheck; do
            timeout "$(limit ${SANITIZE_SECONDS:-120})" "$cs" --tool "$tool" --error-exitcode 99 \
                "$W/bin/$t" "${only[@]}" > "$L/$t.$tool.log" 2>&1
            rc=$?
            note "compute-sanitizer $tool $t: rc=$rc, $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$L/$t.$tool.log" | tail -n 1)"
            [ $rc -eq 0 ] || { grep -E '=========' "$L/$t.$tool.log" | head -n 12; fail "$tool $t (rc=$rc, log sanitize/$t.$tool.log)"; }
        done
    done
}

# compute-sanitizer over the engine's main test and the whole corpus on the
# GPU (issue 20): the tools see every kernel the corpus reaches
step_sanitize_corpus() {
    local L=$STATE/logs/sanitize_corpus tool rc cs f log
    rm -rf "$L"; mkdir -p "$L"
    cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1)
    [ -n "$cs" ] || { fail "no compute-sanitizer on this machine"; return 1; }
    for tool in ${CORPUS_TOOLS:-memcheck racecheck}; do
        for f in ${CORPUS_FILES:-test_cuda doctests narrow sweep}; do
            log=$L/$f.$tool.log
            # CORPUS_SHARDS processes share the work, each under its own
            # tool, so it fits the limit: a corpus file's cases by
            # conformance --shard K/N, test_cuda's cases dealt out by name
            local n=${CORPUS_SHARDS:-8} k t i pids=() r names=() args extra=()
            t=$(limit ${CORPUS_SECONDS:-240})
            # test_cuda's case names (--list prints other lines too, such as
            # "cuda: 1 device(s)"); it checks that a 4 TiB cudaMalloc fails
            # cleanly, an API error memcheck would report (its memory-access
            # checks stay on)
            if [ "$f" = test_cuda ]; then
                mapfile -t names < <("$W/bin/test_cuda" --list | grep -E '^[a-z0-9_]+$' | grep -E "${CORPUS_CASES:-.}")
                extra=(--report-api-errors no)
            fi
            # CORPUS_PARTS=P: each test_cuda shard runs as P processes,
            # each taking every P-th work item of the cases that divide
            # theirs (--part, the sort cases), for cases too slow under a
            # tool for one process
            local parts=${CORPUS_PARTS:-1} p id
            for k in $(seq 0 $((n - 1))); do
                for p in $(seq 0 $((parts - 1))); do
                    id=$k
                    if [ "$f" = test_cuda ]; then
                        args=()
                        for i in "${!names[@]}"; do [ $((i % n)) -eq "$k" ] && args+=(--only "${names[$i]}"); done
                        [ ${#args[@]} -eq 0 ] && continue
                        args=("$W/bin/test_cuda" "${args[@]}")
                        [ "$parts" -gt 1 ] && { args+=(--part "$p/$parts"); id=$k.$p; }
                    else
                        [ "$p" -gt 0 ] && continue
                        args=("$W/bin/conformance" --shard "$k/$n" --device cuda:0 "$W/corpus/$f.jsonl")
                    fi
                    timeout "$t" "$cs" --tool "$tool" "${extra[@]}" --error-exitcode 99 "${args[@]}" > "$log.$id" 2>&1 &
                    pids+=("$id:$!")
                done
            done
            rc=0
            for i in "${pids[@]}"; do
                k=${i%%:*}
                wait "${i#*:}"; r=$?
                echo "### shard $k/$n: rc=$r" >> "$log"; cat "$log.$k" >> "$log"; rm -f "$log.$k"
                # a report (99) or a cut (124) outranks a failed case (1)
                if [ $r -eq 99 ] || [ $r -eq 124 ] || { [ $r -ne 0 ] && [ $rc -eq 0 ]; }; then rc=$r; fi
            done
            note "compute-sanitizer $tool $f: rc=$rc, $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | sort | uniq -c | tr '\n' ' ')$(
                grep -E '^device cuda' "$log" | awk '{p+=$3; fl+=$5; s+=$7} END {if (NR) printf "; %d shards: %d passed, %d failed, %d skipped", NR, p, fl, s}')$(
                grep -E 'tests, [0-9]+ failed' "$log" | awk '{t+=$(NF-4); fl+=$(NF-2)} END {if (NR) printf "; %d tests, %d failed checks", t, fl}')"
            # test_cuda's 2 documented complex pow checks and the sweep's 2
            # c128 tan cases fail without the tools too (exit 1): only a
            # report (99) or a run cut short (124) is the tools' finding
            [ $rc -eq 99 ] || [ $rc -eq 124 ] && { grep -E '=========' "$log" | head -n 12; fail "$tool $f (rc=$rc, log sanitize_corpus/$f.$tool.log)"; }
        done
    done
}

# SmolLM2's parts come one a call: each call keeps the ones it carries
stash_smollm2_parts() {
    local f
    mkdir -p "$STATE/smollm2-parts"
    for f in "$CARRY"/smollm2.gguf.* "$CARRY"/smollm2.sha256; do
        [ -f "$f" ] && cp "$f" "$STATE/smollm2-parts/"
    done
    return 0
}

step_generate() {
    local L=$STATE/logs/generate G=$STATE/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf P=$STATE/smollm2-parts
    rm -rf "$L"; mkdir -p "$L" "$STATE/smollm2"
    if [ ! -f "$G" ]; then
        [ -f "$P/smollm2.sha256" ] || { fail "SmolLM2: no smollm2.sha256 carried yet"; return 1; }
        cat "$P"/smollm2.gguf.* > "$G.tmp"
        if [ "$(sha256sum "$G.tmp" | cut -d' ' -f1)" != "$(cat "$P/smollm2.sha256")" ]; then
            fail "SmolLM2: the parts here ($(cd "$P" && ls smollm2.gguf.* | tr '\n' ' ')) do not make the file: one is missing"
            rm -f "$G.tmp"
            return 1
        fi
        mv "$G.tmp" "$G"
    fi
    echo "== test_generate (the CPU engine and the GPU)"
    EMILY_SMOLLM2_GGUF=$G timeout "$(limit 200)" "$W/bin/test_generate" > "$L/test_generate.log" 2>&1
    local rc=$?
    tail -n 20 "$L/test_generate.log"
    note "test_generate: rc=$rc, $(grep -E 'tests, [0-9]+ failed' "$L/test_generate.log" | tr '\n' ' ')"
    [ $rc -eq 0 ] || fail "test_generate (rc=$rc, log generate/test_generate.log)"
    grep -q SKIPPED "$L/test_generate.log" && fail "test_generate skipped cases (above)"
    # each weights mode timed by bench/models/generate (the built program,
    # this machine's Python; its PyTorch peer in f32, bf16 for bf16)
    local new=${GENERATE_NEW:-128} runs=${GENERATE_RUNS:-5} m log
    [ -n "$QUICK" ] && { new=16; runs=2; }
    for m in quantized bf16 f32; do
        log=$L/generate_$m.log
        echo "== bench/models/generate, $m weights on ${GENERATE_DEVICE:-cuda}: $new new tokens, $runs runs after a warm-up"
        EMILY_GENERATE=$W/bin/emily_generate PYTHON=python3 EMILY_SMOLLM2_GGUF=$G WEIGHTS=$m \
            DEVICE=${GENERATE_DEVICE:-cuda} NEW=$new RUNS=$runs THREADS=$(nproc) \
            PYTHONPATH="$W/python${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 \
            timeout "$(limit 200)" bash bench/models/generate > "$log" 2>&1 ||
            { tail -n 20 "$log"; fail "bench/models/generate $m (log generate/generate_$m.log)"; continue; }
        cat "$log"
        grep -E '^(emily \(|torch |ids:)' "$log" | while read -r line; do note "SmolLM2 $m: $line"; done
    done
}

step=setup
stash_smollm2_parts
engine_env || { fail "the engine pack could not be used"; STEPS=(); }
for step in "${STEPS[@]}"; do
    echo
    echo "######## $step"
    "step_$step" || failed=1
done

step=end
echo
echo "== summary (every step run on this machine so far; this call: ${STEPS[*]:-none})"
cat "$SUMMARY" | tee "$OUT/summary.txt"
tar -czf "$OUT/logs.tar.gz" -C "$STATE" logs 2>/dev/null
exit $failed
