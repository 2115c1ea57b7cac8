#!/usr/bin/env python3
"""all-MiniLM-L6-v2 on PyTorch (CPU): the peer lane of minilm.exs.

Same token ids (the same LCG; checked against OUT/minilm_ids_BxS.bin when
minilm.exs wrote it), transformers' AutoModel, mean pooling over the
attention mask and L2 normalization (sentence-transformers' Pooling +
Normalize modules for this model), torch.set_num_threads(2),
torch.inference_mode(). Times a warm-up then RUNS runs (median), and
compares the embeddings with Emily's (OUT/minilm_<lane>_BxS.bin): max abs
difference and the smallest cosine similarity over the batch.

    python minilm_torch.py [--shapes 8x128,32x128] [--runs 10] [--out DIR]

Appends one JSON line per shape (and per Emily lane compared) to
OUT/results.jsonl.
"""
import argparse
import os
import time
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModel

from peer import add_common_args, record, setup


def lcg_ids(seed, count, lo, hi):
    out, x = [], seed
    for _ in range(count):
        x = (1103515245 * x + 12345) % 2147483648
        out.append(lo + x % (hi - lo))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default=os.environ.get("MINILM_SHAPES", "8x128,32x128"))
    ap.add_argument("--runs", type=int, default=int(os.environ.get("MINILM_RUNS", "10")))
    add_common_args(ap)
    args = ap.parse_args()

    out = setup(args)
    model = AutoModel.from_pretrained(Path(args.data) / "all-MiniLM-L6-v2", dtype=torch.float32).eval()
    vocab = model.config.vocab_size
    print(f"MiniLM (torch {torch.__version__}, {torch.get_num_threads()} threads)")

    def embed(ids, mask):
        h = model(input_ids=ids, attention_mask=mask).last_hidden_state
        m = mask.unsqueeze(-1).to(h.dtype)
        e = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(e, p=2, dim=1)

    for shape in args.shapes.split(","):
        batch, seq = map(int, shape.split("x"))
        body = lcg_ids(42 + batch * 1000 + seq, batch * (seq - 2), 1000, vocab)
        rows = [[101] + body[i * (seq - 2):(i + 1) * (seq - 2)] + [102] for i in range(batch)]
        ids_np = np.array(rows, dtype=np.int64)
        ids_file = out / f"minilm_ids_{shape}.bin"
        if ids_file.exists():
            theirs = np.fromfile(ids_file, dtype=np.uint32).reshape(batch, seq)
            assert (theirs == ids_np).all(), f"{ids_file}: token ids differ from this script's"
        ids = torch.from_numpy(ids_np)
        mask = torch.ones_like(ids)

        with torch.inference_mode():
            t0 = time.perf_counter()
            emb = embed(ids, mask)
            first = (time.perf_counter() - t0) * 1e3
            times = []
            for _ in range(args.runs):
                t0 = time.perf_counter()
                emb = embed(ids, mask)
                times.append((time.perf_counter() - t0) * 1e3)
        emb = emb.numpy().astype(np.float32)
        emb.tofile(out / f"minilm_torch_{shape}.bin")
        record(out, {"model": "all-MiniLM-L6-v2", "shape": shape, "lane": "torch",
                     "median_ms": round(float(np.median(times)), 2), "min_ms": round(min(times), 2),
                     "first_ms": round(first, 1), "runs": args.runs, "how": "torch",
                     "detail": f"torch {torch.__version__}, {torch.get_num_threads()} threads"})

        for lane in ("compiler", "eager"):
            f = out / f"minilm_{lane}_{shape}.bin"
            if not f.exists():
                continue
            theirs = np.fromfile(f, dtype=np.float32).reshape(emb.shape)
            cos = (theirs * emb).sum(1) / (np.linalg.norm(theirs, axis=1) * np.linalg.norm(emb, axis=1))
            record(out, {"model": "all-MiniLM-L6-v2", "shape": shape, "agree": lane,
                         "max_abs_diff": float(np.abs(theirs - emb).max()),
                         "min_cosine": float(cos.min())})


if __name__ == "__main__":
    main()
