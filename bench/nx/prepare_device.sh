#!/usr/bin/env bash
# Here: packs what bench/nx/device_encoder.sh needs on the GPU machine into
# bench/nx/carry/pack.tar.xz (ignored by git): build/emily_run and
# build/tests/test_graph, test_cuda (CUDA build, static libemily), the
# shared libraries they load that are not in the C runtime or the CUDA
# toolkit, and the encoder graphs (Emily.Compiler's save_graph of
# bench/nx/encoder.exs, from GRAPHS, default /tmp).
set -euo pipefail
cd "$(dirname "$0")/../.."
GRAPHS=${GRAPHS:-/tmp}
make -s -j2 build/emily_run build/tests/test_graph build/tests/test_cuda
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/graphs" bench/nx/carry
cp build/emily_run build/tests/test_graph build/tests/test_cuda "$stage/bin/"
strip --strip-debug "$stage"/bin/*
cp "$GRAPHS"/encoder_*.emg "$stage/graphs/"
for bin in "$stage"/bin/*; do
    ldd "$bin" | awk '/=>/ {print $1, $3}' | while read -r name path; do
        case "$name" in
            libc.so*|libm.so*|libpthread*|libdl*|librt*|ld-linux*|libstdc++*|libgcc_s*|libcu*|libnv*) continue ;;
        esac
        [ -f "$stage/lib/$name" ] || cp -L "$path" "$stage/lib/$name"
    done
done
strip --strip-debug "$stage"/lib/* 2>/dev/null || true
rm -f bench/nx/carry/pack.tar
tar -cf - -C "$stage" . | xz -T2 -6 > bench/nx/carry/pack.tar.xz
ls -la bench/nx/carry/pack.tar.xz
