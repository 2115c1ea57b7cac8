/* GPT-2's bytes-to-unicode alphabet: byte-level BPE writes each byte as
 * one printable code point, so that token texts hold no spaces or
 * control characters. The printable bytes ('!'..'~', U+00A1..U+00AC,
 * U+00AE..U+00FF) stand for themselves; the other 68, in byte order,
 * take U+0100.. (so ' ', the 33rd, is U+0120 "Ġ" and '\n' is U+010A
 * "Ċ"). */
#include "bpe_impl.h"

static bool prints_as_itself(unsigned b) {
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

/* How many of the bytes below b do not print as themselves. */
static unsigned shifted_below(unsigned b) {
    unsigned n = b < 0x21 ? b : 0x21;                /* 0x00..0x20 */
    if (b > 0x7F) n += (b < 0xA1 ? b : 0xA1) - 0x7F; /* 0x7F..0xA0 */
    if (b > 0xAD) n += 1;                            /* 0xAD */
    return n;
}

uint32_t bpe_byte_to_cp(uint8_t b) { return prints_as_itself(b) ? b : 0x100 + shifted_below(b); }

int bpe_cp_to_byte(uint32_t cp) {
    if (cp < 0x100) return prints_as_itself(cp) ? (int)cp : -1;
    if (cp >= 0x100 + 68) return -1;
    unsigned k = cp - 0x100; /* the k-th byte that does not print as itself */
    if (k < 0x21) return (int)k;
    if (k < 0x21 + 0x22) return (int)(0x7F + k - 0x21);
    return 0xAD;
}
