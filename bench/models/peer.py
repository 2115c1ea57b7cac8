"""What the PyTorch peer lanes (minilm_torch.py, smollm2_torch.py) share:
their common options, the torch setup, and the results file that
bench/models/run reads."""
import json
import os
from pathlib import Path

import torch


def add_common_args(ap):
    """--threads, --out and --data, with the environment's defaults."""
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=os.environ.get("EMILY_MODELS_OUT", "results"))
    ap.add_argument("--data", default=os.environ.get("EMILY_MODELS_DATA", "/work/deps/models_data"))


def setup(args):
    """torch on args.threads threads; the results directory (made if needed)."""
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    return out


def record(out, entry):
    """Appends entry as one JSON line to OUT/results.jsonl and prints it."""
    line = json.dumps(entry, sort_keys=True)
    with open(out / "results.jsonl", "a") as f:
        f.write(line + "\n")
    print("  " + line)
