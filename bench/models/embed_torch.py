#!/usr/bin/env python3
"""The PyTorch side of bench/models/embed: all-MiniLM-L6-v2 sentence
embeddings with sentence-transformers (CPU), timed like build/emily_embed
--runs (tokenizing included, a warm-up first, then the median of RUNS).

Without the sentence_transformers package it runs what that package's
modules run for this model (transformers' tokenizer and AutoModel, mean
pooling over the attention mask, L2 normalization) and says so.

    python embed_torch.py --make-sentences FILE        # the benchmark's 32 sentences
    python embed_torch.py --file FILE [--model DIR] [--max-length 128] [--batch-size 32]
                          [--runs 10] [--threads 2] [--compare EMILY.bin]

--compare: Emily's embeddings (emily_embed --out, f32) for the same file;
prints the largest absolute difference and the smallest cosine.
"""
import argparse
import random
import statistics
import time

import numpy as np
import torch

WORDS = ("the a model of sentence embedding runs on every core while tokens pass through six layers "
         "attention heads compute weighted sums over positions and the feed forward block expands each "
         "hidden vector before layer normalization brings it back numbers like 42 and 3.14 appear too").split()


def make_sentences(path, count=32, words=160):
    """count sentences of `words` words: more than 128 tokens each, so a
    max length of 128 makes the batch exactly count x 128."""
    rng = random.Random(7)
    with open(path, "w") as f:
        for _ in range(count):
            f.write(" ".join(rng.choice(WORDS) for _ in range(words)) + ".\n")


def embedder(model_dir, max_length, batch_size):
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        SentenceTransformer = None
    if SentenceTransformer is not None:
        import sentence_transformers
        st = SentenceTransformer(model_dir, device="cpu")
        st.max_seq_length = max_length
        how = f"sentence-transformers {sentence_transformers.__version__}"
        return how, lambda texts: st.encode(texts, batch_size=batch_size, convert_to_numpy=True,
                                            show_progress_bar=False)
    from transformers import AutoModel, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir, dtype=torch.float32).eval()

    def encode(texts):
        out = []
        with torch.inference_mode():
            for i in range(0, len(texts), batch_size):
                b = tok(texts[i:i + batch_size], padding=True, truncation="longest_first",
                        max_length=max_length, return_tensors="pt")
                h = model(**b).last_hidden_state
                m = b["attention_mask"].unsqueeze(-1).to(h.dtype)
                e = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
                out.append(torch.nn.functional.normalize(e, p=2, dim=1))
        return torch.cat(out).numpy()
    return "transformers + torch (sentence-transformers' modules by hand)", encode


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--make-sentences")
    ap.add_argument("--file")
    ap.add_argument("--model", default="models/all-MiniLM-L6-v2")
    ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--compare")
    args = ap.parse_args()
    if args.make_sentences:
        make_sentences(args.make_sentences)
        return
    torch.set_num_threads(args.threads)
    texts = open(args.file).read().splitlines()
    how, encode = embedder(args.model, args.max_length, args.batch_size)
    emb = encode(texts)  # warm-up
    times, cpu = [], []
    for _ in range(args.runs):
        t0, c0 = time.perf_counter(), time.process_time()
        emb = encode(texts)
        times.append((time.perf_counter() - t0) * 1e3)
        cpu.append((time.process_time() - c0) * 1e3)
    print(f"torch: {how}, torch {torch.__version__}, {torch.get_num_threads()} threads: "
          f"{len(texts)} sentences, {args.runs} runs: median {statistics.median(times):.1f} ms, "
          f"best {min(times):.1f} ms, median CPU time {statistics.median(cpu):.1f} ms")
    if args.compare:
        theirs = np.fromfile(args.compare, dtype=np.float32).reshape(emb.shape)
        cos = (theirs * emb).sum(1) / (np.linalg.norm(theirs, axis=1) * np.linalg.norm(emb, axis=1))
        print(f"agreement: Emily vs torch max abs diff {np.abs(theirs - emb).max():.2e}, "
              f"smallest cosine {cos.min():.8f}")


if __name__ == "__main__":
    main()
