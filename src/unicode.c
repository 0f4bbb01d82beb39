// unicode.c — UTF-8 decoding, category lookup over the generated range tables, and the GPT-2
// byte alphabet.
#include "unicode.h"

uint8_t unicode_cpt_value(uint32_t cp) {
    if (cp < unicode_direct_limit) {
        return unicode_direct[cp];
    }
    if (cp > 0x10FFFF) {
        return UNICODE_GC_CN;
    }
    // Last range whose start is <= cp.
    uint32_t lo = 0, hi = unicode_n_ranges;
    while (hi - lo > 1) {
        const uint32_t mid = lo + (hi - lo) / 2;
        if (unicode_range_start[mid] <= cp) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return unicode_range_value[lo];
}

// Class flags of each table value: the general category's class, plus \s for White_Space.
#define L_ UNICODE_FLAG_L
#define N_ UNICODE_FLAG_N
#define P_ UNICODE_FLAG_P
#define M_ UNICODE_FLAG_M
#define GC_FLAGS(ws)                                                                              \
    0 | ws, 0 | ws, 0 | ws, 0 | ws, 0 | ws,            /* Cn Cc Cf Co Cs */                                  \
        L_ | ws, L_ | ws, L_ | ws, L_ | ws, L_ | ws,       /* Lu Ll Lt Lm Lo */                         \
        M_ | ws, M_ | ws, M_ | ws,                         /* Mn Mc Me */                                                 \
        N_ | ws, N_ | ws, N_ | ws,                         /* Nd Nl No */                                                 \
        P_ | ws, P_ | ws, P_ | ws, P_ | ws, P_ | ws, P_ | ws, P_ | ws, /* Pc Pd Ps Pe Pi Pf Po */ \
        0 | ws, 0 | ws, 0 | ws, 0 | ws,                    /* Sm Sc Sk So */                                         \
        0 | ws, 0 | ws, 0 | ws,                            /* Zs Zl Zp */                                                    \
        0 | ws, 0 | ws                                     /* unused: 30, 31 */

const uint8_t unicode_value_flags[64] = { GC_FLAGS(0), GC_FLAGS(UNICODE_FLAG_WS) };

uint32_t unicode_cpt_flags(uint32_t cp) {
    if (cp == UNICODE_INVALID) {
        return 0;
    }
    return unicode_value_flags[unicode_cpt_value(cp) & 63];
}

uint32_t unicode_utf8_decode(const uint8_t * s, size_t n, size_t * len) {
    const uint8_t b0 = s[0];
    *len = 1;
    if (b0 < 0x80) {
        return b0;
    }
    size_t need;
    uint32_t cp, min;
    if ((b0 & 0xE0) == 0xC0) {
        need = 2;
        cp = b0 & 0x1F;
        min = 0x80;
    } else if ((b0 & 0xF0) == 0xE0) {
        need = 3;
        cp = b0 & 0x0F;
        min = 0x800;
    } else if ((b0 & 0xF8) == 0xF0) {
        need = 4;
        cp = b0 & 0x07;
        min = 0x10000;
    } else {
        return UNICODE_INVALID;  // continuation byte or 0xF8..0xFF
    }
    if (n < need) {
        return UNICODE_INVALID;
    }
    for (size_t i = 1; i < need; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            return UNICODE_INVALID;
        }
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        return UNICODE_INVALID;
    }
    *len = need;
    return cp;
}

size_t unicode_utf8_encode(uint32_t cp, char out[4]) {
    if (cp < 0x80) {
        out[0] = (char) cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char) (0xC0 | (cp >> 6));
        out[1] = (char) (0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char) (0xE0 | (cp >> 12));
        out[1] = (char) (0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char) (0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char) (0xF0 | (cp >> 18));
    out[1] = (char) (0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char) (0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char) (0x80 | (cp & 0x3F));
    return 4;
}

// GPT-2's alphabet keeps the printable Latin-1 bytes ('!'..'~', 0xA1..0xAC, 0xAE..0xFF) as
// themselves and numbers the other 68 bytes from U+0100 up, in byte order.
static bool unicode_byte_is_printable(uint32_t b) {
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

uint32_t unicode_byte_to_cpt(uint8_t b) {
    if (unicode_byte_is_printable(b)) {
        return b;
    }
    // Rank of b among the non-printable bytes: 0x00..0x20 (33), 0x7F..0xA0 (34), 0xAD (1).
    uint32_t rank;
    if (b <= 0x20) {
        rank = b;
    } else if (b <= 0xA0) {
        rank = 33 + (b - 0x7F);
    } else {
        rank = 67;  // 0xAD
    }
    return 0x100 + rank;
}

int unicode_cpt_to_byte(uint32_t cp) {
    if (cp <= 0xFF) {
        return unicode_byte_is_printable(cp) ? (int) cp : -1;
    }
    if (cp < 0x100 || cp >= 0x100 + 68) {
        return -1;
    }
    const uint32_t rank = cp - 0x100;
    if (rank < 33) {
        return (int) rank;
    }
    if (rank < 67) {
        return (int) (0x7F + rank - 33);
    }
    return 0xAD;
}

// Index of cp in the ascending table from[n], or -1.
static int64_t unicode_find_sorted(const uint32_t * from, uint32_t n, uint32_t cp) {
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        const uint32_t mid = lo + (hi - lo) / 2;
        if (from[mid] < cp) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo < n && from[lo] == cp ? (int64_t) lo : -1;
}

uint32_t unicode_tolower(uint32_t cp) {
    if (cp < 0x80) {
        return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
    }
    const int64_t i = unicode_find_sorted(unicode_lower_from, unicode_n_lower, cp);
    return i < 0 ? cp : unicode_lower_to[i];
}

size_t unicode_nfd(uint32_t cp, uint32_t out[UNICODE_NFD_MAX]) {
    // Hangul syllables: L V (T), by the arithmetic of Unicode's chapter 3.12.
    if (cp >= 0xAC00 && cp <= 0xD7A3) {
        const uint32_t s = cp - 0xAC00, t = s % 28;
        out[0] = 0x1100 + s / (21 * 28);
        out[1] = 0x1161 + (s % (21 * 28)) / 28;
        if (t == 0) {
            return 2;
        }
        out[2] = 0x11A7 + t;
        return 3;
    }
    const int64_t i = cp < 0xC0 ? -1 : unicode_find_sorted(unicode_nfd_from, unicode_n_nfd, cp);
    if (i < 0) {
        out[0] = cp;
        return 1;
    }
    const uint32_t at = unicode_nfd_at[i], n = at & 0xFF;
    for (uint32_t k = 0; k < n && k < UNICODE_NFD_MAX; k++) {
        out[k] = unicode_nfd_seq[(at >> 8) + k];
    }
    return n < UNICODE_NFD_MAX ? n : UNICODE_NFD_MAX;
}
