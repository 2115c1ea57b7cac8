#!/usr/bin/env python3
r"""Writes examples/common/unicode_tables.c from Python's Unicode database and
from Hugging Face's tokenizers library.

The BERT normalizer and pre-tokenizer (bert_text.c) need, per code point:
its class (other: Cc/Cf/Co/Cs, which clean_text drops; punctuation: P*,
which the pre-tokenizer isolates; non-spacing mark: Mn, which accent
stripping drops), its canonical decomposition with the non-spacing marks
left out (NFD, then strip accents), and its lowercase mapping. The tables
are data from the Unicode Character Database, not code; run this again
to move to another Unicode version.

The byte-level BPE pre-tokenizer (examples/generate/bpe_pretokenize.c)
needs the classes that Hugging Face's tokenizers library uses for it,
which are not Python's: its regex engine (Oniguruma, bundled in the Rust
crate) answers \p{L} and \p{N} from its own Unicode version (16.0 in
tokenizers 0.23: 9272 more letters than Python 3.11's 14.0), and its
Digits pre-tokenizer tests Rust's char::is_numeric (17.0: 13 more than
Oniguruma's \p{N}). So those three classes are asked of the library
itself, code point by code point, and this script needs `tokenizers`:

    /work/deps/models_venv/bin/python examples/common/gen_unicode_tables.py \
        > examples/common/unicode_tables.c
"""
import sys
import unicodedata

import tokenizers
from tokenizers import Regex, pre_tokenizers

MAX_CP = 0x110000
HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3  # decomposed by arithmetic (unicode_data.c)
CLASS_OTHER, CLASS_PUNCT, CLASS_MN = 1, 2, 4
CLASS_LETTER, CLASS_NUMBER, CLASS_DIGIT_SPLIT = 8, 16, 32
# Unicode's White_Space, which unicode_data.c's uc_is_whitespace lists by hand.
WHITE_SPACE = {0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000} | \
    set(range(0x09, 0x0E)) | {0x20} | set(range(0x2000, 0x200B))


def bert_class(cp):
    cat = unicodedata.category(chr(cp))
    if cat in ("Cc", "Cf", "Co", "Cs"):
        return CLASS_OTHER
    if cat.startswith("P"):
        return CLASS_PUNCT
    if cat == "Mn":
        return CLASS_MN
    return 0


def tokenizers_classes():
    """The code points that tokenizers' regex matches with \\p{L}, \\p{N} and
    \\s, and those its Digits pre-tokenizer isolates (char::is_numeric)."""
    # Surrogates cannot be in a Python string handed to the library.
    cps = [c for c in range(MAX_CP) if not 0xD800 <= c <= 0xDFFF]
    text = "".join(chr(c) for c in cps)

    def regex_set(pattern):
        # "removed": the pieces left are the runs of code points it does not match
        kept = bytearray(len(cps))
        for _, (a, b) in pre_tokenizers.Split(Regex(pattern), behavior="removed").pre_tokenize_str(text):
            kept[a:b] = b"\x01" * (b - a)
        return {cps[i] for i in range(len(cps)) if not kept[i]}

    # Digits isolates each numeric code point: between two 'a's only those
    # stand alone.
    spaced = "a" + "".join(chr(c) + "a" for c in cps)
    pieces = pre_tokenizers.Digits(individual_digits=True).pre_tokenize_str(spaced)
    digits = {ord(p) for p, _ in pieces if len(p) == 1 and p != "a"}
    letters, numbers, spaces = regex_set(r"\p{L}"), regex_set(r"\p{N}"), regex_set(r"\s")
    if spaces != WHITE_SPACE:
        sys.exit("tokenizers' \\s is not the White_Space list of uc_is_whitespace")
    return letters, numbers, digits


def char_classes():
    """Every code point's class bits: BERT's from Python's database, the
    BPE pre-tokenizer's from tokenizers."""
    letters, numbers, digits = tokenizers_classes()
    classes = [bert_class(cp) for cp in range(MAX_CP)]
    for cp in letters:
        classes[cp] |= CLASS_LETTER
    for cp in numbers:
        classes[cp] |= CLASS_NUMBER
    for cp in digits:
        classes[cp] |= CLASS_DIGIT_SPLIT
    return classes


def main():
    out = sys.stdout
    classes = char_classes()
    # ---- class ranges: maximal runs of one non-zero class
    ranges, start, cls = [], 0, classes[0]
    for cp in range(1, MAX_CP + 1):
        c = classes[cp] if cp < MAX_CP else -1
        if c != cls:
            if cls:
                ranges.append((start, cp - 1, cls))
            start, cls = cp, c
    # ---- decompositions with the marks dropped (only where they change the code point)
    strip, pool = [], []
    for cp in range(MAX_CP):
        if HANGUL_FIRST <= cp <= HANGUL_LAST or bert_class(cp) == CLASS_MN:
            continue
        nfd = unicodedata.normalize("NFD", chr(cp))
        kept = [ord(c) for c in nfd if unicodedata.category(c) != "Mn"]
        if kept != [cp]:
            strip.append((cp, len(pool), len(kept)))
            pool.extend(kept)
    max_strip = max(n for _, _, n in strip)
    # ---- lowercase (full mapping, char by char: no final-sigma context)
    lower = []
    for cp in range(MAX_CP):
        low = [ord(c) for c in chr(cp).lower()]
        if low != [cp]:
            assert len(low) <= 2, hex(cp)
            lower.append((cp, low[0], low[1] if len(low) > 1 else 0))

    w = out.write

    def table(decl, rows, per_line, fmt):
        """decl[len] = {rows, per_line a line}; then its count when asked."""
        w(f"{decl}[{len(rows)}] = {{\n")
        for i in range(0, len(rows), per_line):
            w("    " + " ".join(fmt(r) + "," for r in rows[i:i + per_line]) + "\n")
        w("};\n")

    w("/* Generated by examples/common/gen_unicode_tables.py from Python's Unicode\n")
    w(f" * database (Unicode {unicodedata.unidata_version}) and tokenizers {tokenizers.__version__};\n")
    w(" * do not edit. */\n")
    w('#include "unicode_tables.h"\n\n')
    w("/* clang-format off */\n")
    table("const uc_class_range uc_class_ranges", ranges, 4, lambda r: f"{{0x{r[0]:X}, 0x{r[1]:X}, {r[2]}}}")
    w(f"const int uc_class_range_count = {len(ranges)};\n\n")
    table("const uc_strip_entry uc_strip_entries", strip, 4, lambda r: f"{{0x{r[0]:X}, {r[1]}, {r[2]}}}")
    w(f"const int uc_strip_count = {len(strip)};\n")
    table("const uint32_t uc_strip_pool", pool, 8, lambda c: f"0x{c:X}")
    w("\n")
    table("const uc_lower_entry uc_lower_entries", lower, 4,
          lambda r: f"{{0x{r[0]:X}, 0x{r[1]:X}, 0x{r[2]:X}}}")
    w(f"const int uc_lower_count = {len(lower)};\n")
    print(f"{len(ranges)} class ranges, {len(strip)} decompositions (longest {max_strip}), "
          f"{len(lower)} lowercase mappings", file=sys.stderr)
    if max_strip > 4:
        sys.exit("a decomposition longer than UC_MAX_STRIPPED (unicode_data.h)")


if __name__ == "__main__":
    main()
