#!/usr/bin/env bash
# Cuts SmolLM2-135M-Instruct's GGUF file (98 MB of Q4_1/Q8_0 blocks, which
# xz shrinks by 7% only: sent as it is) into parts that the device calls
# can carry next to the packs, for bench/gpu/run.sh's generate step:
#
#   bench/gpu/carry/smollm2.gguf.00   fits in the first call beside
#                                     emily-gpu.tar.xz and emily-beam.tar.xz
#   bench/gpu/carry/smollm2.gguf.01.. the rest, one call each
#   bench/gpu/carry/smollm2.sha256    the whole file's checksum
#
# Run after prepare.sh and pack_beam.sh (their sizes decide the first
# part). The file comes from scripts/install_smollm2 (EMILY_SMOLLM2_GGUF
# names another). CALL_MIB (64): one call's carry limit, working tree
# included (less 4 MiB for what the tree may gain before the calls).
#   bench/gpu/pack_smollm2.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
GGUF=${EMILY_SMOLLM2_GGUF:-models/SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf}
CALL_MIB=${CALL_MIB:-64}
CARRY=bench/gpu/carry
die() { echo "pack_smollm2: $*" >&2; exit 1; }
[ -f "$GGUF" ] || die "no model at $GGUF (scripts/install_smollm2)"
for p in emily-gpu.tar.xz emily-beam.tar.xz; do
    [ -f "$CARRY/$p" ] || die "$CARRY/$p missing: run prepare.sh and pack_beam.sh first"
done
tree=$(git ls-files -co --exclude-standard -z | du -cb --files0-from=- 2>/dev/null | tail -n 1 | cut -f1)
budget=$((CALL_MIB * 1048576 - tree - 4 * 1048576))
first=$((budget - $(stat -c %s "$CARRY/emily-gpu.tar.xz") - $(stat -c %s "$CARRY/emily-beam.tar.xz")))
[ "$first" -gt 0 ] || die "the packs leave no room for a part in the first call"
size=$(stat -c %s "$GGUF")
rm -f "$CARRY"/smollm2.gguf.*
offset=0 part=0 take=$first
while [ "$offset" -lt "$size" ]; do
    dd if="$GGUF" of="$CARRY/smollm2.gguf.$(printf %02d $part)" bs=1M iflag=skip_bytes,count_bytes \
        skip="$offset" count="$take" status=none
    offset=$((offset + take)) part=$((part + 1)) take=$budget
done
sha256sum "$GGUF" | cut -d' ' -f1 > "$CARRY/smollm2.sha256"
cat "$CARRY"/smollm2.gguf.* | sha256sum | cut -d' ' -f1 | cmp -s - "$CARRY/smollm2.sha256" ||
    die "the parts do not join to the file"
ls -l "$CARRY"/smollm2.*
echo "pack_smollm2: $part parts: .00 with both packs in the first call, one more part each later call"
