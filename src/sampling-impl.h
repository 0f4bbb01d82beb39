// sampling-impl.h — helpers shared by sampling.c (core, chain, truncation samplers) and
// sampling-extra.c (stateful samplers: mirostat, penalties, DRY, logit bias, adaptive-p).
// Not installed.
//
// Conventions every sampler here follows, so that no input can crash the host:
//   - A NaN logit ranks as -inf (smpl_key); it never receives probability mass.
//   - Softmax (smpl_softmax): +inf logits share all the mass equally; if every logit is -inf
//     (or NaN) the distribution is uniform, so a final sampler still picks a valid index.
//   - An empty candidate array is left alone; final samplers set selected = -1 on it.
//   - Ties rank the earlier array position first (sorts are stable), so every result is
//     deterministic and matches a stable descending sort.
#ifndef LLAMA_SAMPLING_IMPL_H
#define LLAMA_SAMPLING_IMPL_H

#include "llama-impl.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

// ---- random numbers ----

// PCG32 (O'Neill's PCG-XSH-RR 64/32): 64-bit LCG state, 32-bit output. Seeded as the
// reference pcg32_srandom(initstate = seed, initseq = 54), so a seed gives the same stream on
// every platform and in every process; tests re-implement it in Python to predict draws.
struct smpl_rng {
    uint64_t state;
    uint64_t inc;
};

// Seeds the generator (same seed -> same stream).
void smpl_rng_seed(struct smpl_rng * rng, uint32_t seed);
// Next 32 random bits.
uint32_t smpl_rng_next(struct smpl_rng * rng);
// Uniform double in [0, 1): next32 / 2^32.
double smpl_rng_uniform(struct smpl_rng * rng);
// seed unless it is LLAMA_DEFAULT_SEED, which yields a fresh seed from the clock and a counter.
uint32_t smpl_seed_resolve(uint32_t seed);

// ---- time ----

// Monotonic nanoseconds (for the chain's timings: a small chain runs in under a microsecond).
int64_t smpl_time_ns(void);

// ---- scratch memory ----

// A growable buffer kept in a sampler's state so that applying it allocates nothing once warm.
struct smpl_buf {
    void * data;
    size_t cap; // bytes
};

// Makes buf hold at least n bytes (contents not kept); NULL (logged) if memory is exhausted.
void * smpl_buf_reserve(struct smpl_buf * buf, size_t n);
// Releases the buffer; NULL-safe.
void smpl_buf_free(struct smpl_buf * buf);

// ---- clone / copy_state ----
//
// The two hooks behind llama_sampler_clone and llama_sampler_copy, written once for the three
// kinds of sampler state; each macro defines static NAME_clone and NAME_copy_state.

// State T is plain data: a clone and a state copy are struct copies.
#define SMPL_CLONE_COPY_PLAIN(NAME, T, FREE_CTX)                                                  \
    static struct llama_sampler * NAME##_clone(const struct llama_sampler * smpl) {               \
        T * c = GGML_MALLOC(sizeof(*c));                                                          \
        if (c) {                                                                                  \
            *c = *(const T *) smpl->ctx;                                                          \
        }                                                                                         \
        return smpl_new(smpl->iface, c, FREE_CTX);                                                \
    }                                                                                             \
    static void NAME##_copy_state(struct llama_sampler * dst, const struct llama_sampler * src) { \
        *(T *) dst->ctx = *(const T *) src->ctx;                                                  \
    }

// Plain data but for its scratch buffer (member scratch), which is not state: a clone starts
// without one, and a state copy keeps the destination's.
#define SMPL_CLONE_COPY_SCRATCH(NAME, T, FREE_CTX)                                                \
    static struct llama_sampler * NAME##_clone(const struct llama_sampler * smpl) {               \
        T * c = GGML_MALLOC(sizeof(*c));                                                          \
        if (c) {                                                                                  \
            *c = *(const T *) smpl->ctx;                                                          \
            c->scratch.data = NULL;                                                               \
            c->scratch.cap = 0;                                                                   \
        }                                                                                         \
        return smpl_new(smpl->iface, c, FREE_CTX);                                                \
    }                                                                                             \
    static void NAME##_copy_state(struct llama_sampler * dst, const struct llama_sampler * src) { \
        T * d = dst->ctx;                                                                         \
        struct smpl_buf keep = d->scratch;                                                        \
        *d = *(const T *) src->ctx;                                                               \
        d->scratch = keep;                                                                        \
    }

// State that owns memory: COPY_INTO(T * dst, const T * src) copies it deeply into dst (which
// may hold older state) and returns false when out of memory.
#define SMPL_CLONE_COPY_DEEP(NAME, T, COPY_INTO, FREE_CTX)                          \
    static struct llama_sampler * NAME##_clone(const struct llama_sampler * smpl) { \
        T * c = GGML_CALLOC(1, sizeof(*c));                                         \
        if (c && !COPY_INTO(c, smpl->ctx)) {                                        \
            FREE_CTX(c);                                                            \
            return NULL;                                                            \
        }                                                                           \
        return smpl_new(smpl->iface, c, FREE_CTX);                                  \
    }                                                                               \
    static void NAME##_copy_state(struct llama_sampler * dst, const struct llama_sampler * src) { COPY_INTO(dst->ctx, src->ctx); }

// ---- candidate-array helpers ----

// Ranking key of a logit: NaN ranks as -inf; -0 and +0 are equal.
static inline float smpl_key(float logit) {
    return logit != logit ? -INFINITY : logit + 0.0f; // quiet NaN test: vectorises
}

// A candidate's rank as an unsigned key paired with its position, so that a stable sort by
// key keeps equal keys in their original order.
typedef struct {
    uint32_t key;
    uint32_t pos;
} smpl_kv;

// Order-preserving map of a float onto uint32 (ascending).
static inline uint32_t smpl_float_asc(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    // negative: flip all bits; positive: flip the sign bit. Branch-free (signs are random).
    const uint32_t mask = (uint32_t) -(int32_t) (u >> 31) | 0x80000000u;
    return u ^ mask;
}

// Key that sorts ascending in the order "highest logit first" (NaN last, with -inf).
static inline uint32_t smpl_desc_key(float logit) { return ~smpl_float_asc(smpl_key(logit)); }

// Stable LSD radix sort of n pairs by key (ascending); a and tmp hold n pairs each.
// Returns whichever of the two buffers ends up holding the sorted pairs.
smpl_kv * smpl_radix_sort(smpl_kv * a, smpl_kv * tmp, size_t n);

// Reorders the array by kv[i].key (the key of position i, ascending, stable); kv must hold
// 2 * size pairs followed by room for size llama_token_data.
void smpl_sort_by_keys(llama_token_data_array * cur_p, smpl_kv * kv);

// Whether selecting the top k of n is cheaper with a bounded heap than with a full radix sort.
bool smpl_use_heap(size_t k, size_t n);

// Highest logit (NaN ignored; -inf if none or empty).
float smpl_max_logit(const llama_token_data_array * cur_p);

// Index of the highest logit (the first one on ties); -1 for an empty array.
int64_t smpl_argmax(const llama_token_data_array * cur_p);

// Index of the highest of n logits in a bare row (the first one on ties); -1 if n == 0.
int64_t smpl_argmax_row(const float * logits, size_t n);

// out[0..k) = the k best of n logits in a bare row as candidates (id = position, p = 0), what
// top-k leaves of the whole row's candidate array; 0 < k < n. False (logged) without memory.
bool smpl_top_k_row(const float * logits, size_t n, size_t k, llama_token_data * out, struct smpl_buf * scratch);

// Sets p = softmax(logit) over the array (see the conventions above); nothing on size 0.
void smpl_softmax(llama_token_data_array * cur_p);

// Draws an index from the p fields (which must sum to ~1): the first i whose running sum of p
// exceeds u ~ U[0,1); if rounding leaves u past the total, the last index with p > 0.
int64_t smpl_sample_p(const llama_token_data_array * cur_p, struct smpl_rng * rng);

// Moves the k best candidates (by smpl_key, ties by position) to data[0..k) in descending
// order; the others follow in their original order. k >= size sorts the whole array and sets
// sorted. Uses a heap for small k and a stable radix sort otherwise: no full comparison sort.
// Returns false (array unchanged, logged) only if scratch memory cannot be had.
bool smpl_sort_top(llama_token_data_array * cur_p, size_t k, struct smpl_buf * scratch);

// Sorts the whole array descending unless it already says sorted; false on memory exhaustion.
bool smpl_sort(llama_token_data_array * cur_p, struct smpl_buf * scratch);

// Keeps the k best candidates (sorted descending); k >= size leaves the array as it is.
void smpl_top_k_impl(llama_token_data_array * cur_p, size_t k, struct smpl_buf * scratch);

// Creates a sampler object for a built-in sampler; frees ctx with free_ctx and returns NULL
// (logged) when memory is exhausted.
struct llama_sampler * smpl_new(const struct llama_sampler_i * iface, void * ctx, void (*free_ctx)(void *));

// Seed in use by a sampler of sampling-extra.c (LLAMA_DEFAULT_SEED if it has none).
uint32_t smpl_extra_get_seed(const struct llama_sampler * smpl);

#endif // LLAMA_SAMPLING_IMPL_H
