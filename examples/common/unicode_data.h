/* What the BERT normalizer and pre-tokenizer and the byte-level BPE
 * pre-tokenizer ask of Unicode: classes of code points, accent stripping,
 * lowercase, and UTF-8 both ways. */
#ifndef EMBED_UNICODE_DATA_H
#define EMBED_UNICODE_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "unicode_tables.h"

/* Most code points uc_strip_accents gives for one (a Hangul syllable: 3). */
#define UC_MAX_STRIPPED 4

/* The UC_* class bits of cp (unicode_tables.h; 0 for the rest). */
unsigned uc_class(uint32_t cp);

/* Unicode's White_Space property (what Rust's char::is_whitespace, used
 * by Hugging Face's BERT normalizer and pre-tokenizer, tests, and what
 * its regexes match with \s: gen_unicode_tables.py checks). */
bool uc_is_whitespace(uint32_t cp);

/* What Hugging Face's tokenizers matches with \p{L} and \p{N} in its
 * regexes, and what its Digits pre-tokenizer splits off one by one
 * (unicode_tables.h says why these are not Python's categories). */
bool uc_is_letter(uint32_t cp);
bool uc_is_number(uint32_t cp);
bool uc_is_split_digit(uint32_t cp);

/* The CJK ideograph blocks that BERT surrounds with spaces. */
bool uc_is_cjk(uint32_t cp);

/* Punctuation for the pre-tokenizer: ASCII punctuation (which includes
 * symbols like $ + < = > ^ ` | ~) or a P* general category. */
bool uc_is_punctuation(uint32_t cp);

/* cp's canonical decomposition (NFD) without its non-spacing marks, into
 * out; returns how many code points (0 for a mark itself). */
int uc_strip_accents(uint32_t cp, uint32_t out[UC_MAX_STRIPPED]);

/* cp's full lowercase mapping into out; returns 1 or 2. */
int uc_lowercase(uint32_t cp, uint32_t out[2]);

/* Decodes the code point at text[*pos] (n bytes in all) and advances *pos.
 * A byte that does not start a well-formed sequence (stray continuation,
 * overlong form, surrogate, beyond U+10FFFF, truncated) gives U+FFFD and
 * advances by one. */
uint32_t uc_utf8_next(const char *text, size_t n, size_t *pos);

/* Like uc_utf8_next, but an ill-formed sequence gives one U+FFFD for its
 * maximal subpart (Unicode's recommended practice, what Rust's
 * String::from_utf8_lossy and Python's decode(errors="replace") do):
 * "\xE2\x82" then "z" gives U+FFFD once, then 'z'. */
uint32_t uc_utf8_next_lossy(const char *text, size_t n, size_t *pos);

/* How many bytes at the end of text[0, n) start a well-formed UTF-8
 * sequence that is not complete yet (0 to 3): what a stream must hold
 * back until more bytes come. */
size_t uc_utf8_incomplete_tail(const char *text, size_t n);

/* Writes cp as UTF-8 into out; returns its length (1 to 4). */
int uc_utf8_put(uint32_t cp, char out[4]);

#endif
