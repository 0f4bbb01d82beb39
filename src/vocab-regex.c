// vocab-regex.c — compiler and backtracking matcher of the pre-tokenizer regexes (syntax in
// vocab-regex.h). A pattern is parsed into a tree, then compiled into a small program:
// CLASS (one code point of a class), RUN (a greedy run of one class, backtracked one code point
// at a time without a stack entry per code point, so a run of a million spaces costs one
// entry), SPLIT / JMP (alternation and loops, the first branch preferred: leftmost-first),
// LOOK (a look-ahead's sub-program), anchors and MATCH.
#include "vocab-regex.h"
#include "unicode.h"
#include "llama-impl.h"

#include <stdlib.h>
#include <string.h>

#define RX_INF UINT32_MAX

// A set of code points: categories (a bit per table value), ranges, an intersection with
// another class (&&), negation; ascii[] caches the answer for code points below 128.
struct rx_class {
    uint64_t ascii[2];
    uint64_t val_mask;
    uint32_t range_off, n_ranges;
    int32_t and_cls;  // -1: none
    bool neg;
};

enum {
    N_CLASS,
    N_CAT,
    N_ALT,
    N_REP,
    N_LOOK,
    N_BOL,
    N_EOL,
    N_WORDB,
    N_EMPTY
};

struct rx_node {
    int type;
    int32_t a;          // CLASS: class; LOOK / WORDB: negated
    uint32_t min, max;  // REP
    int32_t kid;        // first child (CAT, ALT, REP, LOOK)
    int32_t next;       // next sibling
};

enum {
    I_CLASS,
    I_RUN,
    I_SPLIT,
    I_JMP,
    I_LOOK,
    I_BOL,
    I_EOL,
    I_WORDB,
    I_MATCH
};

struct rx_inst {
    uint8_t op;
    uint8_t neg;        // LOOK, WORDB
    int32_t x, y;       // CLASS / RUN: class; SPLIT: preferred, other; JMP: target; LOOK: continuation (y)
    uint32_t min, max;  // RUN
};

struct vocab_regex {
    struct rx_class * cls;
    uint32_t n_cls;
    uint32_t * ranges;  // pairs lo, hi
    uint32_t n_ranges;
    struct rx_inst * prog;
    uint32_t n_prog;
};

// ---- building ----

struct rx_parser {
    const char * pat;
    size_t pos, len;
    bool err;
    struct vocab_regex * re;
    struct rx_node * nodes;
    uint32_t n_nodes, cap_nodes;
    uint32_t cap_cls, cap_ranges, cap_prog;
};

static bool rx_grow(void ** p, uint32_t * cap, uint32_t need, size_t elem) {
    if (need <= *cap) {
        return true;
    }
    uint32_t c = *cap ? *cap : 16;
    while (c < need) {
        c *= 2;
    }
    void * q = realloc(*p, (size_t) c * elem);
    if (!q) {
        return false;
    }
    *p = q;
    *cap = c;
    return true;
}

static void rx_fail(struct rx_parser * p, const char * what) {
    if (!p->err) {
        LLAMA_LOG_ERROR("vocab_regex_compile: %s at offset %zu of '%s'\n", what, p->pos, p->pat);
    }
    p->err = true;
}

static int32_t rx_node_new(struct rx_parser * p, int type) {
    if (!rx_grow((void **) &p->nodes, &p->cap_nodes, p->n_nodes + 1, sizeof(struct rx_node))) {
        rx_fail(p, "out of memory");
        return -1;
    }
    p->nodes[p->n_nodes] = (struct rx_node) { type, 0, 0, 0, -1, -1 };
    return (int32_t) p->n_nodes++;
}

static int32_t rx_class_new(struct rx_parser * p) {
    struct vocab_regex * re = p->re;
    if (!rx_grow((void **) &re->cls, &p->cap_cls, re->n_cls + 1, sizeof(struct rx_class))) {
        rx_fail(p, "out of memory");
        return -1;
    }
    memset(&re->cls[re->n_cls], 0, sizeof(struct rx_class));
    re->cls[re->n_cls].range_off = re->n_ranges;
    re->cls[re->n_cls].and_cls = -1;
    return (int32_t) re->n_cls++;
}

// Ranges of a class are contiguous: only the class being parsed (the last one) may add some.
static void rx_class_add_range(struct rx_parser * p, int32_t c, uint32_t lo, uint32_t hi) {
    struct vocab_regex * re = p->re;
    if (re->cls[c].range_off + re->cls[c].n_ranges != re->n_ranges) {
        rx_fail(p, "internal: ranges of an earlier class");
        return;
    }
    if (!rx_grow((void **) &re->ranges, &p->cap_ranges, 2 * (re->n_ranges + 1), sizeof(uint32_t))) {
        rx_fail(p, "out of memory");
        return;
    }
    re->ranges[2 * re->n_ranges] = lo;
    re->ranges[2 * re->n_ranges + 1] = hi;
    re->n_ranges++;
    re->cls[c].n_ranges++;
}

// Bits of val_mask for the table values whose general category is in gcs (a bit per enum
// unicode_gc): a value is the category, plus 32 with the White_Space bit.
#define RX_GC_MASK(gcs) ((uint64_t) (gcs) | (uint64_t) (gcs) << 32)

static uint64_t rx_gc_mask(uint32_t gcs) { return RX_GC_MASK(gcs); }

#define GC(x) (1u << UNICODE_GC_##x)
#define GCS_L (GC(LU) | GC(LL) | GC(LT) | GC(LM) | GC(LO))
#define GCS_M (GC(MN) | GC(MC) | GC(ME))
#define GCS_N (GC(ND) | GC(NL) | GC(NO))
#define GCS_P (GC(PC) | GC(PD) | GC(PS) | GC(PE) | GC(PI) | GC(PF) | GC(PO))
#define GCS_S (GC(SM) | GC(SC) | GC(SK) | GC(SO))
#define GCS_Z (GC(ZS) | GC(ZL) | GC(ZP))
#define GCS_C (GC(CN) | GC(CC) | GC(CF) | GC(CO) | GC(CS))

static const uint64_t RX_WS_MASK = 0xFFFFFFFF00000000ull;  // every value with the White_Space bit

// Han script (Unicode 16.0 Scripts.txt).
static const uint32_t RX_HAN[][2] = {
    { 0x2E80, 0x2E99 },   { 0x2E9B, 0x2EF3 },   { 0x2F00, 0x2FD5 },   { 0x3005, 0x3005 },   { 0x3007, 0x3007 },
    { 0x3021, 0x3029 },   { 0x3038, 0x303B },   { 0x3400, 0x4DBF },   { 0x4E00, 0x9FFF },   { 0xF900, 0xFA6D },
    { 0xFA70, 0xFAD9 },   { 0x16FE2, 0x16FE3 }, { 0x16FF0, 0x16FF1 }, { 0x20000, 0x2A6DF }, { 0x2A700, 0x2B739 },
    { 0x2B740, 0x2B81D }, { 0x2B820, 0x2CEA1 }, { 0x2CEB0, 0x2EBE0 }, { 0x2EBF0, 0x2EE5D }, { 0x2F800, 0x2FA1D },
    { 0x30000, 0x3134A }, { 0x31350, 0x323AF },
};

// Adds \p{name} (or, negated, \P{name}) to class c; false if the name is unknown.
static bool rx_class_add_property(struct rx_parser * p, int32_t c, const char * name, size_t n, bool negated) {
    static const struct {
        const char * name;
        uint32_t gcs;
    } props[] = {
        { "L", GCS_L },   { "Lu", GC(LU) }, { "Ll", GC(LL) }, { "Lt", GC(LT) }, { "Lm", GC(LM) }, { "Lo", GC(LO) },
        { "M", GCS_M },   { "Mn", GC(MN) }, { "Mc", GC(MC) }, { "Me", GC(ME) }, { "N", GCS_N },   { "Nd", GC(ND) },
        { "Nl", GC(NL) }, { "No", GC(NO) }, { "P", GCS_P },   { "Pc", GC(PC) }, { "Pd", GC(PD) }, { "Ps", GC(PS) },
        { "Pe", GC(PE) }, { "Pi", GC(PI) }, { "Pf", GC(PF) }, { "Po", GC(PO) }, { "S", GCS_S },   { "Sm", GC(SM) },
        { "Sc", GC(SC) }, { "Sk", GC(SK) }, { "So", GC(SO) }, { "Z", GCS_Z },   { "Zs", GC(ZS) }, { "Zl", GC(ZL) },
        { "Zp", GC(ZP) }, { "C", GCS_C },
    };
    for (size_t i = 0; i < sizeof(props) / sizeof(props[0]); i++) {
        if (strlen(props[i].name) == n && memcmp(props[i].name, name, n) == 0) {
            const uint64_t m = rx_gc_mask(props[i].gcs);
            p->re->cls[c].val_mask |=
                negated ? ~m & ~(1ull << VOCAB_REGEX_VAL_INVALID) & ~(1ull << (VOCAB_REGEX_VAL_INVALID + 32)) : m;
            return true;
        }
    }
    if (n == 3 && memcmp(name, "Han", 3) == 0 && !negated) {
        for (size_t i = 0; i < sizeof(RX_HAN) / sizeof(RX_HAN[0]); i++) {
            rx_class_add_range(p, c, RX_HAN[i][0], RX_HAN[i][1]);
        }
        return true;
    }
    return false;
}

static bool rx_class_match(const struct vocab_regex * re, const struct rx_class * c, uint32_t cp, uint8_t val);

// Fills the ASCII cache of class c (its ranges and intersection are final).
static void rx_class_finish(struct vocab_regex * re, int32_t c) {
    struct rx_class * k = &re->cls[c];
    k->ascii[0] = k->ascii[1] = 0;
    for (uint32_t cp = 0; cp < 128; cp++) {
        // the full test: the cache is not filled yet, so bypass it with a copy
        struct rx_class tmp = *k;
        tmp.ascii[0] = tmp.ascii[1] = 0;
        if (rx_class_match(re, &tmp, cp + 0x80000000u, unicode_cpt_value(cp))) {
            k->ascii[cp >> 6] |= 1ull << (cp & 63);
        }
    }
}

// Reads one code point of the pattern (UTF-8).
static uint32_t rx_next_cp(struct rx_parser * p) {
    size_t n;
    const uint32_t cp = unicode_utf8_decode((const uint8_t *) p->pat + p->pos, p->len - p->pos, &n);
    if (cp == UNICODE_INVALID) {
        rx_fail(p, "invalid UTF-8");
    }
    p->pos += n;
    return cp;
}

// After a backslash: a single-code-point escape, or -1 for a class escape (handled by the caller).
static int64_t rx_escape_cp(struct rx_parser * p, uint32_t c) {
    switch (c) {
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case 'f': return '\f';
        case 'v': return '\v';
        case '0': return 0;
        default: break;
    }
    if (c < 128 && !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) {
        return c;  // escaped punctuation
    }
    return -1;
}

// Adds the class escape \c (s S d D w W p P) to class k; false if c is not one.
static bool rx_class_escape(struct rx_parser * p, int32_t k, uint32_t c) {
    struct rx_class * cl = &p->re->cls[k];
    switch (c) {
        case 's': cl->val_mask |= RX_WS_MASK; return true;
        case 'S': cl->val_mask |= ~RX_WS_MASK; return true;
        case 'd': cl->val_mask |= rx_gc_mask(GC(ND)); return true;
        case 'D': cl->val_mask |= ~rx_gc_mask(GC(ND)); return true;
        case 'w': cl->val_mask |= rx_gc_mask(GCS_L | GCS_M | GC(ND) | GC(PC)); return true;
        case 'W': cl->val_mask |= ~rx_gc_mask(GCS_L | GCS_M | GC(ND) | GC(PC)); return true;
        case 'p':
        case 'P': {
            if (p->pos >= p->len || p->pat[p->pos] != '{') {
                rx_fail(p, "expected { after \\p");
                return true;
            }
            const char * name = p->pat + p->pos + 1;
            const char * close = memchr(name, '}', p->len - p->pos - 1);
            if (!close) {
                rx_fail(p, "unterminated \\p{");
                return true;
            }
            if (!rx_class_add_property(p, k, name, (size_t) (close - name), c == 'P')) {
                rx_fail(p, "unknown property");
            }
            p->pos = (size_t) (close - p->pat) + 1;
            return true;
        }
        default: return false;
    }
}

static int32_t rx_parse_class(struct rx_parser * p);

// Items of a class up to its closing ] (not consumed) or a && (not consumed), into class k.
static void rx_parse_class_items(struct rx_parser * p, int32_t k) {
    while (!p->err && p->pos < p->len && p->pat[p->pos] != ']') {
        if (p->pat[p->pos] == '&' && p->pos + 1 < p->len && p->pat[p->pos + 1] == '&') {
            return;
        }
        if (p->pat[p->pos] == '[') {
            const int32_t sub = rx_parse_class(p);
            if (sub < 0) {
                return;
            }
            const struct rx_class * s = &p->re->cls[sub];
            if (s->neg || s->and_cls >= 0 || s->n_ranges) {
                rx_fail(p, "only a plain category class can be nested in a union");
                return;
            }
            p->re->cls[k].val_mask |= s->val_mask;
            continue;
        }
        uint32_t lo = rx_next_cp(p);
        if (lo == '\\') {
            if (p->pos >= p->len) {
                rx_fail(p, "trailing backslash");
                return;
            }
            const uint32_t c = rx_next_cp(p);
            const int64_t e = rx_escape_cp(p, c);
            if (e < 0) {
                if (!rx_class_escape(p, k, c)) {
                    rx_fail(p, "unsupported escape in a class");
                }
                continue;
            }
            lo = (uint32_t) e;
        }
        uint32_t hi = lo;
        if (p->pos + 1 < p->len && p->pat[p->pos] == '-' && p->pat[p->pos + 1] != ']') {
            p->pos++;
            hi = rx_next_cp(p);
            if (hi == '\\') {
                const int64_t e = p->pos < p->len ? rx_escape_cp(p, rx_next_cp(p)) : -1;
                if (e < 0) {
                    rx_fail(p, "bad range end");
                    return;
                }
                hi = (uint32_t) e;
            }
            if (hi < lo) {
                rx_fail(p, "range out of order");
                return;
            }
        }
        rx_class_add_range(p, k, lo, hi);
    }
}

// [ ... ] at p->pos: returns the class index.
static int32_t rx_parse_class(struct rx_parser * p) {
    p->pos++;  // [
    const int32_t k = rx_class_new(p);
    if (k < 0) {
        return -1;
    }
    if (p->pos < p->len && p->pat[p->pos] == '^') {
        p->re->cls[k].neg = true;
        p->pos++;
    }
    rx_parse_class_items(p, k);
    if (!p->err && p->pos + 1 < p->len && p->pat[p->pos] == '&' && p->pat[p->pos + 1] == '&') {
        p->pos += 2;
        int32_t rhs;
        if (p->pos < p->len && p->pat[p->pos] == '[') {
            rhs = rx_parse_class(p);
        } else {
            rhs = rx_class_new(p);
            if (rhs >= 0) {
                rx_parse_class_items(p, rhs);
                rx_class_finish(p->re, rhs);
            }
        }
        p->re->cls[k].and_cls = rhs;
    }
    if (p->err || p->pos >= p->len || p->pat[p->pos] != ']') {
        rx_fail(p, "unterminated class");
        return -1;
    }
    p->pos++;
    rx_class_finish(p->re, k);
    return k;
}

static int32_t rx_parse_alt(struct rx_parser * p);

// A class node holding exactly one code point.
static int32_t rx_literal(struct rx_parser * p, uint32_t cp) {
    const int32_t k = rx_class_new(p);
    if (k < 0) {
        return -1;
    }
    rx_class_add_range(p, k, cp, cp);
    rx_class_finish(p->re, k);
    const int32_t n = rx_node_new(p, N_CLASS);
    if (n >= 0) {
        p->nodes[n].a = k;
    }
    return n;
}

static int32_t rx_parse_atom(struct rx_parser * p) {
    const char c = p->pat[p->pos];
    if (c == '(') {
        p->pos++;
        int type = -1, neg = 0;
        if (p->pos + 1 < p->len && p->pat[p->pos] == '?') {
            const char k = p->pat[p->pos + 1];
            if (k == ':') {
                type = N_CAT;
            } else if (k == '=' || k == '!') {
                type = N_LOOK;
                neg = k == '!';
            } else {
                rx_fail(p, "unsupported group");
                return -1;
            }
            p->pos += 2;
        }
        const int32_t inner = rx_parse_alt(p);
        if (p->err || p->pos >= p->len || p->pat[p->pos] != ')') {
            rx_fail(p, "unbalanced (");
            return -1;
        }
        p->pos++;
        if (type != N_LOOK) {
            return inner;
        }
        const int32_t n = rx_node_new(p, N_LOOK);
        if (n >= 0) {
            p->nodes[n].kid = inner;
            p->nodes[n].a = neg;
        }
        return n;
    }
    if (c == '[') {
        const int32_t k = rx_parse_class(p);
        const int32_t n = k >= 0 ? rx_node_new(p, N_CLASS) : -1;
        if (n >= 0) {
            p->nodes[n].a = k;
        }
        return n;
    }
    if (c == '^' || c == '$') {
        p->pos++;
        return rx_node_new(p, c == '^' ? N_BOL : N_EOL);
    }
    if (c == '.') {
        p->pos++;
        const int32_t k = rx_class_new(p);  // any code point but \n
        if (k < 0) {
            return -1;
        }
        rx_class_add_range(p, k, '\n', '\n');
        p->re->cls[k].neg = true;
        rx_class_finish(p->re, k);
        const int32_t n = rx_node_new(p, N_CLASS);
        if (n >= 0) {
            p->nodes[n].a = k;
        }
        return n;
    }
    const uint32_t cp = rx_next_cp(p);
    if (cp != '\\') {
        if (cp == '*' || cp == '+' || cp == '?' || cp == '{' || cp == ')') {
            rx_fail(p, "misplaced operator");
            return -1;
        }
        return rx_literal(p, cp);
    }
    if (p->pos >= p->len) {
        rx_fail(p, "trailing backslash");
        return -1;
    }
    const uint32_t e = rx_next_cp(p);
    if (e == 'b' || e == 'B') {
        const int32_t n = rx_node_new(p, N_WORDB);
        if (n >= 0) {
            p->nodes[n].a = e == 'B';
        }
        return n;
    }
    const int64_t lit = rx_escape_cp(p, e);
    if (lit >= 0) {
        return rx_literal(p, (uint32_t) lit);
    }
    const int32_t k = rx_class_new(p);
    if (k < 0) {
        return -1;
    }
    if (!rx_class_escape(p, k, e)) {
        rx_fail(p, "unsupported escape");
        return -1;
    }
    rx_class_finish(p->re, k);
    const int32_t n = rx_node_new(p, N_CLASS);
    if (n >= 0) {
        p->nodes[n].a = k;
    }
    return n;
}

// Reads a decimal number; false if none.
static bool rx_number(struct rx_parser * p, uint32_t * out) {
    size_t s = p->pos;
    uint32_t v = 0;
    while (p->pos < p->len && p->pat[p->pos] >= '0' && p->pat[p->pos] <= '9' && v < 100000) {
        v = v * 10 + (uint32_t) (p->pat[p->pos++] - '0');
    }
    *out = v;
    return p->pos > s;
}

static int32_t rx_parse_repeat(struct rx_parser * p) {
    int32_t atom = rx_parse_atom(p);
    while (!p->err && atom >= 0 && p->pos < p->len) {
        const char c = p->pat[p->pos];
        uint32_t min, max;
        if (c == '*') {
            min = 0;
            max = RX_INF;
            p->pos++;
        } else if (c == '+') {
            min = 1;
            max = RX_INF;
            p->pos++;
        } else if (c == '?') {
            min = 0;
            max = 1;
            p->pos++;
        } else if (c == '{') {
            p->pos++;
            if (!rx_number(p, &min)) {
                rx_fail(p, "bad {n,m}");
                return -1;
            }
            max = min;
            if (p->pos < p->len && p->pat[p->pos] == ',') {
                p->pos++;
                if (!rx_number(p, &max)) {
                    max = RX_INF;
                }
            }
            if (p->pos >= p->len || p->pat[p->pos] != '}' || max < min || min > 4096 || (max != RX_INF && max > 4096)) {
                rx_fail(p, "bad {n,m}");
                return -1;
            }
            p->pos++;
        } else {
            break;
        }
        if (p->pos < p->len && (p->pat[p->pos] == '?' || p->pat[p->pos] == '+')) {
            rx_fail(p, "lazy and possessive quantifiers are not supported");
            return -1;
        }
        const int32_t n = rx_node_new(p, N_REP);
        if (n < 0) {
            return -1;
        }
        p->nodes[n].kid = atom;
        p->nodes[n].min = min;
        p->nodes[n].max = max;
        atom = n;
    }
    return atom;
}

static int32_t rx_parse_cat(struct rx_parser * p) {
    const int32_t cat = rx_node_new(p, N_CAT);
    int32_t last = -1;
    while (!p->err && cat >= 0 && p->pos < p->len && p->pat[p->pos] != '|' && p->pat[p->pos] != ')') {
        const int32_t a = rx_parse_repeat(p);
        if (a < 0) {
            return -1;
        }
        if (last < 0) {
            p->nodes[cat].kid = a;
        } else {
            p->nodes[last].next = a;
        }
        last = a;
    }
    return cat;
}

static int32_t rx_parse_alt(struct rx_parser * p) {
    const int32_t alt = rx_node_new(p, N_ALT);
    int32_t last = -1;
    for (;;) {
        const int32_t c = rx_parse_cat(p);
        if (c < 0 || alt < 0) {
            return -1;
        }
        if (last < 0) {
            p->nodes[alt].kid = c;
        } else {
            p->nodes[last].next = c;
        }
        last = c;
        if (p->pos < p->len && p->pat[p->pos] == '|') {
            p->pos++;
            continue;
        }
        return alt;
    }
}

// ---- compiling ----

static int32_t rx_emit(struct rx_parser * p, uint8_t op, int32_t x, int32_t y) {
    struct vocab_regex * re = p->re;
    if (!rx_grow((void **) &re->prog, &p->cap_prog, re->n_prog + 1, sizeof(struct rx_inst))) {
        rx_fail(p, "out of memory");
        return 0;
    }
    re->prog[re->n_prog] = (struct rx_inst) { op, 0, x, y, 0, 0 };
    return (int32_t) re->n_prog++;
}

// True if node n can match the empty string.
static bool rx_nullable(const struct rx_parser * p, int32_t n) {
    const struct rx_node * d = &p->nodes[n];
    switch (d->type) {
        case N_CLASS: return false;
        case N_CAT:
            for (int32_t k = d->kid; k >= 0; k = p->nodes[k].next) {
                if (!rx_nullable(p, k)) {
                    return false;
                }
            }
            return true;
        case N_ALT:
            for (int32_t k = d->kid; k >= 0; k = p->nodes[k].next) {
                if (rx_nullable(p, k)) {
                    return true;
                }
            }
            return false;
        case N_REP: return d->min == 0 || rx_nullable(p, d->kid);
        default: return true;
    }
}

static void rx_compile(struct rx_parser * p, int32_t n) {
    if (p->err) {
        return;
    }
    const struct rx_node d = p->nodes[n];
    switch (d.type) {
        case N_CLASS: rx_emit(p, I_CLASS, d.a, 0); break;
        case N_BOL: rx_emit(p, I_BOL, 0, 0); break;
        case N_EOL: rx_emit(p, I_EOL, 0, 0); break;
        case N_EMPTY: break;
        case N_WORDB: p->re->prog[rx_emit(p, I_WORDB, 0, 0)].neg = (uint8_t) d.a; break;
        case N_CAT:
            for (int32_t k = d.kid; k >= 0; k = p->nodes[k].next) {
                rx_compile(p, k);
            }
            break;
        case N_ALT: {
            if (d.kid >= 0 && p->nodes[d.kid].next < 0) {
                rx_compile(p, d.kid);
                break;
            }
            // SPLIT L1, next; L1: alt1; JMP end; next: SPLIT L2, next2 ... ; last alternative plain
            int32_t jumps[512];
            int n_jumps = 0;
            for (int32_t k = d.kid; k >= 0 && !p->err; k = p->nodes[k].next) {
                if (p->nodes[k].next < 0) {
                    rx_compile(p, k);
                    break;
                }
                const int32_t s = rx_emit(p, I_SPLIT, 0, 0);
                p->re->prog[s].x = s + 1;
                rx_compile(p, k);
                if (n_jumps == 512) {
                    rx_fail(p, "too many alternatives");
                    return;
                }
                jumps[n_jumps++] = rx_emit(p, I_JMP, 0, 0);
                p->re->prog[s].y = (int32_t) p->re->n_prog;
            }
            for (int i = 0; i < n_jumps && !p->err; i++) {
                p->re->prog[jumps[i]].x = (int32_t) p->re->n_prog;
            }
            break;
        }
        case N_LOOK: {
            const int32_t l = rx_emit(p, I_LOOK, 0, 0);
            p->re->prog[l].neg = (uint8_t) d.a;
            rx_compile(p, d.kid);
            rx_emit(p, I_MATCH, 0, 0);
            p->re->prog[l].y = (int32_t) p->re->n_prog;
            break;
        }
        case N_REP: {
            if (p->nodes[d.kid].type == N_CLASS) {
                const int32_t r = rx_emit(p, I_RUN, p->nodes[d.kid].a, 0);
                p->re->prog[r].min = d.min;
                p->re->prog[r].max = d.max;
                break;
            }
            if (d.max == RX_INF && rx_nullable(p, d.kid)) {
                rx_fail(p, "a loop whose body can match nothing");
                return;
            }
            for (uint32_t i = 0; i < d.min; i++) {
                rx_compile(p, d.kid);
            }
            if (d.max == RX_INF) {
                const int32_t s = rx_emit(p, I_SPLIT, 0, 0);
                p->re->prog[s].x = s + 1;
                rx_compile(p, d.kid);
                const int32_t j = rx_emit(p, I_JMP, s, 0);
                (void) j;
                p->re->prog[s].y = (int32_t) p->re->n_prog;
            } else if (d.max > d.min) {
                const uint32_t k = d.max - d.min;
                int32_t * splits = malloc(k * sizeof(int32_t));
                if (!splits) {
                    rx_fail(p, "out of memory");
                    return;
                }
                for (uint32_t i = 0; i < k && !p->err; i++) {
                    splits[i] = rx_emit(p, I_SPLIT, 0, 0);
                    p->re->prog[splits[i]].x = splits[i] + 1;
                    rx_compile(p, d.kid);
                }
                for (uint32_t i = 0; i < k && !p->err; i++) {
                    p->re->prog[splits[i]].y = (int32_t) p->re->n_prog;
                }
                free(splits);
            }
            break;
        }
    }
}

struct vocab_regex * vocab_regex_compile(const char * pattern) {
    struct vocab_regex * re = calloc(1, sizeof(*re));
    if (!re) {
        LLAMA_LOG_ERROR("vocab_regex_compile: out of memory\n");
        return NULL;
    }
    struct rx_parser p = { pattern, 0, strlen(pattern), false, re, NULL, 0, 0, 0, 0, 0 };
    const int32_t root = rx_parse_alt(&p);
    if (!p.err && p.pos != p.len) {
        rx_fail(&p, "unbalanced )");
    }
    if (!p.err && root >= 0) {
        rx_compile(&p, root);
        rx_emit(&p, I_MATCH, 0, 0);
    }
    free(p.nodes);
    if (p.err || root < 0) {
        vocab_regex_free(re);
        return NULL;
    }
    return re;
}

void vocab_regex_free(struct vocab_regex * re) {
    if (re) {
        free(re->cls);
        free(re->ranges);
        free(re->prog);
        free(re);
    }
}

void vocab_regex_scratch_free(struct vocab_regex_scratch * s) {
    free(s->stack);
    s->stack = NULL;
    s->cap = 0;
}

// ---- matching ----

// cp has bit 31 set while the ASCII cache is being filled (the cache is bypassed then).
static bool rx_class_match(const struct vocab_regex * re, const struct rx_class * c, uint32_t cp, uint8_t val) {
    if (cp < 128) {
        return c->ascii[cp >> 6] >> (cp & 63) & 1;
    }
    const uint32_t real = cp == UNICODE_INVALID ? cp : (cp & 0x7FFFFFFFu);
    bool in = (c->val_mask >> val) & 1;
    if (!in && c->n_ranges) {
        const uint32_t * r = re->ranges + 2 * c->range_off;
        for (uint32_t i = 0; i < c->n_ranges; i++) {
            if (real >= r[2 * i] && real <= r[2 * i + 1]) {
                in = true;
                break;
            }
        }
    }
    if (in && c->and_cls >= 0) {
        in = rx_class_match(re, &re->cls[c->and_cls], cp, val);
    }
    return in != c->neg;
}

static inline bool rx_at(const struct vocab_regex * re, int32_t cls, const struct vocab_regex_text * t, size_t i) {
    return rx_class_match(re, &re->cls[cls], t->cp[i], t->val[i]);
}

// \w: letters, marks, decimal digits, connector punctuation.
static bool rx_is_word(const struct vocab_regex_text * t, size_t i) {
    return (RX_GC_MASK(GCS_L | GCS_M | GC(ND) | GC(PC)) >> t->val[i]) & 1;
}

// A backtrack entry: resume at (pc, pos); a RUN entry (lo != SIZE_MAX) retries its
// continuation at pos - 1, pos - 2, ... down to lo.
struct rx_bt {
    int32_t pc;
    size_t pos;
    size_t lo;
};

static bool rx_push(struct vocab_regex_scratch * s, size_t * sp, struct rx_bt e) {
    if (*sp == s->cap) {
        const size_t cap = s->cap ? 2 * s->cap : 256;
        void * q = realloc(s->stack, cap * sizeof(struct rx_bt));
        if (!q) {
            return false;
        }
        s->stack = q;
        s->cap = cap;
    }
    ((struct rx_bt *) s->stack)[(*sp)++] = e;
    return true;
}

static int64_t rx_run(const struct vocab_regex * re, const struct vocab_regex_text * t, size_t start, size_t end, int32_t pc,
                      size_t pos, struct vocab_regex_scratch * s, size_t base) {
    size_t sp = base;
    for (;;) {
        const struct rx_inst * in = &re->prog[pc];
        bool ok = true;
        switch (in->op) {
            case I_CLASS:
                if (pos < end && rx_at(re, in->x, t, pos)) {
                    pos++;
                    pc++;
                } else {
                    ok = false;
                }
                break;
            case I_RUN: {
                size_t k = 0;
                while (k < in->max && pos + k < end && rx_at(re, in->x, t, pos + k)) {
                    k++;
                }
                if (k < in->min) {
                    ok = false;
                    break;
                }
                const size_t lo = pos + in->min, hi = pos + k;
                if (hi > lo && !rx_push(s, &sp, (struct rx_bt) { pc + 1, hi, lo })) {
                    return -2;
                }
                pos = hi;
                pc++;
                break;
            }
            case I_SPLIT:
                if (!rx_push(s, &sp, (struct rx_bt) { in->y, pos, SIZE_MAX })) {
                    return -2;
                }
                pc = in->x;
                break;
            case I_JMP: pc = in->x; break;
            case I_LOOK: {
                const int64_t r = rx_run(re, t, start, end, pc + 1, pos, s, sp);
                if (r == -2) {
                    return -2;
                }
                ok = (r >= 0) != in->neg;
                pc = in->y;
                break;
            }
            case I_BOL:
                ok = pos == start || t->cp[pos - 1] == '\n';
                pc++;
                break;
            case I_EOL:
                ok = pos == end || t->cp[pos] == '\n';
                pc++;
                break;
            case I_WORDB: {
                const bool a = pos > start && rx_is_word(t, pos - 1);
                const bool b = pos < end && rx_is_word(t, pos);
                ok = (a != b) != in->neg;
                pc++;
                break;
            }
            case I_MATCH: return (int64_t) pos;
        }
        if (ok) {
            continue;
        }
        if (sp == base) {
            return -1;
        }
        struct rx_bt * e = &((struct rx_bt *) s->stack)[sp - 1];
        pc = e->pc;
        if (e->lo == SIZE_MAX) {
            pos = e->pos;
            sp--;
        } else {
            pos = --e->pos;
            if (pos == e->lo) {
                sp--;
            }
        }
    }
}

int64_t vocab_regex_match_at(const struct vocab_regex * re, const struct vocab_regex_text * t, size_t start, size_t end,
                             size_t pos, struct vocab_regex_scratch * scratch) {
    const int64_t r = rx_run(re, t, start, end, 0, pos, scratch, 0);
    return r < 0 ? -1 : r;
}
