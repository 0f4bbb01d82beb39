// sampling-util.c — what the samplers share: the PCG32 generator and seeding, the clock,
// scratch buffers, softmax, argmax, drawing from probabilities, and the partial / radix sorts
// that keep large vocabularies away from comparison sorts.
#include "sampling-impl.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

// ---------------------------------------------------------------------------------------------
// random numbers and time

void smpl_rng_seed(struct smpl_rng * rng, uint32_t seed) {
    rng->state = 0;
    rng->inc = (54u << 1) | 1u;
    smpl_rng_next(rng);
    rng->state += (uint64_t) seed;
    smpl_rng_next(rng);
}

uint32_t smpl_rng_next(struct smpl_rng * rng) {
    const uint64_t old = rng->state;
    rng->state = old * 6364136223846793005ULL + rng->inc;
    const uint32_t xorshifted = (uint32_t) (((old >> 18u) ^ old) >> 27u);
    const uint32_t rot = (uint32_t) (old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((32u - rot) & 31u));
}

double smpl_rng_uniform(struct smpl_rng * rng) { return (double) smpl_rng_next(rng) * (1.0 / 4294967296.0); }

int64_t smpl_time_ns(void) {
    struct timespec ts;
#if defined(_WIN32)
    timespec_get(&ts, TIME_UTC);
#else
    clock_gettime(CLOCK_MONOTONIC, &ts);
#endif
    return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint64_t smpl_splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

uint32_t smpl_seed_resolve(uint32_t seed) {
    if (seed != LLAMA_DEFAULT_SEED) {
        return seed;
    }
    // Wall clock (differs between processes), monotonic clock, a counter (differs between
    // calls in the same microsecond) and a stack address (ASLR), mixed by splitmix64.
    static atomic_uint_fast64_t counter; // samplers may be created on several threads at once
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    uint64_t x = (uint64_t) ts.tv_sec * 1000000007ULL ^ (uint64_t) ts.tv_nsec;
    x = smpl_splitmix64(x ^ (uint64_t) smpl_time_ns());
    x = smpl_splitmix64(x ^ (uint64_t) (atomic_fetch_add(&counter, 1) + 1));
    x = smpl_splitmix64(x ^ (uint64_t) (uintptr_t) &ts);
    uint32_t r = (uint32_t) (x ^ (x >> 32));
    return r == LLAMA_DEFAULT_SEED ? 0x5eedu : r;
}

// ---------------------------------------------------------------------------------------------
// scratch memory

void * smpl_buf_reserve(struct smpl_buf * buf, size_t n) {
    if (n <= buf->cap && buf->data) {
        return buf->data;
    }
    size_t cap = buf->cap ? buf->cap : 256;
    while (cap < n) {
        cap = cap > SIZE_MAX / 2 ? n : cap * 2;
    }
    void * p = GGML_MALLOC(cap);
    if (!p) {
        LLAMA_LOG_ERROR("%s: out of memory allocating %zu bytes of sampler scratch\n", __func__, cap);
        return NULL;
    }
    free(buf->data);
    buf->data = p;
    buf->cap = cap;
    return p;
}

void smpl_buf_free(struct smpl_buf * buf) {
    if (buf) {
        free(buf->data);
        buf->data = NULL;
        buf->cap = 0;
    }
}

// ---------------------------------------------------------------------------------------------
// candidate-array helpers

// The candidate array is read as floats every 3 (the logit field): its layout is llama.h's.
_Static_assert(sizeof(llama_token_data) == 3 * sizeof(float) && offsetof(llama_token_data, logit) == sizeof(float),
               "llama_token_data is {id, logit, p}, 4 bytes each");

// The highest of n logits read every stride floats from l (NaN ignored; -inf if none).
// Inlined with a constant stride: the candidate array's field (3) and a bare row (1).
static inline float smpl_max_strided(const float * l, size_t stride, size_t n) {
    // Four running maxima break the dependency chain; a NaN never compares greater.
    float m0 = -INFINITY, m1 = -INFINITY, m2 = -INFINITY, m3 = -INFINITY;
    size_t j = 0;
    for (; j + 4 <= n; j += 4) {
        m0 = l[(j + 0) * stride] > m0 ? l[(j + 0) * stride] : m0;
        m1 = l[(j + 1) * stride] > m1 ? l[(j + 1) * stride] : m1;
        m2 = l[(j + 2) * stride] > m2 ? l[(j + 2) * stride] : m2;
        m3 = l[(j + 3) * stride] > m3 ? l[(j + 3) * stride] : m3;
    }
    for (; j < n; j++) {
        m0 = l[j * stride] > m0 ? l[j * stride] : m0;
    }
    m0 = m1 > m0 ? m1 : m0;
    m2 = m3 > m2 ? m3 : m2;
    return (m2 > m0 ? m2 : m0) + 0.0f;
}

// The maximum first (four independent lanes), then the first position holding it.
static inline int64_t smpl_argmax_strided(const float * l, size_t stride, size_t n) {
    const float max = smpl_max_strided(l, stride, n);
    for (size_t i = 0; i < n; i++) {
        if (smpl_key(l[i * stride]) == max) {
            return (int64_t) i;
        }
    }
    return 0; // not reached: max is one of the keys
}

float smpl_max_logit(const llama_token_data_array * cur_p) {
    const size_t n = cur_p->data ? cur_p->size : 0;
    return smpl_max_strided(n ? &cur_p->data[0].logit : NULL, 3, n);
}

int64_t smpl_argmax(const llama_token_data_array * cur_p) {
    if (!cur_p || !cur_p->data || cur_p->size == 0) {
        return -1;
    }
    return smpl_argmax_strided(&cur_p->data[0].logit, 3, cur_p->size);
}

int64_t smpl_argmax_row(const float * logits, size_t n) { return n == 0 || !logits ? -1 : smpl_argmax_strided(logits, 1, n); }

// exp(x) for x <= 0 or -inf (never NaN) without a libm call and without a floating-point
// comparison, so that the loop over candidates vectorises: |x| is clamped to 87 on its bits,
// x = n ln2 + r with |r| <= ln2/2, exp(r) by its degree-6 Taylor polynomial (relative error
// < 3e-7), 2^n through the exponent bits; |x| >= 87 (including -inf) gives exactly 0.
static inline float smpl_exp_neg(float x) {
    const uint32_t lim = 0x42AE0000u; // 87.0f
    uint32_t ax;
    memcpy(&ax, &x, sizeof(ax));
    ax &= 0x7fffffffu;
    const uint32_t keep = (uint32_t) -(int32_t) (ax < lim);
    ax = ax < lim ? ax : lim;
    float a;
    memcpy(&a, &ax, sizeof(a));
    const float xc = -a;
    const float t = xc * 1.44269504f + 12582912.0f; // 1.5 * 2^23: rounds n into the low bits
    uint32_t tb;
    memcpy(&tb, &t, sizeof(tb));
    const float n = t - 12582912.0f;
    const float r = (xc - n * 0.693145751953125f) - n * 1.428606765330187e-06f;
    const float poly = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720))))));
    const uint32_t bits = (tb - 0x4B400000u + 127u) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof(scale));
    float res = poly * scale;
    uint32_t rb;
    memcpy(&rb, &res, sizeof(rb));
    rb &= keep;
    memcpy(&res, &rb, sizeof(res));
    return res;
}

void smpl_softmax(llama_token_data_array * cur_p) {
    const size_t n = cur_p->size;
    llama_token_data * d = cur_p->data;
    if (n == 0 || !d) {
        return;
    }
    const float max = smpl_max_logit(cur_p);
    if (max == INFINITY) {
        size_t n_inf = 0;
        for (size_t i = 0; i < n; i++) {
            n_inf += d[i].logit == INFINITY;
        }
        for (size_t i = 0; i < n; i++) {
            d[i].p = d[i].logit == INFINITY ? 1.0f / (float) n_inf : 0.0f;
        }
        return;
    }
    if (max == -INFINITY) {
        for (size_t i = 0; i < n; i++) {
            d[i].p = 1.0f / (float) n;
        }
        return;
    }
    // The exponentials in one plain loop (it vectorises), the sum in a second one with four
    // independent partial sums folded into a double every 4096 candidates.
    for (size_t i = 0; i < n; i++) {
        const float l = d[i].logit;
        d[i].p = smpl_exp_neg((l != l ? -INFINITY : l) - max);
    }
    double sum = 0.0;
    size_t i = 0;
    while (i < n) {
        const size_t end = n - i > 4096 ? i + 4096 : n;
        float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
        for (; i + 4 <= end; i += 4) {
            s0 += d[i + 0].p;
            s1 += d[i + 1].p;
            s2 += d[i + 2].p;
            s3 += d[i + 3].p;
        }
        for (; i < end; i++) {
            s0 += d[i].p;
        }
        sum += (double) s0 + (double) s1 + (double) s2 + (double) s3;
    }
    const float inv = (float) (1.0 / sum);
    for (size_t k = 0; k < n; k++) {
        d[k].p *= inv;
    }
}

int64_t smpl_sample_p(const llama_token_data_array * cur_p, struct smpl_rng * rng) {
    const size_t n = cur_p->size;
    if (n == 0 || !cur_p->data) {
        return -1;
    }
    const double u = smpl_rng_uniform(rng);
    double cum = 0.0;
    int64_t last_pos = -1;
    for (size_t i = 0; i < n; i++) {
        const float p = cur_p->data[i].p;
        if (p > 0.0f) { // also skips NaN
            cum += p;
            last_pos = (int64_t) i;
            if (u < cum) {
                return (int64_t) i;
            }
        }
    }
    return last_pos >= 0 ? last_pos : 0;
}

// Stable LSD radix sort of n pairs by key (ascending); a and tmp hold n pairs each.
// Returns whichever of the two buffers ends up holding the sorted pairs.
smpl_kv * smpl_radix_sort(smpl_kv * a, smpl_kv * tmp, size_t n) {
    size_t count[256];
    for (int shift = 0; shift < 32; shift += 8) {
        memset(count, 0, sizeof(count));
        for (size_t i = 0; i < n; i++) {
            count[(a[i].key >> shift) & 0xff]++;
        }
        if (count[(a[0].key >> shift) & 0xff] == n) {
            continue; // every key shares this byte: the pass would not move anything
        }
        size_t sum = 0;
        for (int b = 0; b < 256; b++) {
            const size_t c = count[b];
            count[b] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++) {
            tmp[count[(a[i].key >> shift) & 0xff]++] = a[i];
        }
        smpl_kv * t = a;
        a = tmp;
        tmp = t;
    }
    return a;
}

// Sorts the array by an ascending key per candidate (given in kv[i].key for position i).
// scratch must hold 2 * n kv pairs followed by n llama_token_data.
void smpl_sort_by_keys(llama_token_data_array * cur_p, smpl_kv * kv) {
    const size_t n = cur_p->size;
    smpl_kv * sorted = smpl_radix_sort(kv, kv + n, n);
    llama_token_data * out = (llama_token_data *) (kv + 2 * n);
    for (size_t i = 0; i < n; i++) {
        out[i] = cur_p->data[sorted[i].pos];
    }
    memcpy(cur_p->data, out, n * sizeof(llama_token_data));
}

// Max-heap on (key, pos): the root is the worst of the k kept candidates.
static inline bool smpl_kv_less(smpl_kv a, smpl_kv b) { return a.key < b.key || (a.key == b.key && a.pos < b.pos); }

static void smpl_heap_sift_down(smpl_kv * h, size_t n, size_t i) {
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && smpl_kv_less(h[m], h[l])) m = l;
        if (r < n && smpl_kv_less(h[m], h[r])) m = r;
        if (m == i) return;
        smpl_kv t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

// The k best of n logits read every stride floats from l, as (key, pos) in h[0..k), best
// first (ties by position). 0 < k < n. Inlined with a constant stride (3 or 1).
static inline void smpl_heap_top(const float * l, size_t stride, size_t n, size_t k, smpl_kv * h) {
    for (size_t i = 0; i < k; i++) {
        h[i].key = smpl_desc_key(l[i * stride]);
        h[i].pos = (uint32_t) i;
    }
    for (size_t i = k / 2; i-- > 0;) {
        smpl_heap_sift_down(h, k, i);
    }
    // Positions increase along the scan, so an equal key never displaces the root: a
    // candidate enters only if its logit is strictly above the root's. That test is one float
    // comparison (false for NaN, and -0 == +0), a branch that is almost never taken.
    float root = smpl_key(l[h[0].pos * stride]);
    for (size_t i = k; i < n; i++) {
        const float x = l[i * stride];
        if (x > root) {
            h[0].key = smpl_desc_key(x);
            h[0].pos = (uint32_t) i;
            smpl_heap_sift_down(h, k, 0);
            root = smpl_key(l[h[0].pos * stride]);
        }
    }
    // Heap sort: repeatedly move the root (worst) to the end -> ascending (key, pos).
    for (size_t m = k; m > 1; m--) {
        smpl_kv t = h[0];
        h[0] = h[m - 1];
        h[m - 1] = t;
        smpl_heap_sift_down(h, m - 1, 0);
    }
}

// Selects the k best into data[0..k) (descending); keep_rest also keeps the others after them
// in their original order. 0 < k < size. Returns false on memory exhaustion (nothing changed).
static bool smpl_select_top(llama_token_data_array * cur_p, size_t k, bool keep_rest, struct smpl_buf * scratch) {
    const size_t n = cur_p->size;
    llama_token_data * d = cur_p->data;
    const size_t bytes = k * sizeof(smpl_kv) + (keep_rest ? n : k) * sizeof(llama_token_data) + (keep_rest ? n : 0);
    uint8_t * mem = smpl_buf_reserve(scratch, bytes);
    if (!mem) {
        return false;
    }
    smpl_kv * h = (smpl_kv *) mem;
    llama_token_data * out = (llama_token_data *) (mem + k * sizeof(smpl_kv));
    smpl_heap_top(&d[0].logit, 3, n, k, h);
    for (size_t i = 0; i < k; i++) {
        out[i] = d[h[i].pos];
    }
    if (keep_rest) {
        uint8_t * taken = (uint8_t *) (out + n);
        memset(taken, 0, n);
        for (size_t i = 0; i < k; i++) {
            taken[h[i].pos] = 1;
        }
        size_t j = k;
        for (size_t i = 0; i < n; i++) {
            if (!taken[i]) {
                out[j++] = d[i];
            }
        }
        memcpy(d, out, n * sizeof(llama_token_data));
    } else {
        memcpy(d, out, k * sizeof(llama_token_data));
    }
    return true;
}

static bool smpl_sort_full(llama_token_data_array * cur_p, struct smpl_buf * scratch) {
    const size_t n = cur_p->size;
    smpl_kv * kv = smpl_buf_reserve(scratch, 2 * n * sizeof(smpl_kv) + n * sizeof(llama_token_data));
    if (!kv) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        kv[i].key = smpl_desc_key(cur_p->data[i].logit);
        kv[i].pos = (uint32_t) i;
    }
    smpl_sort_by_keys(cur_p, kv);
    cur_p->sorted = true;
    return true;
}

// The heap wins while k is a small fraction of n; beyond that a linear radix sort is cheaper.
bool smpl_use_heap(size_t k, size_t n) { return k <= 4096 && k * 8 <= n; }

bool smpl_sort_top(llama_token_data_array * cur_p, size_t k, struct smpl_buf * scratch) {
    const size_t n = cur_p->size;
    if (n <= 1 || !cur_p->data) {
        cur_p->sorted = true;
        return true;
    }
    if (cur_p->sorted) {
        return true;
    }
    if (k >= n || !smpl_use_heap(k, n)) {
        return smpl_sort_full(cur_p, scratch);
    }
    return smpl_select_top(cur_p, k, true, scratch);
}

bool smpl_sort(llama_token_data_array * cur_p, struct smpl_buf * scratch) { return smpl_sort_top(cur_p, cur_p->size, scratch); }

void smpl_top_k_impl(llama_token_data_array * cur_p, size_t k, struct smpl_buf * scratch) {
    const size_t n = cur_p->size;
    if (k == 0 || k >= n || !cur_p->data) {
        return;
    }
    if (!cur_p->sorted) {
        bool ok = smpl_use_heap(k, n) ? smpl_select_top(cur_p, k, false, scratch) : smpl_sort_full(cur_p, scratch);
        if (!ok) {
            return; // logged; leaving the array whole is the safe fallback
        }
    }
    cur_p->size = k;
    cur_p->sorted = true;
}

bool smpl_top_k_row(const float * logits, size_t n, size_t k, llama_token_data * out, struct smpl_buf * scratch) {
    smpl_kv * h = smpl_buf_reserve(scratch, k * sizeof(smpl_kv));
    if (!h) {
        return false;
    }
    smpl_heap_top(logits, 1, n, k, h);
    for (size_t i = 0; i < k; i++) {
        out[i].id = (llama_token) h[i].pos;
        out[i].logit = logits[h[i].pos];
        out[i].p = 0.0f;
    }
    return true;
}
