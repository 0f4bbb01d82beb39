// ggml-types.c — the static type table: names, block geometry (as GGUF stores it) and the
// reference row converters of every supported type; ggml_quantize_chunk on top of them.
#include "ggml-quants.h"

#include <inttypes.h>
#include <stdint.h>
#include <string.h>

// Integer and f64 types have no float converters; the half types widen exactly and round to
// nearest even on the way back.
#define TRAITS_PLAIN(name, T)            { name, 1, sizeof(T), false, NULL, NULL }
#define TRAITS_QUANT(name, QK, block, t) { name, QK, sizeof(block), true, to_float_##t, from_float_ref_##t }

// Type-erased wrappers: calling the typed functions through the void* signatures would be
// undefined behaviour, so the table points at these instead.
#define QUANT_WRAPPERS(t, block)                                                                                    \
    static void to_float_##t(const void * x, float * y, int64_t k) { dequantize_row_##t((const block *) x, y, k); } \
    static void from_float_ref_##t(const float * x, void * y, int64_t k) { quantize_row_##t##_ref(x, (block *) y, k); }

QUANT_WRAPPERS(q4_0, block_q4_0)
QUANT_WRAPPERS(q4_1, block_q4_1)
QUANT_WRAPPERS(q5_0, block_q5_0)
QUANT_WRAPPERS(q5_1, block_q5_1)
QUANT_WRAPPERS(q8_0, block_q8_0)
QUANT_WRAPPERS(q8_1, block_q8_1)
QUANT_WRAPPERS(q2_K, block_q2_K)
QUANT_WRAPPERS(q3_K, block_q3_K)
QUANT_WRAPPERS(q4_K, block_q4_K)
QUANT_WRAPPERS(q5_K, block_q5_K)
QUANT_WRAPPERS(q6_K, block_q6_K)
QUANT_WRAPPERS(q8_K, block_q8_K)
QUANT_WRAPPERS(iq4_nl, block_iq4_nl)
QUANT_WRAPPERS(iq4_xs, block_iq4_xs)
QUANT_WRAPPERS(mxfp4, block_mxfp4)
QUANT_WRAPPERS(tq1_0, block_tq1_0)
QUANT_WRAPPERS(tq2_0, block_tq2_0)

// Codebook types whose quantizer works without an importance matrix (weights x^2).
#define SEARCH_WRAPPERS(t, block)                                                                                   \
    static void to_float_##t(const void * x, float * y, int64_t k) { dequantize_row_##t((const block *) x, y, k); } \
    static void from_float_ref_##t(const float * x, void * y, int64_t k) {                                          \
        if (!quantize_row_##t##_imat(x, (block *) y, k, NULL)) memset(y, 0, (size_t) (k / QK_K) * sizeof(block));   \
    }
SEARCH_WRAPPERS(iq3_s, block_iq3_s)
SEARCH_WRAPPERS(iq3_xxs, block_iq3_xxs)
SEARCH_WRAPPERS(iq2_s, block_iq2_s)

// The other codebook types (IQ2_XXS, IQ2_XS, IQ1_S, IQ1_M) quantize only with an importance
// matrix (ggml_quantize_chunk).
#define DEQUANT_WRAPPER(t, block) \
    static void to_float_##t(const void * x, float * y, int64_t k) { dequantize_row_##t((const block *) x, y, k); }
#define TRAITS_READONLY(name, QK, block, t) { name, QK, sizeof(block), true, to_float_##t, NULL }

DEQUANT_WRAPPER(iq2_xxs, block_iq2_xxs)
DEQUANT_WRAPPER(iq2_xs, block_iq2_xs)
DEQUANT_WRAPPER(iq1_s, block_iq1_s)
DEQUANT_WRAPPER(iq1_m, block_iq1_m)

// F32 "converts" by copying, so generic code can treat every type alike.
static void to_float_f32(const void * x, float * y, int64_t k) { memcpy(y, x, (size_t) k * sizeof(float)); }
static void from_float_ref_f32(const float * x, void * y, int64_t k) { memcpy(y, x, (size_t) k * sizeof(float)); }

static const struct ggml_type_traits type_traits[GGML_TYPE_COUNT] = {
    [GGML_TYPE_F32] = { "f32", 1, sizeof(float), false, to_float_f32, from_float_ref_f32 },
    [GGML_TYPE_F16] = { "f16", 1, sizeof(ggml_fp16_t), false, ggml_quants_f16_to_f32_row, ggml_quants_f32_to_f16_row },
    [GGML_TYPE_Q4_0] = TRAITS_QUANT("q4_0", QK4_0, block_q4_0, q4_0),
    [GGML_TYPE_Q4_1] = TRAITS_QUANT("q4_1", QK4_1, block_q4_1, q4_1),
    [GGML_TYPE_Q5_0] = TRAITS_QUANT("q5_0", QK5_0, block_q5_0, q5_0),
    [GGML_TYPE_Q5_1] = TRAITS_QUANT("q5_1", QK5_1, block_q5_1, q5_1),
    [GGML_TYPE_Q8_0] = TRAITS_QUANT("q8_0", QK8_0, block_q8_0, q8_0),
    [GGML_TYPE_Q8_1] = TRAITS_QUANT("q8_1", QK8_1, block_q8_1, q8_1),
    [GGML_TYPE_Q2_K] = TRAITS_QUANT("q2_K", QK_K, block_q2_K, q2_K),
    [GGML_TYPE_Q3_K] = TRAITS_QUANT("q3_K", QK_K, block_q3_K, q3_K),
    [GGML_TYPE_Q4_K] = TRAITS_QUANT("q4_K", QK_K, block_q4_K, q4_K),
    [GGML_TYPE_Q5_K] = TRAITS_QUANT("q5_K", QK_K, block_q5_K, q5_K),
    [GGML_TYPE_Q6_K] = TRAITS_QUANT("q6_K", QK_K, block_q6_K, q6_K),
    [GGML_TYPE_Q8_K] = TRAITS_QUANT("q8_K", QK_K, block_q8_K, q8_K),
    [GGML_TYPE_IQ2_XXS] = TRAITS_READONLY("iq2_xxs", QK_K, block_iq2_xxs, iq2_xxs),
    [GGML_TYPE_IQ2_XS] = TRAITS_READONLY("iq2_xs", QK_K, block_iq2_xs, iq2_xs),
    [GGML_TYPE_IQ3_XXS] = TRAITS_QUANT("iq3_xxs", QK_K, block_iq3_xxs, iq3_xxs),
    [GGML_TYPE_IQ1_S] = TRAITS_READONLY("iq1_s", QK_K, block_iq1_s, iq1_s),
    [GGML_TYPE_IQ4_NL] = TRAITS_QUANT("iq4_nl", QK4_NL, block_iq4_nl, iq4_nl),
    [GGML_TYPE_IQ3_S] = TRAITS_QUANT("iq3_s", QK_K, block_iq3_s, iq3_s),
    [GGML_TYPE_IQ2_S] = TRAITS_QUANT("iq2_s", QK_K, block_iq2_s, iq2_s),
    [GGML_TYPE_IQ4_XS] = TRAITS_QUANT("iq4_xs", QK_K, block_iq4_xs, iq4_xs),
    [GGML_TYPE_IQ1_M] = TRAITS_READONLY("iq1_m", QK_K, block_iq1_m, iq1_m),
    [GGML_TYPE_TQ1_0] = TRAITS_QUANT("tq1_0", QK_K, block_tq1_0, tq1_0),
    [GGML_TYPE_TQ2_0] = TRAITS_QUANT("tq2_0", QK_K, block_tq2_0, tq2_0),
    [GGML_TYPE_MXFP4] = TRAITS_QUANT("mxfp4", QK_MXFP4, block_mxfp4, mxfp4),
    [GGML_TYPE_I8] = TRAITS_PLAIN("i8", int8_t),
    [GGML_TYPE_I16] = TRAITS_PLAIN("i16", int16_t),
    [GGML_TYPE_I32] = TRAITS_PLAIN("i32", int32_t),
    [GGML_TYPE_I64] = TRAITS_PLAIN("i64", int64_t),
    [GGML_TYPE_F64] = TRAITS_PLAIN("f64", double),
    [GGML_TYPE_BF16] = { "bf16", 1, sizeof(ggml_bf16_t), false, ggml_quants_bf16_to_f32_row, ggml_quants_f32_to_bf16_row },
};

const struct ggml_type_traits * ggml_get_type_traits(enum ggml_type type) {
    if ((int) type < 0 || type >= GGML_TYPE_COUNT) return NULL;
    const struct ggml_type_traits * t = &type_traits[type];
    // unsupported and removed ids are the zero entries
    return t->type_name ? t : NULL;
}

bool ggml_quantize_requires_imatrix(enum ggml_type type) {
    switch (type) {
        case GGML_TYPE_IQ2_XXS:
        case GGML_TYPE_IQ2_XS:
        case GGML_TYPE_IQ1_S:
        case GGML_TYPE_IQ1_M: return true;
        default: return false;
    }
}

size_t ggml_quantize_chunk(enum ggml_type type, const float * src, void * dst, int64_t start, int64_t nrows, int64_t n_per_row,
                           const float * imatrix) {
    const struct ggml_type_traits * tt = ggml_get_type_traits(type);
    const bool search_only = ggml_quantize_requires_imatrix(type); // IQ2_XXS, IQ2_XS, IQ1_S, IQ1_M
    if (search_only && imatrix == NULL) {
        GGML_LOG_ERROR("ggml_quantize_chunk: %s needs an importance matrix\n", tt->type_name);
        return 0;
    }
    if (!tt || !(tt->from_float_ref || search_only) || n_per_row <= 0 || n_per_row % tt->blck_size != 0 ||
        start % n_per_row != 0) {
        GGML_LOG_ERROR("ggml_quantize_chunk: cannot quantize to %s (rows of %" PRId64 " from element %" PRId64 ")\n",
                       tt && tt->type_name ? tt->type_name : "an unknown type", n_per_row, start);
        return 0;
    }
    const size_t row_size = (size_t) (n_per_row / tt->blck_size) * tt->type_size;
    char * out = (char *) dst + (size_t) (start / n_per_row) * row_size;
    const float * in = src + start;
    for (int64_t r = 0; r < nrows; r++) {
        const float * x = in + r * n_per_row;
        void * y = out + (size_t) r * row_size;
        bool ok = true;
        // with an importance matrix every type but the 8-bit and float ones has a weighted
        // quantizer; IQ2_XXS, IQ2_XS, IQ1_S and IQ1_M have no other
        switch (imatrix || search_only ? type : GGML_TYPE_COUNT) {
            case GGML_TYPE_Q4_0: quantize_row_q4_0_imat(x, (block_q4_0 *) y, n_per_row, imatrix); break;
            case GGML_TYPE_Q4_1: quantize_row_q4_1_imat(x, (block_q4_1 *) y, n_per_row, imatrix); break;
            case GGML_TYPE_Q5_0: quantize_row_q5_0_imat(x, (block_q5_0 *) y, n_per_row, imatrix); break;
            case GGML_TYPE_Q5_1: quantize_row_q5_1_imat(x, (block_q5_1 *) y, n_per_row, imatrix); break;
            case GGML_TYPE_Q2_K: quantize_row_q2_K_imat(x, (block_q2_K *) y, n_per_row, imatrix); break;
            case GGML_TYPE_Q3_K: quantize_row_q3_K_imat(x, (block_q3_K *) y, n_per_row, imatrix); break;
            case GGML_TYPE_Q4_K: quantize_row_q4_K_imat(x, (block_q4_K *) y, n_per_row, imatrix); break;
            case GGML_TYPE_Q5_K: quantize_row_q5_K_imat(x, (block_q5_K *) y, n_per_row, imatrix); break;
            case GGML_TYPE_Q6_K: quantize_row_q6_K_imat(x, (block_q6_K *) y, n_per_row, imatrix); break;
            case GGML_TYPE_IQ4_NL: quantize_row_iq4_nl_imat(x, (block_iq4_nl *) y, n_per_row, imatrix); break;
            case GGML_TYPE_IQ4_XS: quantize_row_iq4_xs_imat(x, (block_iq4_xs *) y, n_per_row, imatrix); break;
            case GGML_TYPE_IQ3_S: ok = quantize_row_iq3_s_imat(x, (block_iq3_s *) y, n_per_row, imatrix); break;
            case GGML_TYPE_IQ3_XXS: ok = quantize_row_iq3_xxs_imat(x, (block_iq3_xxs *) y, n_per_row, imatrix); break;
            case GGML_TYPE_IQ2_S: ok = quantize_row_iq2_s_imat(x, (block_iq2_s *) y, n_per_row, imatrix); break;
            case GGML_TYPE_IQ2_XS: ok = quantize_row_iq2_xs_imat(x, (block_iq2_xs *) y, n_per_row, imatrix); break;
            case GGML_TYPE_IQ2_XXS: ok = quantize_row_iq2_xxs_imat(x, (block_iq2_xxs *) y, n_per_row, imatrix); break;
            case GGML_TYPE_IQ1_S: ok = quantize_row_iq1_s_imat(x, (block_iq1_s *) y, n_per_row, imatrix); break;
            case GGML_TYPE_IQ1_M: ok = quantize_row_iq1_m_imat(x, (block_iq1_m *) y, n_per_row, imatrix); break;
            default: tt->from_float_ref(x, y, n_per_row); break;
        }
        if (!ok) {
            GGML_LOG_ERROR("ggml_quantize_chunk: out of memory for the %s grid tables\n", tt->type_name);
            return 0;
        }
    }
    return (size_t) nrows * row_size;
}
