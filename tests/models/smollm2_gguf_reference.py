"""Reference values for tests/unit/test_gguf.c's smollm2_file case.

Dequantizes a few rows of two tensors of SmolLM2-135M-Instruct.Q4_1.gguf
with the gguf Python package (gguf.quants.dequantize: ggml's formulas in
numpy, f32) and writes tests/models/smollm2_gguf_reference.json:

  tensors: name -> {shape (Nx order), rows: row -> {sum, values}}
    sum:    the row's f32 values summed in double, in index order (the
            test sums the same way, so the bits must match), as hex
    values: [index, value as hex] for every 37th element of the row
  tokens: a few vocabulary strings by index

Run with /work/deps/models_venv/bin/python (gguf, numpy); the model path
is $EMILY_SMOLLM2_GGUF or the argument.
"""
import json
import os
import sys

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize

ROWS = {"token_embd.weight": [0, 1, 1000, 49151], "blk.0.attn_q.weight": [0, 17, 575]}
TOKENS = [0, 1, 2, 1000, 49151]


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.environ["EMILY_SMOLLM2_GGUF"]
    reader = GGUFReader(path)
    by_name = {t.name: t for t in reader.tensors}
    out = {"source": os.path.basename(path), "tensors": {}, "tokens": {}}
    for name, rows in ROWS.items():
        t = by_name[name]
        w = dequantize(t.data, t.tensor_type).astype(np.float32)
        w = w.reshape(-1, w.shape[-1])
        entry = {"type": t.tensor_type.name, "shape": list(w.shape), "rows": {}}
        for r in rows:
            row = [float(v) for v in w[r]]
            total = 0.0
            for v in row:  # sequential, in index order
                total += v
            entry["rows"][str(r)] = {
                "sum": total.hex(),
                "values": [[i, row[i].hex()] for i in range(0, len(row), 37)],
            }
        out["tensors"][name] = entry
    tokens = reader.fields["tokenizer.ggml.tokens"]
    for i in TOKENS:
        out["tokens"][str(i)] = bytes(tokens.parts[tokens.data[i]]).decode("utf-8")
    with open(os.path.join(os.path.dirname(__file__), "smollm2_gguf_reference.json"), "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
