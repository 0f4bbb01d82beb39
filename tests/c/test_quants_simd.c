// test_quants_simd.c — every SIMD kernel set against the portable one, type by type:
// dot products agree within float tolerance, activation quantizers agree byte for byte,
// and the portable dot products agree with the float dot of the dequantized rows.
// Kernel sets this CPU cannot run are skipped (and said so).
#include "ggml-cpu/quants.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int n_fail = 0;
static int n_check = 0;

#define CHECK(cond, ...)                                         \
    do {                                                         \
        n_check++;                                               \
        if (!(cond)) {                                           \
            n_fail++;                                            \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                        \
            fputc('\n', stderr);                                 \
        }                                                        \
    } while (0)

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rng_u32(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t) (rng_state >> 16);
}
// Roughly normal values (sum of uniforms) times scale, with an occasional outlier.
static float rng_value(float scale) {
    float v = 0.0f;
    for (int i = 0; i < 4; i++) v += (float) (rng_u32() & 0xFFFFFF) / (float) 0x1000000 - 0.5f;
    if ((rng_u32() & 255) == 0) v *= 8.0f;
    return v * scale;
}

static const enum ggml_type dot_types[] = {
    GGML_TYPE_F32,     GGML_TYPE_F16,   GGML_TYPE_BF16,  GGML_TYPE_Q4_0,  GGML_TYPE_Q4_1,    GGML_TYPE_Q5_0,   GGML_TYPE_Q5_1,
    GGML_TYPE_Q8_0,    GGML_TYPE_Q2_K,  GGML_TYPE_Q3_K,  GGML_TYPE_Q4_K,  GGML_TYPE_Q5_K,    GGML_TYPE_Q6_K,   GGML_TYPE_IQ4_NL,
    GGML_TYPE_IQ4_XS,  GGML_TYPE_MXFP4, GGML_TYPE_TQ1_0, GGML_TYPE_TQ2_0, GGML_TYPE_IQ2_XXS, GGML_TYPE_IQ2_XS, GGML_TYPE_IQ2_S,
    GGML_TYPE_IQ3_XXS, GGML_TYPE_IQ3_S, GGML_TYPE_IQ1_S, GGML_TYPE_IQ1_M,
};
static const enum ggml_type act_types[] = {
    GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_Q8_0, GGML_TYPE_Q8_1, GGML_TYPE_Q8_K,
};

static double dot_abs_f64(const float * a, const float * b, int n, double * abs_sum) {
    double s = 0.0, as = 0.0;
    for (int i = 0; i < n; i++) {
        s += (double) a[i] * (double) b[i];
        as += fabs((double) a[i] * (double) b[i]);
    }
    *abs_sum = as;
    return s;
}

// Random blocks of a type without a quantizer (the codebook types): random bytes with a
// finite fp16 super-block scale about `scale` / 32.
static void random_blocks(enum ggml_type type, void * q, int nblocks, float scale) {
    const struct ggml_type_traits * tt = ggml_get_type_traits(type);
    unsigned char * p = q;
    for (size_t i = 0; i < (size_t) nblocks * tt->type_size; i++) p[i] = (unsigned char) rng_u32();
    const ggml_fp16_t h = GGML_FP32_TO_FP16(scale / 32.0f * (0.5f + (float) (rng_u32() & 255) / 256.0f));
    for (int b = 0; b < nblocks; b++) {
        unsigned char * blk = p + (size_t) b * tt->type_size;
        if (type == GGML_TYPE_IQ1_M) {
            // the scale's four nibbles sit in the top nibbles of the four 16-bit scale words
            uint16_t sc[4];
            memcpy(sc, blk + 48, sizeof(sc));
            for (int k = 0; k < 4; k++) sc[k] = (uint16_t) ((sc[k] & 0x0FFF) | (((h >> (4 * k)) & 0xF) << 12));
            memcpy(blk + 48, sc, sizeof(sc));
        } else {
            memcpy(blk, &h, sizeof(h)); // every other codebook type starts with its fp16 d
        }
    }
}

// Types whose NEON dot gives the portable kernel's bits.
static bool neon_exact(enum ggml_type t) {
    switch (t) {
        case GGML_TYPE_IQ4_NL:
        case GGML_TYPE_IQ4_XS:
        case GGML_TYPE_MXFP4:
        case GGML_TYPE_TQ1_0:
        case GGML_TYPE_TQ2_0:
        case GGML_TYPE_IQ2_XXS:
        case GGML_TYPE_IQ2_XS:
        case GGML_TYPE_IQ2_S:
        case GGML_TYPE_IQ3_XXS:
        case GGML_TYPE_IQ3_S:
        case GGML_TYPE_IQ1_S:
        case GGML_TYPE_IQ1_M: return true;
        default: return false;
    }
}

// vec_dot_x4 against four columns (y and three variations of it) must give the bits of four
// vec_dot calls: a column's result may not depend on the columns batched with it.
static void check_dot_x4(const struct ggml_type_traits_cpu * var, const struct ggml_type_traits_cpu * vvar, int n,
                         const void * xq, const float * yf, size_t ybytes, const char * name, enum ggml_cpu_kernel_variant v) {
    const size_t by = (ybytes + 63) / 64 * 64;
    char * ys = calloc(4, by);
    float * yv = malloc(sizeof(float) * (size_t) n);
    for (int c = 0; c < 4; c++) {
        for (int i = 0; i < n; i++) yv[i] = c == 0 ? yf[i] : yf[(i * (2 * c + 1)) % n] * (1.0f + 0.5f * (float) c);
        vvar->from_float(yv, ys + (size_t) c * by, n);
    }
    float s4[4], s1[4];
    var->vec_dot_x4(n, s4, sizeof(float), xq, ys, by);
    for (int c = 0; c < 4; c++) var->vec_dot(n, &s1[c], xq, ys + (size_t) c * by);
    CHECK(memcmp(s4, s1, sizeof(s4)) == 0, "%s n=%d %s vec_dot_x4 %.9g %.9g %.9g %.9g vs vec_dot %.9g %.9g %.9g %.9g", name, n,
          ggml_cpu_kernel_variant_name(v), s4[0], s4[1], s4[2], s4[3], s1[0], s1[1], s1[2], s1[3]);
    free(yv);
    free(ys);
}

// Checks one (type, row length) case for every available kernel set.
static void check_dot(enum ggml_type type, int n, float scale_x, float scale_y) {
    const struct ggml_type_traits * tt = ggml_get_type_traits(type);
    const struct ggml_type_traits_cpu * gen = ggml_get_type_traits_cpu_variant(type, GGML_CPU_KERNELS_PORTABLE);
    const enum ggml_type vt = gen->vec_dot_type;
    const struct ggml_type_traits * vtt = ggml_get_type_traits(vt);
    const struct ggml_type_traits_cpu * vgen = ggml_get_type_traits_cpu_variant(vt, GGML_CPU_KERNELS_PORTABLE);

    float * xf = malloc(sizeof(float) * (size_t) n);
    float * yf = malloc(sizeof(float) * (size_t) n);
    float * xd = malloc(sizeof(float) * (size_t) n);
    float * yd = malloc(sizeof(float) * (size_t) n);
    const size_t xbytes = (size_t) (n / tt->blck_size) * tt->type_size;
    const size_t ybytes = (size_t) (n / vtt->blck_size) * vtt->type_size;
    void * xq = malloc(xbytes);
    void * yq = malloc(ybytes);
    void * yq2 = malloc(ybytes);
    for (int i = 0; i < n; i++) {
        xf[i] = rng_value(scale_x);
        yf[i] = rng_value(scale_y);
    }

    if (tt->from_float_ref)
        tt->from_float_ref(xf, xq, n);
    else
        random_blocks(type, xq, (int) (n / tt->blck_size), scale_x);
    vgen->from_float(yf, yq, n);
    tt->to_float(xq, xd, n);
    vtt->to_float(yq, yd, n);

    double abs_sum;
    const double ref = dot_abs_f64(xd, yd, n, &abs_sum);
    float s_gen = NAN;
    gen->vec_dot(n, &s_gen, xq, yq);
    const double tol = 1e-5 * abs_sum + 1e-6;
    CHECK(fabs((double) s_gen - ref) <= tol, "%s n=%d portable dot %.7g vs dequantized %.7g (tol %.3g)", tt->type_name, n, s_gen,
          ref, tol);

    for (int v = GGML_CPU_KERNELS_PORTABLE + 1; v < GGML_CPU_KERNELS_COUNT; v++) {
        const struct ggml_type_traits_cpu * var = ggml_get_type_traits_cpu_variant(type, (enum ggml_cpu_kernel_variant) v);
        if (!var) continue;
        const struct ggml_type_traits_cpu * vvar = ggml_get_type_traits_cpu_variant(vt, (enum ggml_cpu_kernel_variant) v);
        CHECK(var->vec_dot_type == vt, "%s: %s changes vec_dot_type", tt->type_name,
              ggml_cpu_kernel_variant_name((enum ggml_cpu_kernel_variant) v));
        // the variant's activation quantizer must give the same bytes as the portable one
        memset(yq2, 0xAB, ybytes);
        vvar->from_float(yf, yq2, n);
        CHECK(memcmp(yq, yq2, ybytes) == 0, "%s n=%d: %s from_float differs from portable", vtt->type_name, n,
              ggml_cpu_kernel_variant_name((enum ggml_cpu_kernel_variant) v));
        float s_var = NAN;
        var->vec_dot(n, &s_var, xq, yq);
        CHECK(fabs((double) s_var - (double) s_gen) <= tol, "%s n=%d %s dot %.7g vs portable %.7g (tol %.3g)", tt->type_name, n,
              ggml_cpu_kernel_variant_name((enum ggml_cpu_kernel_variant) v), s_var, s_gen, tol);
        if (v == GGML_CPU_KERNELS_NEON) {
            // every type has its own NEON kernel, and the IQ / TQ / MXFP4 ones keep the portable
            // kernels' integer sums and float steps in their order (quants-iq-neon-kernels.h)
            CHECK(var->vec_dot != gen->vec_dot, "%s: the neon set has no kernel of its own", tt->type_name);
            CHECK(!neon_exact(type) || memcmp(&s_var, &s_gen, sizeof(s_var)) == 0, "%s n=%d neon dot %.9g is not portable's %.9g",
                  tt->type_name, n, s_var, s_gen);
        }
        if (var->vec_dot_x4) check_dot_x4(var, vvar, n, xq, yf, ybytes, tt->type_name, (enum ggml_cpu_kernel_variant) v);
    }
    free(xf);
    free(yf);
    free(xd);
    free(yd);
    free(xq);
    free(yq);
    free(yq2);
}

// Activation quantizers on awkward inputs: zeros, ties, huge and tiny values, odd lengths.
static void check_from_float(enum ggml_type type) {
    const struct ggml_type_traits * tt = ggml_get_type_traits(type);
    const struct ggml_type_traits_cpu * gen = ggml_get_type_traits_cpu_variant(type, GGML_CPU_KERNELS_PORTABLE);
    const int bs = (int) tt->blck_size;
    const int lens[] = { bs, 2 * bs, bs == 1 ? 37 : 5 * bs, bs == 1 ? 7 : 3 * bs };
    for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
        const int n = lens[li] < 256 ? 256 : lens[li];
        float * x = malloc(sizeof(float) * (size_t) n);
        for (int pattern = 0; pattern < 5; pattern++) {
            for (int i = 0; i < n; i++) {
                switch (pattern) {
                    case 0: x[i] = 0.0f; break;
                    case 1: x[i] = (float) ((int) (rng_u32() % 255) - 127) / 127.0f * 3.0f; break; // q8 ties
                    case 2: x[i] = (float) ((int) (rng_u32() % 65) - 32) * 0.5f; break;             // .5 ties
                    case 3: x[i] = rng_value(1e-3f) * ((i % 7) ? 1.0f : 1e6f); break;
                    default: x[i] = rng_value(1.0f); break;
                }
            }
            const int len = lens[li];
            const size_t bytes = (size_t) (len / bs) * tt->type_size;
            unsigned char * a = malloc(bytes);
            unsigned char * b = malloc(bytes);
            gen->from_float(x, a, len);
            for (int v = GGML_CPU_KERNELS_PORTABLE + 1; v < GGML_CPU_KERNELS_COUNT; v++) {
                const struct ggml_type_traits_cpu * var =
                    ggml_get_type_traits_cpu_variant(type, (enum ggml_cpu_kernel_variant) v);
                if (!var) continue;
                memset(b, 0x5A, bytes);
                var->from_float(x, b, len);
                CHECK(memcmp(a, b, bytes) == 0, "%s len=%d pattern %d: %s from_float differs", tt->type_name, len, pattern,
                      ggml_cpu_kernel_variant_name((enum ggml_cpu_kernel_variant) v));
            }
            free(a);
            free(b);
        }
        free(x);
    }
}

int main(void) {
    for (int v = 0; v < GGML_CPU_KERNELS_COUNT; v++) {
        const enum ggml_cpu_kernel_variant var = (enum ggml_cpu_kernel_variant) v;
        printf("kernel set %-8s %s\n", ggml_cpu_kernel_variant_name(var),
               ggml_cpu_kernel_variant_available(var) ? "tested" : "skipped (not built or not supported by this CPU)");
    }
    printf("selected: %s\n", ggml_cpu_kernel_variant_name(ggml_cpu_kernel_variant_selected()));

    for (size_t ti = 0; ti < sizeof(dot_types) / sizeof(dot_types[0]); ti++) {
        const enum ggml_type t = dot_types[ti];
        const struct ggml_type_traits_cpu * gen = ggml_get_type_traits_cpu_variant(t, GGML_CPU_KERNELS_PORTABLE);
        CHECK(gen && gen->vec_dot, "type %d has no portable vec_dot", (int) t);
        if (!gen || !gen->vec_dot) continue;
        const int bs = (int) ggml_get_type_traits(t)->blck_size;
        if (bs == 1) {
            const int lens[] = { 1, 3, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 576, 4096 };
            for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) check_dot(t, lens[li], 1.0f, 1.0f);
        } else {
            // the minimum row (one block) and longer rows, as block multiples
            const int mult[] = { 1, 2, 3, 7, 16 };
            for (size_t li = 0; li < sizeof(mult) / sizeof(mult[0]); li++) {
                const int n = mult[li] * (bs == 32 ? 32 : 256);
                check_dot(t, n, 1.0f, 1.0f);
                check_dot(t, n, 0.01f, 50.0f);
            }
        }
    }
    for (size_t ti = 0; ti < sizeof(act_types) / sizeof(act_types[0]); ti++) check_from_float(act_types[ti]);

    // the selected table is one of the available ones
    const enum ggml_cpu_kernel_variant sel = ggml_cpu_kernel_variant_selected();
    CHECK(ggml_cpu_kernel_variant_available(sel), "selected kernel set is not available");
    CHECK(ggml_get_type_traits_cpu(GGML_TYPE_Q4_0)->vec_dot == ggml_get_type_traits_cpu_variant(GGML_TYPE_Q4_0, sel)->vec_dot,
          "selected table mismatch");
    CHECK(ggml_get_type_traits_cpu((enum ggml_type) 4)->vec_dot == NULL, "removed type 4 has a kernel");
    CHECK(ggml_get_type_traits_cpu((enum ggml_type) - 3)->vec_dot == NULL, "negative type has a kernel");

    printf("%d checks, %d failed\n", n_check, n_fail);
    return n_fail ? 1 : 0;
}
