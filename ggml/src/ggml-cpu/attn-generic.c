// attn-generic.c — portable flash-attention kernels (math in attn.h) and the choice of
// kernels per kernel set.
#include "attn.h"
#include "ops-util.h"

// tanh through exp: 1 - 2/(e^(2x) + 1) saturates cleanly at +-1 for large |x|.
static inline float fa_tanh(float x) { return 1.0f - 2.0f / (ggml_cpu_expf(2.0f * x) + 1.0f); }

static void scores_generic(const struct ggml_fa_rows * r, int64_t j0, int nk, const float * k, int64_t ldk) {
    float qk[GGML_FA_BLOCK][GGML_FA_ROWS];
    for (int j = 0; j < nk; j++) {
        for (int i = 0; i < GGML_FA_ROWS; i++) qk[j][i] = 0.0f;
        for (int d = 0; d < r->D; d++) {
            for (int i = 0; i < GGML_FA_ROWS; i++) qk[j][i] += k[j * ldk + d] * r->qt[d * GGML_FA_ROWS + i];
        }
    }
    for (int i = 0; i < r->nr; i++) {
        const float * mask = r->mask ? r->mask[i] : NULL;
        float * s = r->s + i * r->lds;
        int32_t * cell = r->cell + i * r->lds;
        for (int j = 0; j < nk; j++) {
            if (mask && mask[j] == -INFINITY) continue;
            float x = qk[j][i] * r->scale;
            if (r->softcap != 0.0f) x = r->softcap * fa_tanh(x / r->softcap);
            if (mask) x += r->slope[i] * mask[j];
            s[r->n[i]] = x;
            cell[r->n[i]] = (int32_t) (j0 + j);
            r->n[i]++;
            r->m[i] = x > r->m[i] ? x : r->m[i];
        }
    }
}

static void probs_generic(const struct ggml_fa_rows * r) {
    for (int i = 0; i < r->nr; i++) {
        float * s = r->s + i * r->lds;
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
        const float * p = r->s + i * r->lds;
        const int32_t * cell = r->cell + i * r->lds;
        int64_t e = r->next[i];
        for (; e < r->n[i] && cell[e] < j0 + nk; e++) {
            float * o = (e % 2 ? r->o2 : r->o) + i * r->ldo;
            const float * vj = v + (cell[e] - j0) * ldv;
            for (int c = 0; c < r->Dv; c++) o[c] += p[e] * vj[c];
        }
        r->next[i] = e;
    }
}

static void f16_rows_generic(const void * src, size_t stride, int nk, int64_t n, float * dst) {
    for (int j = 0; j < nk; j++) {
        const ggml_fp16_t * h = (const ggml_fp16_t *) ((const char *) src + (size_t) j * stride);
        for (int64_t e = 0; e < n; e++) dst[j * n + e] = GGML_FP16_TO_FP32(h[e]);
    }
}

void ggml_fa_kernels_init_generic(struct ggml_fa_kernels * k) {
    k->f16_rows = f16_rows_generic;
    k->scores = scores_generic;
    k->probs = probs_generic;
    k->accum = accum_generic;
}

struct ggml_fa_kernels ggml_fa_kernels_get(enum ggml_cpu_kernel_variant v) {
    struct ggml_fa_kernels k;
    ggml_fa_kernels_init_generic(&k);
#if defined(__x86_64__) || defined(__i386__)
    if (v == GGML_CPU_KERNELS_AVX512 && ggml_cpu_kernel_variant_available(v)) ggml_fa_kernels_init_avx512(&k);
    // AVX-VNNI adds only vpdpbusd: its attention is AVX2's
    else if ((v == GGML_CPU_KERNELS_AVX2 || v == GGML_CPU_KERNELS_AVXVNNI) && ggml_cpu_kernel_variant_available(v)) {
        ggml_fa_kernels_init_avx2(&k);
    }
#endif
    (void) v;
    return k;
}
