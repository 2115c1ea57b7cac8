#!/usr/bin/env bash
# On the GPU machine (device tool), from the repository root: replays the
# encoder graphs Emily.Compiler saved (bench/nx/carry/graphs/*.emg, made by
# bench/nx/prepare_device.sh here) with build/emily_run on the CPU (2 cores
# through taskset, as the development machine has) and on the GPU, then
# times the same encoder in PyTorch in the same run.
set -u
W=/tmp/emily-encoder
rm -rf "$W" && mkdir -p "$W" && tar -xJf bench/nx/carry/pack.tar.xz -C "$W" || exit 2
export LD_LIBRARY_PATH="$W/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
lscpu | grep -E "Model name|^CPU\(s\)"
echo "== graph unit tests (CPU) and the CUDA engine's tests"
"$W/bin/test_graph" | tail -1
"$W/bin/test_cuda" 2>&1 | tail -1
echo "== Emily graphs, CPU (taskset -c 0,1)"
for g in f32_8x128 f32_32x128; do
    taskset -c 0,1 env OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=1 "$W/bin/emily_run" --runs 20 "$W/graphs/encoder_$g.emg"
done
echo "== Emily graphs, GPU"
for g in f32_8x128 bf16_8x128 bf16_256x128; do
    "$W/bin/emily_run" --device cuda --runs 20 "$W/graphs/encoder_$g.emg"
done
echo "== PyTorch"
taskset -c 0,1 python3 bench/nx/encoder_torch.py cpu 2
python3 bench/nx/encoder_torch.py cuda
