#!/usr/bin/env bash
# Packs, on this machine, what bench/gpu/run.sh needs to run Emily's Elixir
# package and a Bumblebee model on the GPU machine, which has no Erlang,
# no Elixir and no network:
#
#   bench/gpu/carry/emily-beam.tar.xz   emily-beam/ (unpacked there to /tmp)
#     erlang/   a BEAM runtime: Debian's erlang-base and erlang-crypto (OTP
#               25, `apt-get download` into bench/gpu/debs/, dpkg -x), its
#               `erl` made relocatable; lib/ holds what it loads beyond libc
#     elixir/   Elixir 1.18's bin/ and compiled ebin folders
#     repo/     beam/ (Emily's package: sources, tests, priv/libemily_nif.so,
#               and _build/ with Nx, complex, telemetry and Emily compiled
#               for MIX_ENV=test), deps/{nx-0.13.1/nx,complex,telemetry}
#               (their sources: path dependencies); the corpus is read from
#               the repository's tests/corpus, which travels with every call
#     models/   the compiled ebin folders of Bumblebee, Axon and their
#               pure-Elixir dependencies (from the app bench/models/setup
#               makes), for bench/models/minilm.exs
#   bench/gpu/carry/minilm.tar.xz.NN    all-MiniLM-L6-v2 (config, tokenizer,
#               model.safetensors as byte planes: bench/gpu/minilm_files.py),
#               xz-compressed and cut into two parts: the first travels with
#               both packs in the first device call, the second alone
#   bench/gpu/carry/minilm.sha256       model.safetensors' checksum
#
# The NIF links the GPU pack's one engine library (build-export/libemily.so,
# `make EXPORT_ALL=1`, made by prepare.sh, which must run first): the GPU
# machine loads it from emily-gpu/lib. Nothing there is compiled, except
# `mix test`'s own test files (Elixir, seconds).
#
# Mix records where things were compiled: moved elsewhere, it compiles Nx
# and Emily again. So the pack is built in /tmp/emily-beam, where run.sh
# unpacks it on the GPU machine.
#
# Then checks the pack here: unpacks both packs again (emily-beam into
# /tmp/emily-beam, emily-gpu into a temporary folder) and runs, with a
# clean environment (env -i, a PATH with no system Erlang or Elixir), Nx's
# doctests and part of the corpus with `mix test` on the CPU, and
# minilm.exs on a few tokens, checking that nothing was compiled again.
#
#   bench/gpu/pack_beam.sh     (after bench/gpu/prepare.sh)
#
# Inputs (defaults): EMILY_MODELS_DEPS (/work/deps) with elixir-1.18,
# nx-0.13.1/nx, complex, telemetry; EMILY_MODELS_APP ($DEPS/models_app,
# compiled by bench/models/setup elixir); EMILY_MODELS_DATA
# ($DEPS/models_data, all-MiniLM-L6-v2 from bench/models/setup python).
# CALL_MIB (64): one device call's carry limit, working tree included.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD=${BUILD:-build-export}
DEPS=${EMILY_MODELS_DEPS:-/work/deps}
ELIXIR_HOME=${ELIXIR_HOME:-$DEPS/elixir-1.18}
NX=${EMILY_NX_PATH:-$DEPS/nx-0.13.1/nx}
COMPLEX=${EMILY_COMPLEX_PATH:-$DEPS/complex}
TELEMETRY=${EMILY_TELEMETRY_PATH:-$DEPS/telemetry}
APP=${EMILY_MODELS_APP:-$DEPS/models_app}
DATA=${EMILY_MODELS_DATA:-$DEPS/models_data}
CALL_MIB=${CALL_MIB:-64}
CARRY=bench/gpu/carry
DEBS=bench/gpu/debs
GPU_PACK=$CARRY/emily-gpu.tar.xz
# the Bumblebee closure (bench/models/setup's sources) and the tokenizers stand-in
MODEL_APPS="bumblebee axon polaris safetensors nx_image nx_signal unpickler jason unzip progress_bar decimal tokenizers"

die() { echo "pack_beam: $*" >&2; exit 1; }
[ -x "$ELIXIR_HOME/bin/elixir" ] || die "no Elixir at $ELIXIR_HOME (EMILY_MODELS_DEPS, ELIXIR_HOME)"
for d in "$NX" "$COMPLEX" "$TELEMETRY"; do [ -f "$d/mix.exs" ] || die "$d/mix.exs not found"; done
for a in $MODEL_APPS; do
    [ -d "$APP/_build/dev/lib/$a/ebin" ] || die "$APP/_build/dev/lib/$a/ebin missing: run bench/models/setup elixir"
done
[ -f "$DATA/all-MiniLM-L6-v2/model.safetensors" ] || die "$DATA/all-MiniLM-L6-v2 missing: run bench/models/setup python"
[ -f "$GPU_PACK" ] || die "$GPU_PACK missing: run bench/gpu/prepare.sh first"
[ "$GPU_PACK" -nt "$BUILD/libemily.so" ] || die "$GPU_PACK is older than $BUILD/libemily.so: run bench/gpu/prepare.sh again"

echo "== Erlang/OTP packages (Debian, into $DEBS)"
mkdir -p "$DEBS"
if ! ls "$DEBS"/erlang-base_*.deb "$DEBS"/erlang-crypto_*.deb >/dev/null 2>&1; then
    (cd "$DEBS" && apt-get download erlang-base erlang-crypto)
fi
ls "$DEBS"
# the NIF is compiled against this machine's erl_nif.h and the Elixir code
# by this machine's OTP: the packed runtime must be the same release
have=$(dpkg-query -W -f '${Version}\n' erlang-base erlang-dev 2>/dev/null | sort -u || true)
packed=$(dpkg-deb -f "$(ls "$DEBS"/erlang-base_*.deb | tail -n 1)" Version)
[ "$have" = "$packed" ] ||
    die "erlang-base $packed in $DEBS, but this machine has erlang-base/erlang-dev '$have': empty $DEBS and run again"

stage=$(mktemp -d)
# the place run.sh unpacks it to (see above)
P=/tmp/emily-beam
trap 'rm -rf "$stage" "$P"' EXIT
rm -rf "$P"
mkdir -p "$P/lib" "$P/elixir/bin" "$P/models" "$P/repo"

echo "== BEAM runtime"
for deb in "$DEBS"/erlang-base_*.deb "$DEBS"/erlang-crypto_*.deb; do dpkg -x "$deb" "$stage/debroot"; done
mv "$stage/debroot/usr/lib/erlang" "$P/erlang"
# Debian's erl has ROOTDIR=/usr/lib/erlang written in; the copy finds its
# root from its own place (dyn_erl --realpath, which the script computes)
for erl in "$P/erlang/bin/erl" "$P"/erlang/erts-*/bin/erl; do
    sed -i 's|^\( *\)ROOTDIR=/usr/lib/erlang$|\1ROOTDIR="$dyn_rootdir"|' "$erl"
    grep -q '^ *ROOTDIR=/usr/lib/erlang' "$erl" && die "could not make $erl relocatable"
done
# what the runtime loads beyond the C/C++ runtime (terminal, zlib, OpenSSL)
for bin in "$P"/erlang/erts-*/bin/beam.smp "$P"/erlang/lib/crypto-*/priv/lib/*.so; do ldd "$bin"; done |
    awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u | while read -r soname path; do
    case "$soname" in libc.so.*|libm.so.*|libstdc++.so.*|libgcc_s.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*) continue ;; esac
    cp -L "$path" "$P/lib/$soname"
    echo "   $soname"
done

echo "== Elixir $(cat "$ELIXIR_HOME/VERSION")"
cp "$ELIXIR_HOME"/bin/elixir "$ELIXIR_HOME"/bin/elixirc "$ELIXIR_HOME"/bin/iex "$ELIXIR_HOME"/bin/mix "$P/elixir/bin/"
for app in elixir eex ex_unit logger mix iex; do
    mkdir -p "$P/elixir/lib/$app"
    cp -r "$ELIXIR_HOME/lib/$app/ebin" "$P/elixir/lib/$app/"
done

echo "== repository part: beam/, Nx's sources"
R=$P/repo
# beam/ as the work tree has it (tracked and untracked files, not ignored ones)
git ls-files -co --exclude-standard beam | while read -r f; do
    [ -f "$f" ] || continue
    mkdir -p "$R/$(dirname "$f")"
    cp -p "$f" "$R/$f"
done
mkdir -p "$R/deps/nx-0.13.1"
cp -rp "$NX" "$R/deps/nx-0.13.1/nx"
cp -rp "$COMPLEX" "$R/deps/complex"
cp -rp "$TELEMETRY" "$R/deps/telemetry"
rm -rf "$R"/deps/nx-0.13.1/nx/{_build,deps,test,guides,*.png} "$R"/deps/{complex,telemetry}/{_build,deps,test,.git}

echo "== compile (MIX_ENV=test): Nx and Emily, the NIF against $BUILD/libemily.so"
# the NIF must link the library the GPU pack carries, as prepare.sh built it
make -q EXPORT_ALL=1 CUDA=1 BUILD="$BUILD" "$BUILD/libemily.so" ||
    die "$BUILD/libemily.so is out of date: run bench/gpu/prepare.sh again"
# paths inside the pack (run.sh sets EMILY_NX_PATH the same; complex and
# telemetry are found beside Nx there)
mixenv() {
    env MIX_ENV=test MIX_HOME="$stage/mixhome" HEX_OFFLINE=1 \
        EMILY_NX_PATH="$R/deps/nx-0.13.1/nx" \
        EMILY_COMPLEX_PATH="$R/deps/complex" EMILY_TELEMETRY_PATH="$R/deps/telemetry" \
        PATH="$ELIXIR_HOME/bin:$PATH" "$@"
}
(cd "$R/beam" && mixenv EMILY_ENGINE_DIR="$ROOT" EMILY_BUILD_DIR="$BUILD" EMILY_LINK=shared EXPORT_ALL=1 \
    mix compile > "$stage/compile.log" 2>&1) || { tail -n 40 "$stage/compile.log"; die "mix compile failed"; }
[ -f "$R/beam/priv/libemily_nif.so" ] || die "the NIF was not built"
strip --strip-debug "$R/beam/priv/libemily_nif.so"
readelf -d "$R/beam/priv/libemily_nif.so" | grep -q 'NEEDED.*libemily.so' ||
    die "the NIF does not link libemily.so dynamically"

echo "== Bumblebee and its dependencies (compiled ebins from $APP)"
for a in $MODEL_APPS; do
    mkdir -p "$P/models/$a"
    cp -r "$APP/_build/dev/lib/$a/ebin" "$P/models/$a/"
done

# Half of every .beam is its debug information (the abstract code), which
# only protocol consolidation reads (of protocols) and the docs only
# doctests read (Nx's): both go from the runtime, Elixir and Bumblebee's
# closure; Nx's and Emily's beams stay as Mix compiled them.
echo "== strip debug information and docs (protocols keep theirs)"
erl -noshell -eval '
    Strip = fun(F) ->
        {ok, {_, [{exports, Ex}]}} = beam_lib:chunks(F, [exports]),
        case lists:member({'"'"'__protocol__'"'"', 1}, Ex) of
            true -> ok;
            false ->
                {ok, _, Chunks} = beam_lib:all_chunks(F),
                {ok, Bin} = beam_lib:build_module([C || {Id, _} = C <- Chunks, Id =/= "Dbgi", Id =/= "Docs"]),
                ok = file:write_file(F, Bin)
        end
    end,
    [Strip(F) || D <- init:get_plain_arguments(), F <- filelib:wildcard(D ++ "/**/*.beam")],
    halt().' -extra "$P/erlang/lib" "$P/elixir/lib" "$P/models"

mkdir -p "$CARRY"
rm -f "$CARRY/emily-beam.tar.xz"
XZ_OPT=-T2 tar -cJf "$CARRY/emily-beam.tar.xz" -C "$(dirname "$P")" "$(basename "$P")"
rm -rf "$P"
echo "== packed: $(du -h "$CARRY/emily-beam.tar.xz" | cut -f1) in $CARRY/emily-beam.tar.xz"

echo "== all-MiniLM-L6-v2 in parts"
# Cut so that the first part travels with both packs in the first call
# and the rest in the second: CALL_MIB less what the working tree weighs
# (tracked and untracked files, and shared/, travel with every call), less
# 4 MiB for what the tree may gain before the calls.
M=bench/gpu/work/minilm.tar.xz
mkdir -p bench/gpu/work
if [ ! -f "$M" ] || [ ! -f "$M.sha256" ] || [ "$DATA/all-MiniLM-L6-v2/model.safetensors" -nt "$M" ]; then
    mkdir -p "$stage/minilm"
    cp -r "$DATA/all-MiniLM-L6-v2" "$stage/minilm/"
    f=$stage/minilm/all-MiniLM-L6-v2/model.safetensors
    python3 bench/gpu/minilm_files.py planes "$f" "$f.planes" > "$M.sha256"
    rm "$f"
    XZ_OPT=-T2 tar -cJf "$M.tmp" -C "$stage/minilm" all-MiniLM-L6-v2 && mv "$M.tmp" "$M"
fi
tree=$(git ls-files -co --exclude-standard -z | du -cb --files0-from=- 2>/dev/null | tail -n 1 | cut -f1)
[ -d shared ] && tree=$((tree + $(du -sb shared | cut -f1)))
budget=$((CALL_MIB * 1048576 - tree - 4 * 1048576))
first=$((budget - $(stat -c %s "$GPU_PACK") - $(stat -c %s "$CARRY/emily-beam.tar.xz")))
rest=$(($(stat -c %s "$M") - first))
[ "$first" -gt 0 ] || die "the packs leave no room for the weights in the first call"
rm -f "$CARRY"/minilm.tar.xz.*
head -c "$first" "$M" > "$CARRY/minilm.tar.xz.00"
if [ "$rest" -le "$budget" ]; then
    tail -c +"$((first + 1))" "$M" > "$CARRY/minilm.tar.xz.01"
else # a third call: the rest in two halves (docs/GPU.md)
    half=$(((rest + 1) / 2))
    dd if="$M" of="$CARRY/minilm.tar.xz.01" bs=1M iflag=skip_bytes,count_bytes skip="$first" count="$half" status=none
    tail -c +"$((first + half + 1))" "$M" > "$CARRY/minilm.tar.xz.02"
    echo "pack_beam: the weights take three calls: carry minilm.tar.xz.01 with the second, .02 with the third"
fi
cp "$M.sha256" "$CARRY/minilm.sha256"
ls -l "$CARRY"

echo "== check here: both packs unpacked, a clean environment, the CPU"
check=$stage/check
mkdir -p "$check/sysbin"
tar -xJf "$GPU_PACK" -C "$check"
tar -xJf "$CARRY/emily-beam.tar.xz" -C "$(dirname "$P")"
touch "$check/unpacked"
# a PATH without the system's Erlang and Elixir: only the tools scripts use
for t in sh bash env dirname basename readlink uname cat sed grep mkdir rm ls cp mv tr cut head tail sort wc date; do
    ln -s "$(command -v "$t")" "$check/sysbin/$t"
done
clean() {
    env -i HOME="$check" LANG=C.UTF-8 PATH="$P/erlang/bin:$P/elixir/bin:$check/sysbin" \
        LD_LIBRARY_PATH="$P/lib:$check/emily-gpu/lib" MIX_ENV=test MIX_HOME="$check/mix" HEX_OFFLINE=1 \
        EMILY_PREBUILT=1 EMILY_NX_PATH="$P/repo/deps/nx-0.13.1/nx" EMILY_CORPUS="$ROOT/tests/corpus" "$@"
}
clean erl -noshell -eval 'io:format("runtime: OTP ~s at ~s~n", [erlang:system_info(otp_release), code:root_dir()]), halt().'
clean bash -c 'command -v erl elixir mix' | sed 's/^/   /'
clean elixir -e 'IO.puts("Elixir #{System.version()}")'
(cd "$P/repo/beam" && clean mix test test/nx/nx_doctest_test.exs test/emily/conformance_doctests_test.exs \
    > "$check/mix.log" 2>&1) || { tail -n 40 "$check/mix.log"; die "mix test failed in the unpacked pack"; }
grep -E '^[0-9]+ (doctests?|tests?)|^Finished' "$check/mix.log"
grep -E 'Generated .* app|Compiling [0-9]+ files? \(\.ex\)' "$check/mix.log" && die "mix compiled Nx or Emily again"
find "$P" -newer "$check/unpacked" -name '*.so' | grep . && die "a library was built again"

echo "== check here: MiniLM through Bumblebee on Emily (CPU, 2x16 tokens), parts joined"
python3 bench/gpu/minilm_files.py unpack "$check/models" "$CARRY/minilm.sha256" "$CARRY"/minilm.tar.xz.*
paths=()
for d in "$P"/repo/beam/_build/nx-*/test/lib/*/ebin "$P"/models/*/ebin; do paths+=(-pa "$d"); done
clean MINILM_DEVICE=cpu MINILM_SHAPES=2x16 MINILM_RUNS=1 EMILY_MODELS_DATA="$check/models" \
    EMILY_MODELS_OUT="$check/out" elixir "${paths[@]}" bench/models/minilm.exs
grep -q '"how":"error"' "$check/out/results.jsonl" && die "a MiniLM lane raised (above)"
echo "== packs ready; the device calls are listed in docs/GPU.md (Running on the GPU machine)"
