// grammar-parse.c — GBNF text -> struct gr_grammar (grammar.h), following the syntax of
// llama.cpp's grammars/README: rules `name ::= alternatives`, `|`, groups, string literals and
// character classes with escapes (\xHH \uHHHH \UHHHHHHHH), negated classes, `.`, repetition
// `* + ? {m} {m,} {m,n}`, `#` comments, token references `<[id]>` / `<text>` / `!<...>`.
// Newlines end a rule except inside parentheses and after `|` (a rule may also continue on a
// line that starts with `|`).
//
// Every error is reported once, with the line and column where it was found: syntax errors,
// undefined rules, a missing root, left recursion (which the stack matcher could not expand),
// an empty grammar, a grammar that expands past the size limit.
#include "grammar.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GP_MAX_ELEMS (1u << 22) // expanded size limit: repetition counts multiply sizes

struct gp_vec {
    struct gr_elem * data;
    uint32_t n, cap;
};

struct gp_rule {
    const char * name;  // into the source (NULL for synthesized rules)
    uint32_t name_len;
    uint32_t owner;     // named rule this one was synthesized in (itself if named)
    struct gp_vec body;
    bool defined;
    const char * def_at; // where it is defined (synthesized: where its text starts)
    const char * ref_at; // first reference
};

struct gp {
    const char * src;
    const char * p;
    const struct llama_vocab * vocab;
    struct gp_rule * rules;
    uint32_t n_rules, cap_rules;
    uint32_t * hash;
    uint32_t hash_cap; // name -> rule id + 1
    uint32_t * ranges;
    uint32_t n_ranges, cap_ranges;
    struct gr_class * classes;
    uint32_t n_classes, cap_classes;
    uint64_t total;     // elements emitted, for the size limit
    bool failed;
    char * err;
    size_t err_size;
};

static void gp_pos(const struct gp * g, const char * at, int * line, int * col) {
    *line = 1;
    *col = 1;
    for (const char * s = g->src; s < at && *s; s++) {
        if (*s == '\n') {
            (*line)++;
            *col = 1;
        } else if (((unsigned char) *s & 0xC0) != 0x80) {
            (*col)++;
        }
    }
}

static void gp_fail(struct gp * g, const char * at, const char * fmt, ...) {
    if (g->failed) {
        return;
    }
    g->failed = true;
    int line, col;
    gp_pos(g, at, &line, &col);
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (g->err && g->err_size) {
        snprintf(g->err, g->err_size, "line %d, column %d: %s", line, col, msg);
    }
}

static bool gp_grow(struct gp * g, void ** data, uint32_t * cap, uint32_t need, size_t elem) {
    if (need <= *cap) {
        return true;
    }
    uint32_t c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    void * d = GGML_REALLOC(*data, (size_t) c * elem);
    if (!d) {
        gp_fail(g, g->p, "out of memory");
        return false;
    }
    *data = d;
    *cap = c;
    return true;
}

static bool gp_emit(struct gp * g, uint32_t rule, uint32_t type, uint32_t value) {
    if (g->failed) return false;
    if (++g->total > GP_MAX_ELEMS) {
        gp_fail(g, g->p, "grammar too large once repetitions are expanded (over %u elements)", GP_MAX_ELEMS);
        return false;
    }
    struct gp_vec * v = &g->rules[rule].body;
    if (!gp_grow(g, (void **) &v->data, &v->cap, v->n + 1, sizeof(struct gr_elem))) return false;
    v->data[v->n].type = type;
    v->data[v->n].value = value;
    v->n++;
    return true;
}

static uint32_t gp_hash(const char * s, uint32_t n) {
    uint32_t h = 2166136261u;
    for (uint32_t i = 0; i < n; i++) {
        h ^= (unsigned char) s[i];
        h *= 16777619u;
    }
    return h;
}

static int64_t gp_new_rule(struct gp * g, const char * name, uint32_t len, uint32_t owner, const char * at) {
    if (!gp_grow(g, (void **) &g->rules, &g->cap_rules, g->n_rules + 1, sizeof(struct gp_rule))) return -1;
    struct gp_rule * r = &g->rules[g->n_rules];
    memset(r, 0, sizeof(*r));
    r->name = name;
    r->name_len = len;
    r->owner = name ? g->n_rules : owner;
    r->def_at = at;
    return g->n_rules++;
}

// Rule id of a name, created (undefined) if new; -1 on memory exhaustion.
static int64_t gp_rule_id(struct gp * g, const char * name, uint32_t len, const char * at) {
    if (g->n_rules * 2 + 2 > g->hash_cap) {
        uint32_t cap = g->hash_cap ? g->hash_cap * 2 : 64;
        uint32_t * h = GGML_CALLOC(cap, sizeof(uint32_t));
        if (!h) {
            gp_fail(g, at, "out of memory");
            return -1;
        }
        for (uint32_t i = 0; i < g->hash_cap; i++) {
            if (!g->hash[i]) continue;
            const struct gp_rule * r = &g->rules[g->hash[i] - 1];
            uint32_t k = gp_hash(r->name, r->name_len) & (cap - 1);
            while (h[k]) k = (k + 1) & (cap - 1);
            h[k] = g->hash[i];
        }
        free(g->hash);
        g->hash = h;
        g->hash_cap = cap;
    }
    uint32_t k = gp_hash(name, len) & (g->hash_cap - 1);
    while (g->hash[k]) {
        const struct gp_rule * r = &g->rules[g->hash[k] - 1];
        if (r->name_len == len && memcmp(r->name, name, len) == 0) return g->hash[k] - 1;
        k = (k + 1) & (g->hash_cap - 1);
    }
    int64_t id = gp_new_rule(g, name, len, 0, at);
    if (id < 0) return -1;
    g->rules[id].ref_at = at;
    g->hash[k] = (uint32_t) id + 1;
    return id;
}

// Adds a class from n (lo, hi) pairs (sorted and merged here); returns its id, -1 on failure.
static int64_t gp_add_class(struct gp * g, uint32_t * pairs, uint32_t n, bool negated) {
    for (uint32_t i = 1; i < n; i++) { // insertion sort by lo: classes are short
        uint32_t lo = pairs[2 * i], hi = pairs[2 * i + 1];
        uint32_t j = i;
        while (j > 0 && pairs[2 * (j - 1)] > lo) {
            pairs[2 * j] = pairs[2 * (j - 1)];
            pairs[2 * j + 1] = pairs[2 * (j - 1) + 1];
            j--;
        }
        pairs[2 * j] = lo;
        pairs[2 * j + 1] = hi;
    }
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (m && pairs[2 * i] <= pairs[2 * (m - 1) + 1] + 1) {
            if (pairs[2 * i + 1] > pairs[2 * (m - 1) + 1]) pairs[2 * (m - 1) + 1] = pairs[2 * i + 1];
        } else {
            pairs[2 * m] = pairs[2 * i];
            pairs[2 * m + 1] = pairs[2 * i + 1];
            m++;
        }
    }
    if (!gp_grow(g, (void **) &g->ranges, &g->cap_ranges, g->n_ranges + 2 * m, sizeof(uint32_t))) return -1;
    if (!gp_grow(g, (void **) &g->classes, &g->cap_classes, g->n_classes + 1, sizeof(struct gr_class))) return -1;
    struct gr_class * c = &g->classes[g->n_classes];
    memset(c, 0, sizeof(*c));
    c->off = g->n_ranges / 2;
    c->n = m;
    c->negated = negated;
    memcpy(g->ranges + g->n_ranges, pairs, 2 * m * sizeof(uint32_t));
    g->n_ranges += 2 * m;
    for (uint32_t cp = 0; cp < 128; cp++) {
        bool in = false;
        for (uint32_t i = 0; i < m && !in; i++) in = pairs[2 * i] <= cp && cp <= pairs[2 * i + 1];
        if (in != negated) c->ascii[cp >> 5] |= 1u << (cp & 31);
    }
    return g->n_classes++;
}

static bool gp_is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

static void gp_space(struct gp * g, bool newline_ok) {
    for (;;) {
        char c = *g->p;
        if (c == ' ' || c == '\t' || (newline_ok && (c == '\n' || c == '\r'))) {
            g->p++;
        } else if (c == '#') {
            while (*g->p && *g->p != '\n') g->p++;
        } else if (c == '\r' && g->p[1] == '\n' && newline_ok) {
            g->p += 2;
        } else {
            return;
        }
    }
}

static int gp_hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// One character of a literal or class (escape or UTF-8 sequence); false (failed) if invalid.
static bool gp_char(struct gp * g, uint32_t * cp) {
    const char * at = g->p;
    unsigned char c = (unsigned char) *g->p;
    if (c == '\\') {
        char e = g->p[1];
        int nhex = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
        if (nhex) {
            uint32_t v = 0;
            for (int i = 0; i < nhex; i++) {
                int h = gp_hex(g->p[2 + i]);
                if (h < 0) {
                    gp_fail(g, at, "escape \\%c needs %d hex digits", e, nhex);
                    return false;
                }
                v = v << 4 | (uint32_t) h;
            }
            if (v > 0x10FFFF) {
                gp_fail(g, at, "escape names code point 0x%X, past U+10FFFF", v);
                return false;
            }
            g->p += 2 + nhex;
            *cp = v;
            return true;
        }
        switch (e) {
            case 'n': *cp = '\n'; break;
            case 'r': *cp = '\r'; break;
            case 't': *cp = '\t'; break;
            case '\\':
            case '"':
            case '[':
            case ']':
            case '-':
            case '^':
            case '/':
            case '\'':
            case '.': *cp = (uint32_t) e; break;
            case 0: gp_fail(g, at, "escape at end of input"); return false;
            default: gp_fail(g, at, "unknown escape '\\%c'", e); return false;
        }
        g->p += 2;
        return true;
    }
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (!len) {
        gp_fail(g, at, "invalid UTF-8 byte 0x%02X", c);
        return false;
    }
    uint32_t v = len == 1 ? c : c & (0x7F >> len);
    for (int i = 1; i < len; i++) {
        unsigned char d = (unsigned char) g->p[i];
        if ((d & 0xC0) != 0x80) {
            gp_fail(g, at, "invalid UTF-8 sequence");
            return false;
        }
        v = v << 6 | (d & 0x3F);
    }
    g->p += len;
    *cp = v;
    return true;
}

static bool gp_emit_class1(struct gp * g, uint32_t rule, uint32_t lo, uint32_t hi, bool negated) {
    uint32_t pair[2] = { lo, hi };
    int64_t c = gp_add_class(g, pair, lo <= hi ? 1 : 0, negated);
    return c >= 0 && gp_emit(g, rule, GR_CLASS, (uint32_t) c);
}

static bool gp_literal(struct gp * g, uint32_t rule) {
    const char * open = g->p++;
    while (*g->p != '"') {
        if (!*g->p || *g->p == '\n') {
            gp_fail(g, open, "unterminated string literal");
            return false;
        }
        uint32_t cp;
        if (!gp_char(g, &cp) || !gp_emit_class1(g, rule, cp, cp, false)) return false;
    }
    g->p++;
    return true;
}

static bool gp_class(struct gp * g, uint32_t rule) {
    const char * open = g->p++;
    bool negated = false;
    if (*g->p == '^') {
        negated = true;
        g->p++;
    }
    uint32_t *pairs = NULL, n = 0, cap = 0;
    bool ok = true;
    while (ok && *g->p != ']') {
        if (!*g->p || *g->p == '\n') {
            gp_fail(g, open, "unterminated character class");
            ok = false;
            break;
        }
        uint32_t lo, hi;
        const char * at = g->p;
        if (!gp_char(g, &lo)) {
            ok = false;
            break;
        }
        hi = lo;
        if (*g->p == '-' && g->p[1] != ']' && g->p[1]) {
            g->p++;
            if (!gp_char(g, &hi)) {
                ok = false;
                break;
            }
            if (hi < lo) {
                gp_fail(g, at, "character range is reversed (U+%04X > U+%04X)", lo, hi);
                ok = false;
                break;
            }
        }
        if (!gp_grow(g, (void **) &pairs, &cap, 2 * n + 2, sizeof(uint32_t))) {
            ok = false;
            break;
        }
        pairs[2 * n] = lo;
        pairs[2 * n + 1] = hi;
        n++;
    }
    if (ok) {
        g->p++;
        if (n == 0 && !negated) {
            gp_fail(g, open, "empty character class");
            ok = false;
        }
    }
    if (ok) {
        int64_t c = gp_add_class(g, pairs, n, negated);
        ok = c >= 0 && gp_emit(g, rule, GR_CLASS, (uint32_t) c);
    }
    free(pairs);
    return ok;
}

static bool gp_token(struct gp * g, uint32_t rule, bool negated) {
    const char * open = g->p++; // '<'
    uint32_t id = UINT32_MAX;
    if (*g->p == '[') {
        g->p++;
        uint64_t v = 0;
        const char * d = g->p;
        while (*g->p >= '0' && *g->p <= '9') {
            v = v * 10 + (uint64_t) (*g->p - '0');
            if (v > INT32_MAX) break;
            g->p++;
        }
        if (g->p == d || *g->p != ']' || g->p[1] != '>') {
            gp_fail(g, open, "token id reference must look like <[123]>");
            return false;
        }
        g->p += 2;
        id = (uint32_t) v;
        if (g->vocab && (int64_t) id >= llama_vocab_n_tokens(g->vocab)) {
            gp_fail(g, open, "token id %u is out of range (vocabulary of %d tokens)", id, llama_vocab_n_tokens(g->vocab));
            return false;
        }
    } else {
        const char * s = g->p;
        while (*g->p && *g->p != '>' && *g->p != '\n') g->p++;
        if (*g->p != '>' || g->p == s) {
            gp_fail(g, open, "unterminated token reference (expected <text>)");
            return false;
        }
        size_t len = (size_t) (g->p - s);
        g->p++;
        if (g->vocab) {
            llama_token toks[4];
            int32_t n = llama_tokenize(g->vocab, open, (int32_t) (len + 2), toks, 4, false, true);
            if (n != 1) {
                gp_fail(g, open, "token reference '%.*s' is not a single token of the vocabulary", (int) len + 2, open);
                return false;
            }
            id = (uint32_t) toks[0];
        }
    }
    return gp_emit(g, rule, negated ? GR_TOKEN_NOT : GR_TOKEN, id);
}

// Replaces body[start..] (the last item) with its repetition {min, max} (max UINT32_MAX: no bound).
static bool gp_repeat(struct gp * g, uint32_t rule, uint32_t start, uint32_t min, uint32_t max, const char * at) {
    struct gp_vec * v = &g->rules[rule].body;
    if (start == v->n) {
        gp_fail(g, at, "repetition operator without a preceding item");
        return false;
    }
    struct gr_elem item;
    if (v->n - start == 1) {
        item = v->data[start];
    } else {
        int64_t sub = gp_new_rule(g, NULL, 0, g->rules[rule].owner, at);
        if (sub < 0) return false;
        v = &g->rules[rule].body; // rules may have moved
        for (uint32_t i = start; i < v->n; i++) {
            if (!gp_emit(g, (uint32_t) sub, v->data[i].type, v->data[i].value)) return false;
            v = &g->rules[rule].body;
        }
        if (!gp_emit(g, (uint32_t) sub, GR_END, 0)) return false;
        g->rules[sub].defined = true;
        item.type = GR_REF;
        item.value = (uint32_t) sub;
    }
    g->rules[rule].body.n = start;
    for (uint32_t i = 0; i < min; i++) {
        if (!gp_emit(g, rule, item.type, item.value)) return false;
    }
    if (max == UINT32_MAX) {
        int64_t s = gp_new_rule(g, NULL, 0, g->rules[rule].owner, at);
        if (s < 0) return false;
        g->rules[s].defined = true;
        if (!gp_emit(g, (uint32_t) s, item.type, item.value) || !gp_emit(g, (uint32_t) s, GR_REF, (uint32_t) s) ||
            !gp_emit(g, (uint32_t) s, GR_ALT, 0) || !gp_emit(g, (uint32_t) s, GR_END, 0))
            return false;
        return gp_emit(g, rule, GR_REF, (uint32_t) s);
    }
    int64_t prev = -1;
    for (uint32_t i = min; i < max; i++) { // optional chain, innermost first: O ::= item O' | ()
        int64_t o = gp_new_rule(g, NULL, 0, g->rules[rule].owner, at);
        if (o < 0) return false;
        g->rules[o].defined = true;
        if (!gp_emit(g, (uint32_t) o, item.type, item.value)) return false;
        if (prev >= 0 && !gp_emit(g, (uint32_t) o, GR_REF, (uint32_t) prev)) return false;
        if (!gp_emit(g, (uint32_t) o, GR_ALT, 0) || !gp_emit(g, (uint32_t) o, GR_END, 0)) return false;
        prev = o;
    }
    return prev < 0 || gp_emit(g, rule, GR_REF, (uint32_t) prev);
}

static bool gp_uint(struct gp * g, uint32_t * out) {
    if (*g->p < '0' || *g->p > '9') return false;
    uint64_t v = 0;
    while (*g->p >= '0' && *g->p <= '9') {
        v = v * 10 + (uint64_t) (*g->p - '0');
        if (v > GP_MAX_ELEMS) v = GP_MAX_ELEMS;
        g->p++;
    }
    *out = (uint32_t) v;
    return true;
}

static bool gp_alternates(struct gp * g, uint32_t rule, bool nested);

static bool gp_sequence(struct gp * g, uint32_t rule, bool nested) {
    uint32_t last = UINT32_MAX; // start of the last item in the body
    while (!g->failed) {
        const char * at = g->p;
        char c = *g->p;
        uint32_t here = g->rules[rule].body.n;
        if (c == '"') {
            if (!gp_literal(g, rule)) return false;
            last = here;
        } else if (c == '[') {
            if (!gp_class(g, rule)) return false;
            last = here;
        } else if (c == '.') {
            g->p++;
            if (!gp_emit_class1(g, rule, 1, 0, true)) return false; // empty negated class: anything
            last = here;
        } else if (c == '<' || (c == '!' && g->p[1] == '<')) {
            bool neg = c == '!';
            if (neg) g->p++;
            if (!gp_token(g, rule, neg)) return false;
            last = here;
        } else if (gp_is_name_char(c)) {
            const char * s = g->p;
            while (gp_is_name_char(*g->p)) g->p++;
            uint32_t len = (uint32_t) (g->p - s);
            const char * q = g->p;
            while (*q == ' ' || *q == '\t') q++;
            if (q[0] == ':' && q[1] == ':' && q[2] == '=') {
                gp_fail(g, s, "rule '%.*s' starts before the previous rule ended (missing newline?)", (int) len, s);
                return false;
            }
            int64_t id = gp_rule_id(g, s, len, s);
            if (id < 0 || !gp_emit(g, rule, GR_REF, (uint32_t) id)) return false;
            last = here;
        } else if (c == '(') {
            g->p++;
            int64_t sub = gp_new_rule(g, NULL, 0, g->rules[rule].owner, at);
            if (sub < 0) return false;
            gp_space(g, true);
            if (!gp_alternates(g, (uint32_t) sub, true)) return false;
            if (*g->p != ')') {
                gp_fail(g, at, "unclosed '('");
                return false;
            }
            g->p++;
            g->rules[sub].defined = true;
            if (!gp_emit(g, rule, GR_REF, (uint32_t) sub)) return false;
            last = here;
        } else if (c == '*' || c == '+' || c == '?') {
            g->p++;
            if (last == UINT32_MAX) {
                gp_fail(g, at, "'%c' without a preceding item", c);
                return false;
            }
            if (!gp_repeat(g, rule, last, c == '+' ? 1 : 0, c == '?' ? 1 : UINT32_MAX, at)) return false;
            last = UINT32_MAX; // x** is not meaningful; llama.cpp rejects it too
        } else if (c == '{') {
            g->p++;
            if (last == UINT32_MAX) {
                gp_fail(g, at, "'{' without a preceding item");
                return false;
            }
            uint32_t min = 0, max;
            gp_space(g, false);
            bool has_min = gp_uint(g, &min);
            gp_space(g, false);
            if (*g->p == '}') {
                if (!has_min) {
                    gp_fail(g, at, "repetition {} needs a count");
                    return false;
                }
                max = min;
            } else if (*g->p == ',') {
                g->p++;
                gp_space(g, false);
                if (!gp_uint(g, &max)) max = UINT32_MAX;
                gp_space(g, false);
                if (*g->p != '}') {
                    gp_fail(g, at, "unterminated repetition (expected '}')");
                    return false;
                }
            } else {
                gp_fail(g, at, "malformed repetition (expected {m}, {m,} or {m,n})");
                return false;
            }
            g->p++;
            if (max < min) {
                gp_fail(g, at, "repetition {%u,%u} has max below min", min, max);
                return false;
            }
            if (!gp_repeat(g, rule, last, min, max, at)) return false;
            last = UINT32_MAX;
        } else {
            return true;
        }
        gp_space(g, nested);
    }
    return false;
}

static bool gp_alternates(struct gp * g, uint32_t rule, bool nested) {
    for (;;) {
        if (!gp_sequence(g, rule, nested)) return false;
        if (!nested) { // a rule continues on a following line that starts with '|'
            const char * save = g->p;
            gp_space(g, true);
            if (*g->p != '|') g->p = save;
        }
        if (*g->p != '|') break;
        g->p++;
        if (!gp_emit(g, rule, GR_ALT, 0)) return false;
        gp_space(g, true);
    }
    return gp_emit(g, rule, GR_END, 0);
}

static bool gp_rule_def(struct gp * g) {
    const char * s = g->p;
    while (gp_is_name_char(*g->p)) g->p++;
    uint32_t len = (uint32_t) (g->p - s);
    if (!len) {
        gp_fail(g, s, "expected a rule name");
        return false;
    }
    gp_space(g, false);
    if (!(g->p[0] == ':' && g->p[1] == ':' && g->p[2] == '=')) {
        gp_fail(g, g->p, "expected '::=' after rule name '%.*s'", (int) len, s);
        return false;
    }
    g->p += 3;
    int64_t id = gp_rule_id(g, s, len, s);
    if (id < 0) return false;
    if (g->rules[id].defined) {
        int line, col;
        gp_pos(g, g->rules[id].def_at, &line, &col);
        gp_fail(g, s, "rule '%.*s' is defined twice (first at line %d, column %d)", (int) len, s, line, col);
        return false;
    }
    g->rules[id].defined = true;
    g->rules[id].def_at = s;
    gp_space(g, true);
    if (!gp_alternates(g, (uint32_t) id, false)) return false;
    if (*g->p && *g->p != '\n' && *g->p != '\r') {
        gp_fail(g, g->p, "unexpected '%c' in rule '%.*s'", *g->p, (int) len, s);
        return false;
    }
    return true;
}

static void gp_rule_label(const struct gp * g, uint32_t r, char * buf, size_t n) {
    const struct gp_rule * o = &g->rules[g->rules[r].owner];
    if (g->rules[r].name)
        snprintf(buf, n, "rule '%.*s'", (int) o->name_len, o->name);
    else
        snprintf(buf, n, "a repetition or group inside rule '%.*s'", (int) o->name_len, o->name);
}

// DFS over "can start with" edges; color 1 = on the path, 2 = done.
static bool gp_left_rec_dfs(struct gp * g, uint32_t r, uint8_t * color, const uint8_t * nullable) {
    color[r] = 1;
    const struct gp_vec * b = &g->rules[r].body;
    bool at_start = true;
    for (uint32_t i = 0; i < b->n; i++) {
        const struct gr_elem e = b->data[i];
        if (e.type == GR_ALT || e.type == GR_END) {
            at_start = true;
            continue;
        }
        if (!at_start) continue;
        if (e.type == GR_REF) {
            if (color[e.value] == 1) {
                char lab[256];
                gp_rule_label(g, e.value, lab, sizeof lab);
                gp_fail(g, g->rules[e.value].def_at, "left recursion: %s can reach itself without consuming input", lab);
                return false;
            }
            if (color[e.value] == 0 && !gp_left_rec_dfs(g, e.value, color, nullable)) return false;
            at_start = nullable[e.value];
        } else {
            at_start = false;
        }
    }
    color[r] = 2;
    return true;
}

static struct gr_grammar * gp_finish(struct gp * g, const char * root) {
    if (g->n_rules == 0) {
        gp_fail(g, g->src, "empty grammar (no rules)");
        return NULL;
    }
    for (uint32_t r = 0; r < g->n_rules; r++) {
        if (!g->rules[r].defined) {
            gp_fail(g, g->rules[r].ref_at, "undefined rule '%.*s'", (int) g->rules[r].name_len, g->rules[r].name);
            return NULL;
        }
    }
    int64_t root_id = -1;
    for (uint32_t r = 0; r < g->n_rules; r++) {
        if (g->rules[r].name && g->rules[r].name_len == strlen(root) && memcmp(g->rules[r].name, root, g->rules[r].name_len) == 0)
            root_id = r;
    }
    if (root_id < 0) {
        gp_fail(g, g->p, "missing root rule '%s'", root);
        return NULL;
    }

    uint8_t * nullable = GGML_CALLOC(g->n_rules, 2);
    if (!nullable) {
        gp_fail(g, g->src, "out of memory");
        return NULL;
    }
    uint8_t * color = nullable + g->n_rules;
    for (bool changed = true; changed;) {
        changed = false;
        for (uint32_t r = 0; r < g->n_rules; r++) {
            if (nullable[r]) continue;
            const struct gp_vec * b = &g->rules[r].body;
            bool ok = true;
            for (uint32_t i = 0; i < b->n; i++) {
                const struct gr_elem e = b->data[i];
                if (e.type == GR_ALT || e.type == GR_END) {
                    if (ok) {
                        nullable[r] = 1;
                        changed = true;
                        break;
                    }
                    ok = true;
                } else if (e.type != GR_REF || !nullable[e.value]) {
                    ok = false;
                }
            }
        }
    }
    bool ok = true;
    for (uint32_t r = 0; r < g->n_rules && ok; r++) {
        if (color[r] == 0) ok = gp_left_rec_dfs(g, r, color, nullable);
    }
    free(nullable);
    if (!ok) return NULL;

    struct gr_grammar * out = GGML_CALLOC(1, sizeof(*out));
    uint32_t n_elems = 0, n_alts = 0;
    for (uint32_t r = 0; r < g->n_rules; r++) {
        n_elems += g->rules[r].body.n;
        for (uint32_t i = 0; i < g->rules[r].body.n; i++) n_alts += g->rules[r].body.data[i].type <= GR_ALT;
    }
    if (out) {
        out->refs = 1;
        out->elems = GGML_MALLOC((size_t) n_elems * sizeof(struct gr_elem) + 1);
        out->rule_alts = GGML_MALLOC((size_t) g->n_rules * sizeof(uint32_t));
        out->rule_n_alts = GGML_MALLOC((size_t) g->n_rules * sizeof(uint32_t));
        out->alts = GGML_MALLOC((size_t) n_alts * sizeof(uint32_t) + 1);
    }
    if (!out || !out->elems || !out->rule_alts || !out->rule_n_alts || !out->alts) {
        gr_grammar_unref(out);
        gp_fail(g, g->src, "out of memory");
        return NULL;
    }
    uint32_t pos = 0, a = 0;
    for (uint32_t r = 0; r < g->n_rules; r++) {
        const struct gp_vec * b = &g->rules[r].body;
        out->rule_alts[r] = a;
        out->alts[a++] = pos;
        for (uint32_t i = 0; i < b->n; i++) {
            struct gr_elem e = b->data[i];
            out->elems[pos++] = e;
            if (e.type == GR_ALT) out->alts[a++] = pos;
            if (e.type == GR_TOKEN || e.type == GR_TOKEN_NOT) out->has_tokens = true;
        }
        out->rule_n_alts[r] = a - out->rule_alts[r];
    }
    out->n_elems = pos;
    out->n_rules = g->n_rules;
    out->root = (uint32_t) root_id;
    out->ranges = g->ranges;
    g->ranges = NULL;
    out->n_ranges = g->n_ranges;
    out->classes = g->classes;
    g->classes = NULL;
    out->n_classes = g->n_classes;
    return out;
}

struct gr_grammar * gr_grammar_parse(const char * text, const char * root, const struct llama_vocab * vocab, char * err,
                                     size_t err_size) {
    if (err && err_size) err[0] = 0;
    struct gp g;
    memset(&g, 0, sizeof g);
    g.err = err;
    g.err_size = err_size;
    if (!text) {
        if (err && err_size) snprintf(err, err_size, "line 1, column 1: no grammar text (NULL)");
        return NULL;
    }
    g.src = g.p = text;
    g.vocab = vocab;
    if (!root || !*root) root = "root";
    gp_space(&g, true);
    while (*g.p && !g.failed) {
        if (!gp_rule_def(&g)) break;
        gp_space(&g, true);
    }
    struct gr_grammar * out = g.failed ? NULL : gp_finish(&g, root);
    for (uint32_t r = 0; r < g.n_rules; r++) free(g.rules[r].body.data);
    free(g.rules);
    free(g.hash);
    free(g.ranges);
    free(g.classes);
    return out;
}

struct gr_grammar * gr_grammar_ref(struct gr_grammar * g) {
    if (g) __atomic_add_fetch(&g->refs, 1, __ATOMIC_RELAXED);
    return g;
}

void gr_grammar_unref(struct gr_grammar * g) {
    if (!g || __atomic_sub_fetch(&g->refs, 1, __ATOMIC_ACQ_REL) > 0) return;
    free(g->elems);
    free(g->ranges);
    free(g->classes);
    free(g->rule_alts);
    free(g->rule_n_alts);
    free(g->alts);
    free(g);
}

bool gr_class_match(const struct gr_grammar * g, uint32_t c, uint32_t cp) {
    const struct gr_class * k = &g->classes[c];
    if (cp < 128) return (k->ascii[cp >> 5] >> (cp & 31)) & 1;
    const uint32_t * r = g->ranges + 2 * k->off;
    uint32_t lo = 0, hi = k->n; // first range with r.hi >= cp
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (r[2 * mid + 1] < cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    bool in = lo < k->n && r[2 * lo] <= cp;
    return in != (bool) k->negated;
}
