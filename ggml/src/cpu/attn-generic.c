// attn-generic.c — portable flash-attention kernels (math in attn.h) and the choice of
// kernels per kernel set.
#include "attn.h"
#include "ops-util.h"

// tanh through exp: 1 - 2/(e^(2x) + 1) saturates cleanly at +-1 for large |x|.
static inline float fa_tanh(float x) {
    return 1.0f - 2.0f/(ggml_cpu_expf(2.0f*x) + 1.0f);
}

static void scores_generic(const struct ggml_fa_rows * r, int64_t j0, int nk, const float * k, int64_t ldk) {
    for (int i = 0; i < r->nr; i++) {
        const float * mask = r->mask ? r->mask[i] : NULL;
        const float * q = r->q + i*r->ldq;
        float * s = r->s + i*r->lds;
        int32_t * cell = r->cell + i*r->lds;
        for (int j = 0; j < nk; j++) {
            if (mask && mask[j] == -INFINITY) continue;
            float x = 0.0f;
            for (int d = 0; d < r->D; d++) x += q[d]*k[j*ldk + d];
            x *= r->scale;
            if (r->softcap != 0.0f) x = r->softcap*fa_tanh(x/r->softcap);
            if (mask) x += r->slope[i]*mask[j];
            s[r->n[i]] = x;
            cell[r->n[i]] = (int32_t) (j0 + j);
            r->n[i]++;
            r->m[i] = x > r->m[i] ? x : r->m[i];
        }
    }
}

static void probs_generic(const struct ggml_fa_rows * r) {
    for (int i = 0; i < r->nr; i++) {
        float * s = r->s + i*r->lds;
        float sum = 0.0f;
        for (int64_t j = 0; j < r->n[i]; j++) {
            s[j] = ggml_cpu_expf(s[j] - r->m[i]);
            sum += s[j];
        }
        r->l[i] = sum;
    }
}

static void accum_generic(const struct ggml_fa_rows * r, int64_t j0, int nk, const float * v, int64_t ldv) {
    for (int i = 0; i < r->nr; i++) {
        const float * p = r->s + i*r->lds;
        const int32_t * cell = r->cell + i*r->lds;
        float * o = r->o + i*r->ldo;
        int64_t e = r->next[i];
        for (; e < r->n[i] && cell[e] < j0 + nk; e++) {
            const float * vj = v + (cell[e] - j0)*ldv;
            for (int c = 0; c < r->Dv; c++) o[c] += p[e]*vj[c];
        }
        r->next[i] = e;
    }
}

void ggml_fa_kernels_init_generic(struct ggml_fa_kernels * k) {
    k->scores = scores_generic;
    k->probs = probs_generic;
    k->accum = accum_generic;
}

struct ggml_fa_kernels ggml_fa_kernels_get(enum ggml_cpu_kernel_variant v) {
    struct ggml_fa_kernels k;
    ggml_fa_kernels_init_generic(&k);
#if defined(__x86_64__) || defined(__i386__)
    if (v == GGML_CPU_KERNELS_AVX512 && ggml_cpu_kernel_variant_available(v)) ggml_fa_kernels_init_avx512(&k);
    else if (v == GGML_CPU_KERNELS_AVX2 && ggml_cpu_kernel_variant_available(v)) ggml_fa_kernels_init_avx2(&k);
#endif
    (void) v;
    return k;
}
