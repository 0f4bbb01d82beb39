// test_cuda_host.cu — the CUDA backend's block readers (quants.cuh) run on the host against the
// CPU library's dequantizers and reference quantizer, so every format's bit layout is checked
// on machines without a GPU (CI). Built with the CUDA backend and the C tests; run by ctest.
//
// For each type: random rows are quantized with the library's reference quantizer, then
// dequantized by the library (to_float) and by cu_deq8 in chunks of 8; both must agree to
// within rounding (the CPU and the device may fuse a multiply-add differently). Q8_0 blocks
// made by cu_quantize_q8_0 must equal the reference quantizer's bytes, and so must the Q8_1 and
// Q8_K activation blocks of qdot.cuh (written block by block at their place in a row, as the
// device kernel writes them); each unit dot (qdot.cuh) chained over a row must equal the dot of
// the dequantized weights and activations (double) to within float rounding, and so must the
// Q8_0 x 16-bit dot of F32-precision products against the unquantized activations.
#include "../../ggml/src/ggml-cuda/qdot.cuh"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

static int g_failures;

struct deq_host {
    const char * row;
    int64_t n8;
    float * out;
    template <int T> void operator()() {
        for (int64_t c = 0; c < n8; c++) cu_deq8<T>(row, c, out + 8 * c);
    }
};

static float frand(unsigned & s) {
    s = s * 1664525u + 1013904223u;
    return ((s >> 8) / 16777216.0f) * 2.0f - 1.0f;
}

// Random blocks of a type without a quantizer (IQ2_XXS, IQ2_XS, IQ1_S, IQ1_M): random bytes with
// a finite fp16 super-block scale (at offset 0; IQ1_M's in the top nibbles of its scale words).
static void random_blocks(enum ggml_type t, std::vector<char> & q, unsigned & seed) {
    const size_t ts = ggml_type_size(t);
    for (size_t i = 0; i < q.size(); i++) {
        seed = seed * 1664525u + 1013904223u;
        q[i] = (char) (seed >> 24);
    }
    for (size_t b = 0; b < q.size() / ts; b++) {
        const uint16_t h = 0x2E66; // about 0.1
        char * blk = q.data() + b * ts;
        if (t == GGML_TYPE_IQ1_M) {
            for (int k = 0; k < 4; k++) {
                uint16_t s;
                memcpy(&s, blk + 48 + 2 * k, 2);
                s = (uint16_t) ((s & 0x0FFF) | (((h >> (4 * k)) & 0xF) << 12));
                memcpy(blk + 48 + 2 * k, &s, 2);
            }
        } else {
            memcpy(blk, &h, 2);
        }
    }
}

static void check_type(enum ggml_type t) {
    const struct ggml_type_traits * tr = ggml_get_type_traits(t);
    if (!tr || !tr->to_float) {
        printf("SKIP %s: no reference converters\n", ggml_type_name(t));
        return;
    }
    const int64_t n = 1024;   // four K-quant super-blocks, 32 small blocks
    std::vector<float> x(n), ref(n), got(n);
    unsigned seed = 1234u + (unsigned) t;
    for (int64_t i = 0; i < n; i++) x[i] = frand(seed) * (1.0f + (float) (i % 37) / 9.0f);
    std::vector<char> q(ggml_row_size(t, n));
    if (tr->from_float_ref)
        tr->from_float_ref(x.data(), q.data(), n);
    else
        random_blocks(t, q, seed);
    tr->to_float(q.data(), ref.data(), n);
    deq_host h{ q.data(), n / 8, got.data() };
    if (!cu_dispatch_type(t, h)) {
        printf("FAIL %s: no cu_deq8\n", ggml_type_name(t));
        g_failures++;
        return;
    }
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        if (fabsf(got[i] - ref[i]) > 1e-6f * fabsf(ref[i]) + 1e-7f) {
            if (bad++ < 5) printf("  %s[%lld]: cu_deq8 %.9g, CPU %.9g\n", ggml_type_name(t), (long long) i, got[i], ref[i]);
        }
    }
    printf("%s %s: %lld elements\n", bad ? "FAIL" : "ok  ", ggml_type_name(t), (long long) n);
    g_failures += bad != 0;
}

static void check_q8_0_quantizer(void) {
    const int64_t n = 32 * 64;
    std::vector<float> x(n);
    unsigned seed = 99u;
    for (int64_t i = 0; i < n; i++) x[i] = frand(seed) * (float) (1 + i / 32);
    for (int64_t i = 0; i < 32; i++) x[i] = 0.0f;                 // an all-zero block
    x[40] = 127.5f / 127.0f * 3.0f;                               // a value near a rounding tie
    std::vector<block_q8_0> ref(n / 32), got(n / 32);
    ggml_get_type_traits(GGML_TYPE_Q8_0)->from_float_ref(x.data(), ref.data(), n);
    for (int64_t b = 0; b < n / 32; b++) cu_quantize_q8_0(x.data() + 32 * b, &got[b]);
    const bool same = memcmp(ref.data(), got.data(), ref.size() * sizeof(block_q8_0)) == 0;
    printf("%s q8_0 quantizer: %lld blocks\n", same ? "ok  " : "FAIL", (long long) (n / 32));
    g_failures += !same;
}

template <typename B> static bool same_bytes(const char * what, const std::vector<B> & a, const std::vector<B> & b) {
    const bool same = memcmp(a.data(), b.data(), a.size() * sizeof(B)) == 0;
    printf("%s %s: %zu blocks\n", same ? "ok  " : "FAIL", what, a.size());
    g_failures += !same;
    return same;
}

static void check_act_quantizers(void) {
    const int64_t n = QK_K * 8;
    std::vector<float> x(n);
    unsigned seed = 7u;
    for (int64_t i = 0; i < n; i++) x[i] = frand(seed) * (float) (1 + (i / 256) * 3);
    for (int64_t i = 256; i < 512; i++) x[i] = 0.0f;   // an all-zero super-block
    std::vector<block_q8_1> r1(n / 32), g1(n / 32);
    ggml_get_type_traits(GGML_TYPE_Q8_1)->from_float_ref(x.data(), r1.data(), n);
    for (int64_t b = 0; b < n / 32; b++) cu_quantize_act<GGML_TYPE_Q8_1>(x.data() + 32 * b, &g1[b]);
    same_bytes("q8_1 activation quantizer", r1, g1);
    std::vector<block_q8_K> rk(n / QK_K), gk(n / QK_K);
    ggml_get_type_traits(GGML_TYPE_Q8_K)->from_float_ref(x.data(), rk.data(), n);
    for (int64_t b = 0; b < n / QK_K; b++) cu_quantize_act<GGML_TYPE_Q8_K>(x.data() + QK_K * b, &gk[b]);
    same_bytes("q8_K activation quantizer", rk, gk);
}

struct unit_dot_check {
    template <int T> void operator()() {
        constexpr int V = cu_vdt<T>::type;
        const enum ggml_type t = (enum ggml_type) T, vt = (enum ggml_type) V;
        const int64_t n = 1024;
        std::vector<float> w(n), x(n), wd(n), xd(n);
        unsigned seed = 4321u + (unsigned) T;
        for (int64_t i = 0; i < n; i++) {
            w[i] = frand(seed);
            x[i] = frand(seed) * 3.0f;
        }
        std::vector<char> wq(ggml_row_size(t, n)), xq(ggml_row_size(vt, n));
        ggml_get_type_traits(t)->from_float_ref(w.data(), wq.data(), n);
        ggml_get_type_traits(vt)->from_float_ref(x.data(), xq.data(), n);
        ggml_get_type_traits(t)->to_float(wq.data(), wd.data(), n);
        ggml_get_type_traits(vt)->to_float(xq.data(), xd.data(), n);
        double want = 0.0, mag = 0.0;
        for (int64_t i = 0; i < n; i++) {
            want += (double) wd[i] * xd[i];
            mag += fabs((double) wd[i] * xd[i]);
        }
        float got = 0.0f;
        for (int64_t u = 0; u < n / 32; u++) got = cu_unit_dot<T>(wq.data(), xq.data(), u, got);
        const bool ok = fabs(got - want) <= 1e-5 * mag + 1e-6;
        printf("%s unit dot %s x %s: %.6f vs %.6f\n", ok ? "ok  " : "FAIL", ggml_type_name(t), ggml_type_name(vt), got, want);
        g_failures += !ok;
    }
};

// Q8_0 weights against the 16-bit activations of F32-precision products (the lm head): within
// the 16-bit rounding (2^-16 of each block's largest) of the float dot.
static void check_a16_dot(void) {
    const int64_t n = 1024;
    std::vector<float> w(n), x(n), wd(n);
    unsigned seed = 555u;
    for (int64_t i = 0; i < n; i++) {
        w[i] = frand(seed);
        x[i] = frand(seed) * (float) (1 + i / 100);
    }
    for (int64_t i = 64; i < 96; i++) x[i] = 0.0f;   // an all-zero block
    std::vector<char> wq(ggml_row_size(GGML_TYPE_Q8_0, n));
    ggml_get_type_traits(GGML_TYPE_Q8_0)->from_float_ref(w.data(), wq.data(), n);
    ggml_get_type_traits(GGML_TYPE_Q8_0)->to_float(wq.data(), wd.data(), n);
    std::vector<cu_block_a16> xa(n / 32);
    for (int64_t b = 0; b < n / 32; b++) cu_quantize_act<CU_ACT_A16>(x.data() + 32 * b, &xa[b]);
    double want = 0.0, mag = 0.0;
    for (int64_t i = 0; i < n; i++) {
        want += (double) wd[i] * x[i];
        mag += fabs((double) wd[i] * x[i]);
    }
    float got = 0.0f;
    for (int64_t u = 0; u < n / 32; u++) got = cu_unit_dot<CU_TYPE_Q8_0_A16>(wq.data(), (const char *) xa.data(), u, got);
    const bool ok = fabs(got - want) <= 1e-4 * mag + 1e-6;
    printf("%s unit dot q8_0 x 16-bit: %.6f vs %.6f\n", ok ? "ok  " : "FAIL", got, want);
    g_failures += !ok;
}

int main(void) {
    const enum ggml_type types[] = { GGML_TYPE_F32,   GGML_TYPE_F16,     GGML_TYPE_BF16,   GGML_TYPE_Q4_0,   GGML_TYPE_Q4_1,
                                     GGML_TYPE_Q5_0,  GGML_TYPE_Q5_1,    GGML_TYPE_Q8_0,   GGML_TYPE_Q2_K,   GGML_TYPE_Q3_K,
                                     GGML_TYPE_Q4_K,  GGML_TYPE_Q5_K,    GGML_TYPE_Q6_K,   GGML_TYPE_IQ4_NL, GGML_TYPE_IQ4_XS,
                                     GGML_TYPE_MXFP4, GGML_TYPE_IQ2_XXS, GGML_TYPE_IQ2_XS, GGML_TYPE_IQ2_S,  GGML_TYPE_IQ3_XXS,
                                     GGML_TYPE_IQ3_S, GGML_TYPE_IQ1_S,   GGML_TYPE_IQ1_M,  GGML_TYPE_TQ1_0,  GGML_TYPE_TQ2_0 };
    for (enum ggml_type t : types) check_type(t);
    check_q8_0_quantizer();
    check_act_quantizers();
    const enum ggml_type qtypes[] = { GGML_TYPE_Q4_0,   GGML_TYPE_Q4_1,   GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_Q8_0,
                                      GGML_TYPE_Q2_K,   GGML_TYPE_Q3_K,   GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K,
                                      GGML_TYPE_IQ4_NL, GGML_TYPE_IQ4_XS, GGML_TYPE_MXFP4 };
    for (enum ggml_type t : qtypes) {
        unit_dot_check c;
        cu_dispatch_qtype(t, c);
    }
    check_a16_dot();
    printf("%s\n", g_failures ? "FAILED" : "all passed");
    return g_failures ? 1 : 0;
}
