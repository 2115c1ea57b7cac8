#!/usr/bin/env python3
"""SmolLM2-135M-Instruct greedy decoding on PyTorch, timed like
build/emily_generate: the peer of bench/models/generate.

The model is the same GGUF file (transformers dequantizes every tensor to
f32 when it loads a GGUF; --dtype bf16 then rounds the weights to bf16,
to nearest even, and the model computes in bf16), on --device cpu or cuda
(the clock is read after torch.cuda.synchronize), the prompt the same
token ids, greedy decoding
with the KV cache, exactly NEW new tokens (no stop at the end token).
Timing: a warm-up, then RUNS runs of generate(max_new_tokens=NEW) and of
generate(max_new_tokens=1) (the prompt's pass and the first token);
per later token = (total - prefill) / (NEW - 1); medians. With --compare,
the ids Emily generated (a comma-separated file) must be the same.

    python generate_torch.py --gguf FILE --prompt-ids 1,2,3 [--new 64] [--runs 5] [--threads 2]
                             [--device cpu|cuda] [--dtype f32|bf16]
"""
import argparse
import statistics
import time
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--prompt-ids", required=True)
    ap.add_argument("--new", type=int, default=64)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--compare")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--dtype", choices=["f32", "bf16"], default="f32")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[a.dtype]
    path = Path(a.gguf)
    model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=dtype)
    model.to(a.device).eval()
    ids = torch.tensor([[int(t) for t in a.prompt_ids.split(",")]], device=a.device)
    mask = torch.ones_like(ids)

    def sync():
        if a.device == "cuda":
            torch.cuda.synchronize()

    def gen(n):
        with torch.inference_mode():
            return model.generate(ids, attention_mask=mask, max_new_tokens=n, min_new_tokens=n,
                                  do_sample=False, pad_token_id=2)

    out = gen(a.new)  # warm-up
    totals, prefills = [], []
    for _ in range(a.runs):
        sync()
        t = time.perf_counter()
        gen(1)
        sync()
        prefills.append((time.perf_counter() - t) * 1e3)
        t = time.perf_counter()
        out = gen(a.new)
        sync()
        totals.append((time.perf_counter() - t) * 1e3)
    pre, tot = statistics.median(prefills), statistics.median(totals)
    per = (tot - pre) / (a.new - 1)
    where = f"{a.threads} threads" if a.device == "cpu" else a.device
    print(f"torch {torch.__version__} ({a.dtype}, {where}): prompt {ids.shape[1]} tokens + first "
          f"{pre:.1f} ms; per later token {per:.2f} ms ({1e3 / per:.1f} tokens/s)")
    new = out[0, ids.shape[1]:].tolist()
    if a.compare:
        emily = [int(t) for t in Path(a.compare).read_text().split(",")]
        same = emily == new
        first = next((i for i, (x, y) in enumerate(zip(emily, new)) if x != y), None)
        print(f"ids: {'identical' if same else 'DIFFERENT'} ({len(new)} tokens"
              + ("" if same else f", first difference at {first}") + ")")
    print(f"RESULT torch dtype={a.dtype} device={a.device} prefill_ms={pre:.2f} per_token_ms={per:.3f}")


if __name__ == "__main__":
    main()
