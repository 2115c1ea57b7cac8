"""The encoder of bench/nx/encoder.exs (MiniLM-L6's dimensions: hidden 384,
12 heads, intermediate 1536, 6 layers, erf GELU, layer norm eps 1e-12,
mean over the sequence) in PyTorch, timed as the peer of the engine-graph
replays (build/emily_run on the graphs Emily.Compiler saved from the same
defn).

  python3 bench/nx/encoder_torch.py cpu  [threads]   # f32 8x128, 32x128
  python3 bench/nx/encoder_torch.py cuda             # f32 8x128, bf16 8x128, bf16 256x128
Prints one line per case: median ms over 20 runs after warm-up.
"""
import math
import statistics
import sys
import time

import torch

H, HEADS, F, LAYERS = 384, 12, 1536, 6


def make_params(dtype, device):
    g = torch.Generator().manual_seed(42)
    layers = []
    for _ in range(LAYERS):
        p = {n: (torch.randn(s, generator=g) * 0.05).to(dtype=dtype, device=device)
             for n, s in [("wq", (H, H)), ("wk", (H, H)), ("wv", (H, H)), ("wo", (H, H)), ("w1", (H, F)), ("w2", (F, H))]}
        for n, size in [("bq", H), ("bk", H), ("bv", H), ("bo", H), ("c1", F), ("c2", H), ("b1", H), ("b2", H)]:
            p[n] = torch.full((size,), 0.01, dtype=dtype, device=device)
        p["g1"] = torch.ones(H, dtype=dtype, device=device)
        p["g2"] = torch.ones(H, dtype=dtype, device=device)
        layers.append(p)
    return layers


def layer_norm(x, g, b):
    return torch.nn.functional.layer_norm(x, (H,), g, b, eps=1e-12)


def encoder(x, layers):
    b, s, _ = x.shape
    d = H // HEADS
    for p in layers:
        q = (x @ p["wq"] + p["bq"]).view(b, s, HEADS, d).transpose(1, 2)
        k = (x @ p["wk"] + p["bk"]).view(b, s, HEADS, d).transpose(1, 2)
        v = (x @ p["wv"] + p["bv"]).view(b, s, HEADS, d).transpose(1, 2)
        w = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), dim=-1)
        ctx = (w @ v).transpose(1, 2).reshape(b, s, H)
        x = layer_norm(x + ctx @ p["wo"] + p["bo"], p["g1"], p["b1"])
        ff = torch.nn.functional.gelu(x @ p["w1"] + p["c1"]) @ p["w2"] + p["c2"]
        x = layer_norm(x + ff, p["g2"], p["b2"])
    return x.mean(dim=1)


def timed(fn, device, runs=20):
    for _ in range(3):
        fn()
    ts = []
    for _ in range(runs):
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def main():
    device = sys.argv[1] if len(sys.argv) > 1 else "cpu"
    if device == "cpu":
        torch.set_num_threads(int(sys.argv[2]) if len(sys.argv) > 2 else 2)
        cases = [(torch.float32, 8, 128), (torch.float32, 32, 128)]
    else:
        cases = [(torch.float32, 8, 128), (torch.bfloat16, 8, 128), (torch.bfloat16, 256, 128)]
    with torch.inference_mode():
        for dtype, b, s in cases:
            layers = make_params(dtype, device)
            x = torch.randn(b, s, H, generator=torch.Generator().manual_seed(1)).to(dtype=dtype, device=device)
            ms = timed(lambda: encoder(x, layers), device)
            name = {torch.float32: "f32", torch.bfloat16: "bf16"}[dtype]
            print(f"torch {device} encoder {name} {b}x{s}: {ms:.3f} ms ({b / ms * 1e3:.0f} sequences/s)"
                  f" threads={torch.get_num_threads()}")


if __name__ == "__main__":
    main()
