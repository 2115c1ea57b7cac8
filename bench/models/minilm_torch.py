#!/usr/bin/env python3
"""all-MiniLM-L6-v2 on PyTorch (CPU, or a GPU): the peer lane of minilm.exs.

Same token ids (the same LCG; checked against OUT/minilm_ids_BxS.bin when
minilm.exs wrote it), transformers' AutoModel, mean pooling over the
attention mask and L2 normalization (sentence-transformers' Pooling +
Normalize modules for this model), torch.set_num_threads(2),
torch.inference_mode(). Times a warm-up then RUNS runs (median), and
compares the embeddings with Emily's (OUT/minilm_<lane>_BxS.bin): max abs
difference and the smallest cosine similarity over the batch.

    python minilm_torch.py [--shapes 8x128,32x128] [--runs 10] [--out DIR] [--device cuda]

With --device cuda (bench/gpu/run.sh, after minilm.exs with MINILM_DEVICE=cuda)
the model runs on the GPU in f32 without TF32, timed with
torch.cuda.synchronize. Where sentence-transformers is installed (the GPU
machine has it), its SentenceTransformer (the model folder's modules.json:
Transformer, Pooling, Normalize) embeds the same ids too, and Emily's lanes
and the torch lane are compared with it as well ("agree_with":
"sentence-transformers").

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
    ap.add_argument("--device", default="cpu", help="torch device: cpu, cuda, cuda:N")
    args = ap.parse_args()

    out = setup(args)
    # f32 matmuls in f32 (Emily's :fast f32 is cuBLAS without TF32)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device(args.device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    model_dir = Path(args.data) / "all-MiniLM-L6-v2"
    # MINILM_TYPE=bf16 (as minilm.exs): bf16 weights and computation, shape tags "-bf16"
    mtype = os.environ.get("MINILM_TYPE", "f32")
    tdtype = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[mtype]
    suffix = "" if mtype == "f32" else f"-{mtype}"
    model = AutoModel.from_pretrained(model_dir, dtype=tdtype).eval().to(dev)
    vocab = model.config.vocab_size
    where = torch.cuda.get_device_name(dev) if dev.type == "cuda" else f"{torch.get_num_threads()} threads"
    print(f"MiniLM (torch {torch.__version__}, {where})")
    st = sentence_transformer(model_dir, dev) if mtype == "f32" else None

    def embed(ids, mask):
        h = model(input_ids=ids, attention_mask=mask).last_hidden_state
        m = mask.unsqueeze(-1).to(h.dtype)
        e = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(e, p=2, dim=1)

    for dims in args.shapes.split(","):
        batch, seq = map(int, dims.split("x"))
        shape = dims + suffix
        body = lcg_ids(42 + batch * 1000 + seq, batch * (seq - 2), 1000, vocab)
        rows = [[101] + body[i * (seq - 2):(i + 1) * (seq - 2)] + [102] for i in range(batch)]
        ids_np = np.array(rows, dtype=np.int64)
        ids_file = out / f"minilm_ids_{shape}.bin"
        if ids_file.exists():
            theirs = np.fromfile(ids_file, dtype=np.uint32).reshape(batch, seq)
            assert (theirs == ids_np).all(), f"{ids_file}: token ids differ from this script's"
        ids = torch.from_numpy(ids_np).to(dev)
        mask = torch.ones_like(ids)

        with torch.inference_mode():
            t0 = time.perf_counter()
            emb = embed(ids, mask)
            sync()
            first = (time.perf_counter() - t0) * 1e3
            times = []
            for _ in range(args.runs):
                t0 = time.perf_counter()
                emb = embed(ids, mask)
                sync()
                times.append((time.perf_counter() - t0) * 1e3)
            peers = {"torch": emb.float().cpu().numpy()}
            if st is not None:
                features = {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids)}
                peers["sentence-transformers"] = st(features)["sentence_embedding"].cpu().numpy().astype(np.float32)
        emb = peers["torch"]
        emb.tofile(out / f"minilm_torch_{shape}.bin")
        record(out, {"model": "all-MiniLM-L6-v2", "shape": shape, "lane": "torch", "device": args.device,
                     "median_ms": round(float(np.median(times)), 2), "min_ms": round(min(times), 2),
                     "first_ms": round(first, 1), "runs": args.runs, "how": "torch",
                     "detail": f"torch {torch.__version__}, {where}"})

        for lane in ["compiler", "eager"] + (["torch"] if st is not None else []):
            f = out / f"minilm_{lane}_{shape}.bin"
            if not f.exists():
                continue
            theirs = np.fromfile(f, dtype=np.float32).reshape(emb.shape)
            for peer, ref in peers.items():
                if peer == lane:
                    continue
                cos = (theirs * ref).sum(1) / (np.linalg.norm(theirs, axis=1) * np.linalg.norm(ref, axis=1))
                entry = {"model": "all-MiniLM-L6-v2", "shape": shape, "agree": lane,
                         "max_abs_diff": float(np.abs(theirs - ref).max()), "min_cosine": float(cos.min())}
                if peer != "torch":
                    entry["agree_with"] = peer
                record(out, entry)


def sentence_transformer(model_dir, dev):
    """sentence-transformers' model of the folder, or None where the package is missing."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        print("(sentence-transformers is not installed: compared with transformers' AutoModel only)")
        return None
    st = SentenceTransformer(str(model_dir), device=str(dev))
    print(f"sentence-transformers: {[type(m).__name__ for m in st]}")
    return st.eval()


if __name__ == "__main__":
    main()
