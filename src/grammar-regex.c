// grammar-regex.c — the regular expressions of lazy-grammar trigger patterns. llama.h says a
// pattern "will be matched from the start of the generation output, and grammar sampler will
// be fed content starting from its first match group": a whole-string match (std::regex_match,
// ECMAScript syntax) whose first capture group marks where the constrained text begins.
//
// Supported: literals, `.`, classes `[...]` / `[^...]` with ranges, \d \w \s and their negations,
// escapes \n \r \t \f \v \0 \xHH \uHHHH and escaped punctuation, groups `( )` `(?: )`, `|`,
// `* + ? {m} {m,} {m,n}` greedy or lazy (`*?`), anchors `^ $`. Unsupported syntax
// (backreferences, lookaround, \b) is a compile error, never a silently different pattern.
//
// Matching is a backtracking VM with a visited bit per (instruction, position) — a failed
// (instruction, position) pair fails again, so each is explored once: time and memory are
// O(program size x input length), whatever the pattern.
#include "grammar.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    RX_CLS,
    RX_SPLIT,
    RX_JMP,
    RX_SAVE,
    RX_BOL,
    RX_EOL,
    RX_MATCH
};

struct rx_inst {
    uint8_t op;
    uint32_t x, y;
}; // CLS: x class; SPLIT: x first, y second; JMP: x; SAVE: x slot

struct rx_class {
    uint32_t off, n;
    bool negated;
};

enum {
    RT_CLS,
    RT_CAT,
    RT_ALT,
    RT_REP,
    RT_GROUP,
    RT_BOL,
    RT_EOL,
    RT_EMPTY
};
struct rx_tree {
    int type;
    uint32_t a, b;
    uint32_t min, max;
    bool greedy;
    int32_t kid, next;
}; // kids: linked list

struct gr_regex {
    struct rx_inst * prog;
    uint32_t n_prog;
    uint32_t * ranges;
    uint32_t n_ranges;
    struct rx_class * classes;
    uint32_t n_classes;
    uint32_t n_groups;
};

struct rx_parser {
    const char *src, *p;
    struct rx_tree * t;
    uint32_t n_t, cap_t;
    uint32_t * ranges;
    uint32_t n_ranges, cap_ranges;
    struct rx_class * classes;
    uint32_t n_classes, cap_classes;
    uint32_t n_groups;
    char * err;
    size_t err_size;
    bool failed;
};

static void rx_fail(struct rx_parser * r, const char * msg) {
    if (r->failed) return;
    r->failed = true;
    if (r->err && r->err_size) snprintf(r->err, r->err_size, "at offset %d: %s", (int) (r->p - r->src), msg);
}

static bool rx_grow(struct rx_parser * r, void ** p, uint32_t * cap, uint32_t need, size_t e) {
    if (need <= *cap) return true;
    uint32_t c = *cap ? *cap * 2 : 32;
    while (c < need) c *= 2;
    void * d = GGML_REALLOC(*p, (size_t) c * e);
    if (!d) {
        rx_fail(r, "out of memory");
        return false;
    }
    *p = d;
    *cap = c;
    return true;
}

static int32_t rx_node(struct rx_parser * r, int type) {
    if (r->n_t > 100000) {
        rx_fail(r, "pattern too large");
        return -1;
    }
    if (!rx_grow(r, (void **) &r->t, &r->cap_t, r->n_t + 1, sizeof(struct rx_tree))) return -1;
    struct rx_tree * n = &r->t[r->n_t];
    memset(n, 0, sizeof(*n));
    n->type = type;
    n->kid = -1;
    n->next = -1;
    return (int32_t) r->n_t++;
}

static bool rx_range(struct rx_parser * r, uint32_t lo, uint32_t hi) {
    if (!rx_grow(r, (void **) &r->ranges, &r->cap_ranges, r->n_ranges + 2, sizeof(uint32_t))) return false;
    r->ranges[r->n_ranges++] = lo;
    r->ranges[r->n_ranges++] = hi;
    return true;
}

// Adds the ranges of a shorthand class (\d \w \s) to the current class.
static bool rx_shorthand(struct rx_parser * r, char c) {
    switch (c) {
        case 'd': return rx_range(r, '0', '9');
        case 'w': return rx_range(r, '0', '9') && rx_range(r, 'A', 'Z') && rx_range(r, '_', '_') && rx_range(r, 'a', 'z');
        case 's':
            return rx_range(r, 9, 13) && rx_range(r, ' ', ' ') && rx_range(r, 0xA0, 0xA0) && rx_range(r, 0x1680, 0x1680) &&
                rx_range(r, 0x2000, 0x200A) && rx_range(r, 0x2028, 0x2029) && rx_range(r, 0x202F, 0x202F) &&
                rx_range(r, 0x205F, 0x205F) && rx_range(r, 0x3000, 0x3000) && rx_range(r, 0xFEFF, 0xFEFF);
    }
    return false;
}

static int32_t rx_class_node(struct rx_parser * r, uint32_t off, bool negated) {
    if (!rx_grow(r, (void **) &r->classes, &r->cap_classes, r->n_classes + 1, sizeof(struct rx_class))) return -1;
    r->classes[r->n_classes].off = off / 2;
    r->classes[r->n_classes].n = (r->n_ranges - off) / 2;
    r->classes[r->n_classes].negated = negated;
    int32_t n = rx_node(r, RT_CLS);
    if (n >= 0) r->t[n].a = r->n_classes++;
    return n;
}

static int rx_hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Decodes one UTF-8 character of the pattern (or returns a stray byte as itself).
static uint32_t rx_utf8(const char ** p) {
    const unsigned char * s = (const unsigned char *) *p;
    int len = s[0] < 0x80 ? 1 : (s[0] >> 5) == 6 ? 2 : (s[0] >> 4) == 14 ? 3 : (s[0] >> 3) == 30 ? 4 : 1;
    uint32_t v = len == 1 ? s[0] : s[0] & (0x7F >> len);
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            *p += 1;
            return s[0];
        }
        v = v << 6 | (s[i] & 0x3F);
    }
    *p += len;
    return v;
}

// An escape after '\' (r->p at the letter): a code point in *cp, or a shorthand in *sh.
static bool rx_escape(struct rx_parser * r, uint32_t * cp, char * sh) {
    char c = *r->p;
    *sh = 0;
    if (!c) {
        rx_fail(r, "pattern ends with '\\'");
        return false;
    }
    r->p++;
    switch (c) {
        case 'd':
        case 'w':
        case 's':
        case 'D':
        case 'W':
        case 'S': *sh = c; return true;
        case 'n': *cp = '\n'; return true;
        case 'r': *cp = '\r'; return true;
        case 't': *cp = '\t'; return true;
        case 'f': *cp = '\f'; return true;
        case 'v': *cp = '\v'; return true;
        case '0': *cp = 0; return true;
        case 'x':
        case 'u': {
            int n = c == 'x' ? 2 : 4;
            uint32_t v = 0;
            for (int i = 0; i < n; i++) {
                int h = rx_hexval(r->p[i]);
                if (h < 0) {
                    rx_fail(r, "bad hex escape");
                    return false;
                }
                v = v << 4 | (uint32_t) h;
            }
            r->p += n;
            *cp = v;
            return true;
        }
        case 'b':
        case 'B': rx_fail(r, "word boundaries (\\b) are not supported"); return false;
    }
    if ((c >= '1' && c <= '9') || c == 'k') {
        rx_fail(r, "backreferences are not supported");
        return false;
    }
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
        rx_fail(r, "unknown escape");
        return false;
    }
    r->p--;
    *cp = rx_utf8(&r->p);
    return true;
}

static int32_t rx_alt(struct rx_parser * r);

static int32_t rx_atom(struct rx_parser * r) {
    char c = *r->p;
    if (c == '(') {
        r->p++;
        int32_t g = -1;
        if (r->p[0] == '?') {
            if (r->p[1] != ':') {
                rx_fail(r, "lookaround and named groups are not supported");
                return -1;
            }
            r->p += 2;
            g = rx_node(r, RT_GROUP);
            if (g >= 0) r->t[g].a = UINT32_MAX; // non-capturing
        } else {
            g = rx_node(r, RT_GROUP);
            if (g >= 0) r->t[g].a = ++r->n_groups;
        }
        if (g < 0) return -1;
        int32_t body = rx_alt(r);
        if (body < 0) return -1;
        if (*r->p != ')') {
            rx_fail(r, "missing ')'");
            return -1;
        }
        r->p++;
        r->t[g].kid = body;
        return g;
    }
    if (c == '^') {
        r->p++;
        return rx_node(r, RT_BOL);
    }
    if (c == '$') {
        r->p++;
        return rx_node(r, RT_EOL);
    }
    uint32_t off = r->n_ranges;
    if (c == '.') {
        r->p++;
        if (!rx_range(r, '\n', '\n') || !rx_range(r, '\r', '\r') || !rx_range(r, 0x2028, 0x2029)) return -1;
        return rx_class_node(r, off, true);
    }
    if (c == '[') {
        r->p++;
        bool neg = false;
        if (*r->p == '^') {
            neg = true;
            r->p++;
        }
        bool first = true;
        while (*r->p != ']' || first) {
            first = false;
            if (!*r->p) {
                rx_fail(r, "missing ']'");
                return -1;
            }
            uint32_t lo, hi;
            char sh = 0;
            if (*r->p == '\\') {
                r->p++;
                if (!rx_escape(r, &lo, &sh)) return -1;
                if (sh == 'b') lo = '\b';
            } else {
                lo = rx_utf8(&r->p);
            }
            if (sh) {
                if (sh >= 'a') {
                    if (!rx_shorthand(r, sh)) return -1;
                    continue;
                }
                // negated shorthand inside a class: add its complement's ranges
                uint32_t start = r->n_ranges;
                if (!rx_shorthand(r, (char) (sh + 32))) return -1;
                uint32_t n = (r->n_ranges - start) / 2;
                uint32_t * tmp = GGML_MALLOC((size_t) n * 2 * sizeof(uint32_t));
                if (!tmp) {
                    rx_fail(r, "out of memory");
                    return -1;
                }
                memcpy(tmp, r->ranges + start, (size_t) n * 2 * sizeof(uint32_t));
                r->n_ranges = start;
                uint32_t from = 0;
                bool ok = true;
                for (uint32_t i = 0; i < n && ok; i++) { // shorthand ranges are sorted
                    if (tmp[2 * i] > from) ok = rx_range(r, from, tmp[2 * i] - 1);
                    from = tmp[2 * i + 1] + 1;
                }
                if (ok) ok = rx_range(r, from, 0x10FFFF);
                free(tmp);
                if (!ok) return -1;
                continue;
            }
            hi = lo;
            if (r->p[0] == '-' && r->p[1] && r->p[1] != ']') {
                r->p++;
                if (*r->p == '\\') {
                    r->p++;
                    if (!rx_escape(r, &hi, &sh)) return -1;
                    if (sh) {
                        rx_fail(r, "a shorthand class cannot end a range");
                        return -1;
                    }
                } else {
                    hi = rx_utf8(&r->p);
                }
                if (hi < lo) {
                    rx_fail(r, "reversed range in class");
                    return -1;
                }
            }
            if (!rx_range(r, lo, hi)) return -1;
        }
        r->p++;
        return rx_class_node(r, off, neg);
    }
    if (c == '\\') {
        r->p++;
        uint32_t cp;
        char sh;
        if (!rx_escape(r, &cp, &sh)) return -1;
        if (sh) {
            if (!rx_shorthand(r, sh >= 'a' ? sh : (char) (sh + 32))) return -1;
            return rx_class_node(r, off, sh < 'a');
        }
        if (!rx_range(r, cp, cp)) return -1;
        return rx_class_node(r, off, false);
    }
    if (c == '*' || c == '+' || c == '?' || c == '{') {
        rx_fail(r, "quantifier without a preceding item");
        return -1;
    }
    if (c == ')') {
        rx_fail(r, "unmatched ')'");
        return -1;
    }
    uint32_t cp = rx_utf8(&r->p);
    if (!rx_range(r, cp, cp)) return -1;
    return rx_class_node(r, off, false);
}

static bool rx_num(struct rx_parser * r, uint32_t * v) {
    if (*r->p < '0' || *r->p > '9') return false;
    uint64_t x = 0;
    while (*r->p >= '0' && *r->p <= '9') {
        x = x * 10 + (uint64_t) (*r->p++ - '0');
        if (x > 1000) x = 1001;
    }
    *v = (uint32_t) x;
    return true;
}

static int32_t rx_seq(struct rx_parser * r) {
    int32_t cat = rx_node(r, RT_CAT);
    if (cat < 0) return -1;
    int32_t last = -1;
    while (*r->p && *r->p != '|' && *r->p != ')') {
        int32_t a = rx_atom(r);
        if (a < 0) return -1;
        char q = *r->p;
        uint32_t min = 1, max = 1;
        bool quant = true;
        if (q == '*') {
            min = 0;
            max = UINT32_MAX;
            r->p++;
        } else if (q == '+') {
            min = 1;
            max = UINT32_MAX;
            r->p++;
        } else if (q == '?') {
            min = 0;
            max = 1;
            r->p++;
        } else if (q == '{' && r->p[1] >= '0' && r->p[1] <= '9') {
            r->p++;
            rx_num(r, &min);
            max = min;
            if (*r->p == ',') {
                r->p++;
                if (!rx_num(r, &max)) max = UINT32_MAX;
            }
            if (*r->p != '}') {
                rx_fail(r, "malformed {m,n}");
                return -1;
            }
            r->p++;
            if (max < min) {
                rx_fail(r, "{m,n} with n < m");
                return -1;
            }
            if (min > 1000 || (max != UINT32_MAX && max > 1000)) {
                rx_fail(r, "repetition count over 1000");
                return -1;
            }
        } else {
            quant = false;
        }
        if (quant) {
            int32_t rep = rx_node(r, RT_REP);
            if (rep < 0) return -1;
            r->t[rep].min = min;
            r->t[rep].max = max;
            r->t[rep].kid = a;
            r->t[rep].greedy = true;
            if (*r->p == '?') {
                r->t[rep].greedy = false;
                r->p++;
            }
            if (*r->p == '*' || *r->p == '+' || *r->p == '?' || *r->p == '{') {
                rx_fail(r, "nested quantifier");
                return -1;
            }
            a = rep;
        }
        if (last < 0)
            r->t[cat].kid = a;
        else
            r->t[last].next = a;
        last = a;
    }
    return cat;
}

static int32_t rx_alt(struct rx_parser * r) {
    int32_t alt = rx_node(r, RT_ALT);
    if (alt < 0) return -1;
    int32_t last = -1;
    for (;;) {
        int32_t s = rx_seq(r);
        if (s < 0) return -1;
        if (last < 0)
            r->t[alt].kid = s;
        else
            r->t[last].next = s;
        last = s;
        if (*r->p != '|') break;
        r->p++;
    }
    return alt;
}

struct rx_emit {
    struct rx_inst * p;
    uint32_t n, cap;
    bool oom;
};

static uint32_t rx_put(struct rx_emit * e, uint8_t op, uint32_t x, uint32_t y) {
    if (e->n >= 1u << 20) {
        e->oom = true;
        return e->n;
    }
    if (e->n == e->cap) {
        uint32_t c = e->cap ? e->cap * 2 : 64;
        struct rx_inst * d = GGML_REALLOC(e->p, (size_t) c * sizeof(*d));
        if (!d) {
            e->oom = true;
            return e->n;
        }
        e->p = d;
        e->cap = c;
    }
    e->p[e->n].op = op;
    e->p[e->n].x = x;
    e->p[e->n].y = y;
    return e->n++;
}

static void rx_gen(struct rx_emit * e, const struct rx_tree * t, int32_t i) {
    if (e->oom) return;
    const struct rx_tree * n = &t[i];
    switch (n->type) {
        case RT_CLS: rx_put(e, RX_CLS, n->a, 0); break;
        case RT_BOL: rx_put(e, RX_BOL, 0, 0); break;
        case RT_EOL: rx_put(e, RX_EOL, 0, 0); break;
        case RT_CAT:
            for (int32_t k = n->kid; k >= 0; k = t[k].next) rx_gen(e, t, k);
            break;
        case RT_GROUP:
            if (n->a != UINT32_MAX) rx_put(e, RX_SAVE, 2 * n->a, 0);
            rx_gen(e, t, n->kid);
            if (n->a != UINT32_MAX) rx_put(e, RX_SAVE, 2 * n->a + 1, 0);
            break;
        case RT_ALT: {
            uint32_t chain = UINT32_MAX; // pending JMPs to the end, linked through their x
            for (int32_t k = n->kid; k >= 0; k = t[k].next) {
                if (t[k].next < 0) {
                    rx_gen(e, t, k);
                    break;
                }
                uint32_t s = rx_put(e, RX_SPLIT, 0, 0);
                if (e->oom) return;
                e->p[s].x = e->n;
                rx_gen(e, t, k);
                uint32_t j = rx_put(e, RX_JMP, chain, 0);
                if (e->oom) return;
                chain = j;
                e->p[s].y = e->n;
            }
            if (e->oom) return;
            while (chain != UINT32_MAX) {
                uint32_t nx = e->p[chain].x;
                e->p[chain].x = e->n;
                chain = nx;
            }
            break;
        }
        case RT_REP: {
            for (uint32_t q = 0; q < n->min; q++) rx_gen(e, t, n->kid);
            if (n->max == UINT32_MAX) {
                uint32_t s = rx_put(e, RX_SPLIT, 0, 0);
                rx_gen(e, t, n->kid);
                rx_put(e, RX_JMP, s, 0);
                if (e->oom) return;
                if (n->greedy) {
                    e->p[s].x = s + 1;
                    e->p[s].y = e->n;
                } else {
                    e->p[s].x = e->n;
                    e->p[s].y = s + 1;
                }
            } else {
                uint32_t splits[1001], ns = 0;
                for (uint32_t q = n->min; q < n->max; q++) {
                    uint32_t s = rx_put(e, RX_SPLIT, 0, 0);
                    splits[ns++] = s;
                    rx_gen(e, t, n->kid);
                    if (e->oom) return;
                }
                for (uint32_t q = 0; q < ns; q++) {
                    uint32_t s = splits[q];
                    if (n->greedy) {
                        e->p[s].x = s + 1;
                        e->p[s].y = e->n;
                    } else {
                        e->p[s].x = e->n;
                        e->p[s].y = s + 1;
                    }
                }
            }
            break;
        }
    }
}

struct gr_regex * gr_regex_compile(const char * pattern, char * err, size_t err_size) {
    struct rx_parser r;
    memset(&r, 0, sizeof r);
    r.src = r.p = pattern ? pattern : "";
    r.err = err;
    r.err_size = err_size;
    if (err && err_size) err[0] = 0;
    int32_t root = rx_alt(&r);
    if (root >= 0 && *r.p) rx_fail(&r, "unmatched ')'");
    struct gr_regex * re = NULL;
    if (!r.failed) {
        struct rx_emit e = { 0 };
        rx_gen(&e, r.t, root);
        rx_put(&e, RX_MATCH, 0, 0);
        re = e.oom ? NULL : GGML_CALLOC(1, sizeof(*re));
        if (!re) {
            free(e.p);
            rx_fail(&r, "pattern too large or out of memory");
        } else {
            re->prog = e.p;
            re->n_prog = e.n;
            re->ranges = r.ranges;
            r.ranges = NULL;
            re->n_ranges = r.n_ranges;
            re->classes = r.classes;
            r.classes = NULL;
            re->n_classes = r.n_classes;
            re->n_groups = r.n_groups;
        }
    }
    free(r.t);
    free(r.ranges);
    free(r.classes);
    return re;
}

void gr_regex_free(struct gr_regex * re) {
    if (!re) return;
    free(re->prog);
    free(re->ranges);
    free(re->classes);
    free(re);
}

static bool rx_in_class(const struct gr_regex * re, uint32_t c, uint32_t cp) {
    const struct rx_class * k = &re->classes[c];
    const uint32_t * r = re->ranges + 2 * k->off;
    bool in = false;
    for (uint32_t i = 0; i < k->n && !in; i++) in = r[2 * i] <= cp && cp <= r[2 * i + 1];
    return in != k->negated;
}

struct rx_frame {
    uint32_t pc;
    uint32_t pos;
    int32_t slot;
    uint32_t old;
}; // slot >= 0: restore

bool gr_regex_match(const struct gr_regex * re, const char * s, size_t n, size_t * group1) {
    if (group1) *group1 = 0;
    const uint64_t bits = (uint64_t) re->n_prog * (n + 1);
    if (bits > ((uint64_t) 1 << 31)) {
        LLAMA_LOG_WARN("grammar: trigger text too long to match (%zu bytes)\n", n);
        return false;
    }
    uint64_t * seen = GGML_CALLOC((size_t) ((bits + 63) / 64), sizeof(uint64_t));
    uint32_t nslots = 2 * (re->n_groups + 1);
    uint32_t * slots = GGML_MALLOC(nslots * sizeof(uint32_t));
    struct rx_frame * st = NULL;
    uint32_t nst = 0, cap = 0;
    bool matched = false;
    if (!seen || !slots) goto done;
    for (uint32_t i = 0; i < nslots; i++) slots[i] = UINT32_MAX;
    st = GGML_MALLOC(64 * sizeof(*st));
    if (!st) goto done;
    cap = 64;
    st[nst++] = (struct rx_frame) { 0, 0, -1, 0 };
    while (nst && !matched) {
        struct rx_frame f = st[--nst];
        if (f.slot >= 0) {
            slots[f.slot] = f.old;
            continue;
        }
        uint32_t pc = f.pc, pos = f.pos;
        for (;;) {
            const uint64_t bit = (uint64_t) pc * (n + 1) + pos;
            if (seen[bit >> 6] >> (bit & 63) & 1) break;
            seen[bit >> 6] |= 1ull << (bit & 63);
            const struct rx_inst in = re->prog[pc];
            if (in.op == RX_MATCH) {
                if (pos == n) matched = true;
                break;
            }
            if (in.op == RX_CLS) {
                if (pos >= n) break;
                const char * q = s + pos;
                uint32_t cp = rx_utf8(&q);
                if (!rx_in_class(re, in.x, cp)) break;
                pos = (uint32_t) (q - s);
                if (pos > n) break;
                pc++;
            } else if (in.op == RX_JMP) {
                pc = in.x;
            } else if (in.op == RX_BOL) {
                if (pos != 0) break;
                pc++;
            } else if (in.op == RX_EOL) {
                if (pos != n) break;
                pc++;
            } else if (in.op == RX_SAVE || in.op == RX_SPLIT) {
                if (nst + 1 >= cap) {
                    struct rx_frame * d = GGML_REALLOC(st, (size_t) cap * 2 * sizeof(*st));
                    if (!d) {
                        LLAMA_LOG_ERROR("grammar: out of memory matching a trigger\n");
                        goto done;
                    }
                    st = d;
                    cap *= 2;
                }
                if (in.op == RX_SAVE) {
                    st[nst++] = (struct rx_frame) { 0, 0, (int32_t) in.x, slots[in.x] };
                    slots[in.x] = pos;
                    pc++;
                } else {
                    st[nst++] = (struct rx_frame) { in.y, pos, -1, 0 };
                    pc = in.x;
                }
            }
        }
    }
    if (matched && group1 && re->n_groups >= 1 && slots[2] != UINT32_MAX) *group1 = slots[2];
done:
    free(seen);
    free(slots);
    free(st);
    return matched;
}
