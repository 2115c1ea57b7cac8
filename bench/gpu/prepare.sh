#!/usr/bin/env bash
# Builds, on this machine, everything bench/gpu/run.sh needs on the GPU
# machine (which has the CUDA driver, toolkit libraries, python with torch
# and jax, but no jansson/sleef and no network), and packs it into
# bench/gpu/carry/emily-gpu.tar.xz (ignored by git; send it with the
# device call's `carry`):
#
#   lib/     libemily.so (CUDA engine, sm_90) and the libraries it needs
#            that are not part of the C/C++ runtime or the CUDA toolkit
#   bin/     conformance, the unit tests with CUDA cases (test_cuda*,
#            test_dot), emily_bench, chain; launch_floor; the SmolLM2
#            example and its test (emily_generate, test_generate: run.sh's
#            generate step, with the GGUF from pack_smollm2.sh)
#   python/  the `gguf` package transformers needs to read a GGUF (pure
#            Python; the GPU machine's Python lacks it), from
#            $EMILY_MODELS_VENV when it has one
#   corpus/  the conformance corpus (doctests.jsonl, sweep.jsonl, narrow.jsonl)
#
# The engine is built once, with `make EXPORT_ALL=1` (build-export/): every
# internal emi_ function is exported from that libemily.so, so the tests
# and benchmarks, which call them, link it dynamically (rpath
# $ORIGIN/../lib) instead of each carrying the engine and its CUDA kernels
# statically; pack_beam.sh links the Elixir NIF against the same library.
# Then checks here that every binary loads and runs its CPU parts.
#   bench/gpu/prepare.sh            (BUILD=build-export JOBS=2 by default)
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build-export}
JOBS=${JOBS:-2}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
# the corpus ships in tests/corpus (gzip); EMILY_CORPUS names a folder of plain .jsonl
CORPUS=${EMILY_CORPUS:-tests/corpus}
CARRY=bench/gpu/carry

command -v "$CUDA_HOME/bin/nvcc" >/dev/null || { echo "prepare: no nvcc at $CUDA_HOME/bin" >&2; exit 1; }
for f in doctests sweep; do
    [ -f "$CORPUS/$f.jsonl" ] || [ -f "$CORPUS/$f.jsonl.gz" ] ||
        { echo "prepare: $CORPUS/$f.jsonl(.gz) not found (set EMILY_CORPUS)" >&2; exit 1; }
done

# the unit tests with GPU cases: test_cuda and one test_cuda_<family> per
# CUDA family, and test_dot (cuBLAS)
TESTS="test_dot $(cd tests/unit && ls test_cuda*.c | sed 's/\.c$//' | tr '\n' ' ')"
echo "== build ($BUILD, CUDA=1, EXPORT_ALL=1): libemily.so, conformance, $TESTS"
MK=(make -s BUILD="$BUILD" CUDA=1 EXPORT_ALL=1)
"${MK[@]}" -j"$JOBS" "$BUILD/libemily.so" "$BUILD/conformance" $(for t in $TESTS; do echo "$BUILD/tests/$t"; done) \
    "$BUILD/emily_generate" "$BUILD/tests/test_generate"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
P=$stage/emily-gpu
mkdir -p "$P/bin" "$P/lib" "$P/corpus"
cp "$BUILD/libemily.so" "$P/lib/"

echo "== link the programs against lib/libemily.so"
# (the Makefile's programs carry rpath $ORIGIN/../lib in this build)
cp "$BUILD/conformance" "$P/bin/"
for t in $TESTS; do cp "$BUILD/tests/$t" "$P/bin/"; done
cp "$BUILD/emily_generate" "$BUILD/tests/test_generate" "$P/bin/"
VENV=${EMILY_MODELS_VENV:-/work/deps/models_venv}
gguf_py=$(ls -d "$VENV"/lib/python3*/site-packages/gguf 2>/dev/null | head -n 1 || true)
if [ -n "$gguf_py" ]; then
    mkdir -p "$P/python"
    cp -r "$gguf_py" "$P/python/"
    # its metadata too: transformers reads the package's version from it
    cp -r "$(dirname "$gguf_py")"/gguf-*.dist-info "$P/python/"
    find "$P/python" -name __pycache__ -prune -exec rm -rf {} +
else
    echo "prepare: no gguf package in $VENV: the generate step's PyTorch peer will not load the GGUF"
fi
LINK="-L$BUILD -lemily $("${MK[@]}" --no-print-directory --eval 'emily-link-flags: ; @echo $(LDFLAGS) $(LDLIBS)' emily-link-flags)"
RPATH="-Wl,-rpath,\$ORIGIN/../lib"
CF="-std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -Iinclude -Isrc -I$CUDA_HOME/include"
gcc $CF -o "$P/bin/emily_bench" bench/gpu/emily_bench.c $LINK $RPATH
gcc $CF -o "$P/bin/chain" bench/gpu/chain.c $LINK $RPATH
strip --strip-debug "$P"/lib/libemily.so "$P"/bin/*
for bin in "$P"/bin/*; do
    readelf -d "$bin" | grep -q 'NEEDED.*\[libemily.so\]' || { echo "prepare: $bin does not load libemily.so" >&2; exit 1; }
done
# the launch floor (runtime and driver alone, no engine)
"$CUDA_HOME/bin/nvcc" -O2 -std=c++17 -gencode arch=compute_90,code=sm_90 -o "$P/bin/launch_floor" \
    bench/gpu/launch_floor.cu -L"$CUDA_HOME/lib64/stubs" -lcuda

echo "== libraries the GPU machine may lack"
# everything libemily.so and the programs load, except the C/C++ runtime,
# the dynamic loader and the CUDA toolkit (the GPU machine has CUDA 13)
for bin in "$P/lib/libemily.so" "$P"/bin/*; do
    LD_LIBRARY_PATH="$P/lib" ldd "$bin"
done | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u | while read -r soname path; do
    case "$soname" in
        libc.so.*|libm.so.*|libstdc++.so.*|libgcc_s.so.*|libgomp.so.*|libpthread.so.*|libdl.so.*|\
        librt.so.*|ld-linux*|libemily.so|libcuda*|libcublas*|libnv*) continue ;;
    esac
    case "$path" in "$CUDA_HOME"/*|/usr/local/cuda*) continue ;; esac
    cp -L "$path" "$P/lib/$soname"
    echo "   $soname"
done

for f in doctests sweep; do
    if [ -f "$CORPUS/$f.jsonl" ]; then cp "$CORPUS/$f.jsonl" "$P/corpus/"
    else gzip -dc "$CORPUS/$f.jsonl.gz" > "$P/corpus/$f.jsonl"; fi
done
# the narrow types' corpus is ours, always in tests/corpus (NARROW.md)
gzip -dc tests/corpus/narrow.jsonl.gz > "$P/corpus/narrow.jsonl"

echo "== check here (no GPU: CPU parts only)"
# the programs find the packed engine through their rpath
found=$(ldd "$P/bin/conformance" | awk '$1 == "libemily.so" {print $3}')
[ -n "$found" ] && [ "$(realpath "$found")" = "$(realpath "$P/lib/libemily.so")" ] ||
    { echo "prepare: bin/conformance does not find lib/libemily.so by its rpath (found '$found')" >&2; exit 1; }
export LD_LIBRARY_PATH="$P/lib"
for t in $TESTS; do "$P/bin/$t" | tail -n 1; done
EMILY_SMOLLM2_GGUF=/nonexistent "$P/bin/test_generate" | tail -n 2 # the model cases run on the GPU machine
"$P/bin/conformance" --ops add,sum,as_type "$P/corpus/doctests.jsonl" | tail -n 1
"$P/bin/chain" --device cpu --n 1000 --reps 1 >/dev/null
"$P/bin/emily_bench" --device cpu --quick --runs 1 >/dev/null
unset LD_LIBRARY_PATH

mkdir -p "$CARRY"
rm -f "$CARRY/emily-gpu.tar.xz"
XZ_OPT=-T2 tar -cJf "$CARRY/emily-gpu.tar.xz" -C "$stage" emily-gpu
echo "== packed: $(du -h "$CARRY/emily-gpu.tar.xz" | cut -f1) in $CARRY/emily-gpu.tar.xz"
echo "   next: bench/gpu/pack_beam.sh; the device calls are in docs/GPU.md (Running on the GPU machine)"
