#!/bin/sh
# Measures the CUDA engine's f64 math as the GPU computes it, without a
# GPU: libdevice (the CUDA toolkit's device math library, LLVM bitcode) is
# compiled for the host with LLVM's tools and compare.cpp counts, for each
# f64 transcendental op, the inputs of test_cuda_libm where the device's
# own function and where the engine's f64 form differ from glibc.
#
# usage: tools/libdevice_host/run.sh [OUT_DIR]     (from the repository root)
# needs: nvcc's libdevice.10.bc, llvm-extract and llc (LLVM 14 reads the
# CUDA 13 libdevice), python3, cc, c++.
set -eu
here=$(dirname "$0")
out=${1:-build-libdevice}
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
libdevice=$(dirname "$nvcc")/../nvvm/libdevice/libdevice.10.bc
mkdir -p "$out"
funcs="exp log sin cos tan asin acos atan atan2 pow sinh cosh tanh asinh acosh atanh erf erfc"
args=""
for f in $funcs; do args="$args --func=__nv_$f"; done
# shellcheck disable=SC2086 # $args is a list of options
llvm-extract --recursive $args --glob=__cudart_i2opi_d --glob=__cudart_sin_cos_coeffs \
    --glob=.str --glob=.str.1 "$libdevice" -S -o "$out/libdevice_f64.ll"
python3 "$here/rewrite_ll.py" "$out/libdevice_f64.ll" "$out/libdevice_host.ll"
llc -O2 -relocation-model=pic -filetype=obj "$out/libdevice_host.ll" -o "$out/libdevice_host.o"
cc -O2 -ffp-contract=off -c "$here/nvvm_intrinsics.c" -o "$out/nvvm_intrinsics.o"
c++ -std=c++20 -O2 -ffp-contract=off -Iinclude -Isrc -Itests/unit "$here/compare.cpp" \
    "$out/libdevice_host.o" "$out/nvvm_intrinsics.o" -lm -o "$out/compare"
"$out/compare"
