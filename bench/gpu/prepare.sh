#!/usr/bin/env bash
# Builds, on this machine, everything bench/gpu/run.sh needs on the GPU
# machine (which has the CUDA driver, toolkit libraries, python with torch
# and jax, but no jansson/sleef and no network), and packs it into
# bench/gpu/carry/emily-gpu.tar.xz (ignored by git; send it with the
# device call's `carry`):
#
#   lib/     libemily.so (CUDA engine, sm_90) and the libraries it needs
#            that are not part of the C/C++ runtime or the CUDA toolkit
#   bin/     conformance, test_cuda, test_dot, emily_bench, chain, linked
#            against libemily.a (they call internal emi_ functions, which
#            libemily.so does not export); run.sh puts lib/ on
#            LD_LIBRARY_PATH for the libraries they load; launch_floor
#   corpus/  the conformance corpus (doctests.jsonl, sweep.jsonl)
#
# Then checks here that every binary loads and runs its CPU parts.
#   bench/gpu/prepare.sh            (BUILD=build-gpu JOBS=2 by default)
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build-gpu}
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

echo "== build ($BUILD, CUDA=1)"
make -s BUILD="$BUILD" CUDA=1 -j"$JOBS" "$BUILD/libemily.so" "$BUILD/libemily.a" "$BUILD/conformance" \
    "$BUILD/tests/test_cuda" "$BUILD/tests/test_dot"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
P=$stage/emily-gpu
mkdir -p "$P/bin" "$P/lib" "$P/corpus"
cp "$BUILD/libemily.so" "$P/lib/"
strip --strip-debug "$P/lib/libemily.so"

# The programs link the engine statically (libemily.a): tests and
# benchmarks reach internal (emi_) functions, which libemily.so does not
# export. They find the other libraries in lib/ (run.sh sets
# LD_LIBRARY_PATH; emily_bench and chain also carry rpath $ORIGIN/../lib).
echo "== link the programs"
cp "$BUILD/conformance" "$BUILD/tests/test_cuda" "$BUILD/tests/test_dot" "$P/bin/"
LINK="$BUILD/libemily.a $(make -s --no-print-directory BUILD="$BUILD" CUDA=1 --eval 'emily-link-flags: ; @echo $(LDFLAGS) $(LDLIBS)' emily-link-flags)"
RPATH="-Wl,-rpath,\$ORIGIN/../lib"
CF="-std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -Iinclude -Isrc -I$CUDA_HOME/include"
gcc $CF -o "$P/bin/emily_bench" bench/gpu/emily_bench.c $LINK $RPATH
gcc $CF -o "$P/bin/chain" bench/gpu/chain.c $LINK $RPATH
# debug information would make the pack too large to carry (the engine is
# linked into every program)
strip --strip-debug "$P"/bin/*
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

echo "== check here (no GPU: CPU parts only)"
export LD_LIBRARY_PATH="$P/lib"
"$P/bin/test_cuda" | tail -n 2
"$P/bin/conformance" --ops add,sum,as_type "$P/corpus/doctests.jsonl" | tail -n 1
"$P/bin/chain" --device cpu --n 1000 --reps 1 >/dev/null
"$P/bin/emily_bench" --device cpu --quick --runs 1 >/dev/null
unset LD_LIBRARY_PATH

mkdir -p "$CARRY"
rm -f "$CARRY/emily-gpu.tar.xz"
tar -cJf "$CARRY/emily-gpu.tar.xz" -C "$stage" emily-gpu
echo "== packed: $(du -h "$CARRY/emily-gpu.tar.xz" | cut -f1) in $CARRY/emily-gpu.tar.xz"
echo "   on the GPU machine: bash bench/gpu/run.sh   (device call with carry [\"$CARRY\"])"
