// ops-binary.c — elementwise add, sub, mul, div with src1 broadcast over src0.
//
// dst has src0's shape; each src1->ne[i] divides src0->ne[i] and src1 repeats along that
// dim. The elements of dst, numbered row after row, are split over threads in ranges
// (ggml_cpu_ew_split), so a single long row (a decoded token's activations) is shared too; each
// thread walks its range row segment by row segment. F32 segments with unit stride take a
// vectorized path; anything else (F16/BF16, strided views) goes through float loads/stores.
// Inplace: dst may share src0's data; every element is read before it is written.
#include "ops-util.h"
#include "vec.h"

enum binary_op {
    BIN_ADD,
    BIN_SUB,
    BIN_MUL,
    BIN_DIV
};

// z[i] = x[i] op y[i]; z may equal x (inplace), so z and x are not restrict.
static void binary_vec_f32(enum binary_op op, int64_t n, float * z, const float * x, const float * restrict y) {
    switch (op) {
        case BIN_ADD:
            for (int64_t i = 0; i < n; i++) z[i] = x[i] + y[i];
            break;
        case BIN_SUB:
            for (int64_t i = 0; i < n; i++) z[i] = x[i] - y[i];
            break;
        case BIN_MUL:
            for (int64_t i = 0; i < n; i++) z[i] = x[i] * y[i];
            break;
        case BIN_DIV:
            for (int64_t i = 0; i < n; i++) z[i] = x[i] / y[i];
            break;
    }
}

// z[i] = x[i] op y (y broadcast as a scalar; ne10 == 1 is common for per-row scales).
static void binary_vec_scalar_f32(enum binary_op op, int64_t n, float * z, const float * x, float y) {
    switch (op) {
        case BIN_ADD:
            for (int64_t i = 0; i < n; i++) z[i] = x[i] + y;
            break;
        case BIN_SUB:
            for (int64_t i = 0; i < n; i++) z[i] = x[i] - y;
            break;
        case BIN_MUL:
            for (int64_t i = 0; i < n; i++) z[i] = x[i] * y;
            break;
        case BIN_DIV:
            for (int64_t i = 0; i < n; i++) z[i] = x[i] / y;
            break;
    }
}

static inline float binary_apply(enum binary_op op, float a, float b) {
    switch (op) {
        case BIN_ADD: return a + b;
        case BIN_SUB: return a - b;
        case BIN_MUL: return a * b;
        case BIN_DIV: return a / b;
    }
    return 0.0f;
}

static bool binary_types_ok(const struct ggml_tensor * dst) {
    const struct ggml_tensor * src0 = dst->src[0];
    const struct ggml_tensor * src1 = dst->src[1];
    return ggml_cpu_is_float_type(src0->type) && ggml_cpu_is_float_type(src1->type) && ggml_cpu_is_float_type(dst->type);
}

static void binary_forward(const struct ggml_compute_params * params, struct ggml_tensor * dst, enum binary_op op) {
    const struct ggml_tensor * src0 = dst->src[0];
    const struct ggml_tensor * src1 = dst->src[1];
    if (!binary_types_ok(dst)) {
        if (params->ith == 0) {
            GGML_LOG_ERROR("%s: unsupported types %s, %s -> %s\n", ggml_op_name(dst->op), ggml_type_name(src0->type),
                           ggml_type_name(src1->type), ggml_type_name(dst->type));
        }
        return;
    }

    const int64_t ne10 = src1->ne[0], ne11 = src1->ne[1], ne12 = src1->ne[2], ne13 = src1->ne[3];

    const bool fast = src0->type == GGML_TYPE_F32 && src1->type == GGML_TYPE_F32 && dst->type == GGML_TYPE_F32 &&
        src0->nb[0] == sizeof(float) && src1->nb[0] == sizeof(float) && dst->nb[0] == sizeof(float);

    int64_t e, e1, i0, n, i1, i2, i3;
    ggml_cpu_ew_split(ggml_nelements(dst), params->ith, params->nth, &e, &e1);
    while (ggml_cpu_ew_next(dst, &e, e1, &i0, &n, &i1, &i2, &i3)) {
        const char * x = ggml_cpu_ptr(src0, 0, i1, i2, i3);
        const char * y = ggml_cpu_ptr(src1, 0, i1 % ne11, i2 % ne12, i3 % ne13);
        char * z = ggml_cpu_ptr(dst, 0, i1, i2, i3);

        if (fast) {
            float * zf = (float *) z;
            const float * xf = (const float *) x;
            if (ne10 == 1) {
                binary_vec_scalar_f32(op, n, zf + i0, xf + i0, *(const float *) y);
            } else {
                // pieces of the segment that each stay within one repetition of the src1 row
                for (int64_t i = i0; i < i0 + n;) {
                    const int64_t j = i % ne10;
                    const int64_t len = ne10 - j < i0 + n - i ? ne10 - j : i0 + n - i;
                    binary_vec_f32(op, len, zf + i, xf + i, (const float *) y + j);
                    i += len;
                }
            }
            continue;
        }

        const size_t nb00 = src0->nb[0], nb10 = src1->nb[0], nb0 = dst->nb[0];
        const enum ggml_type t0 = src0->type, t1 = src1->type, td = dst->type;
        int64_t i10 = i0 % ne10;
        for (int64_t i = i0; i < i0 + n; i++) {
            const float a = ggml_cpu_load_f(x + i * nb00, t0);
            const float b = ggml_cpu_load_f(y + i10 * nb10, t1);
            ggml_cpu_store_f(z + i * nb0, td, binary_apply(op, a, b));
            i10 = i10 + 1 == ne10 ? 0 : i10 + 1;
        }
    }
}

void ggml_compute_forward_add(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    binary_forward(params, dst, BIN_ADD);
}

void ggml_compute_forward_sub(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    binary_forward(params, dst, BIN_SUB);
}

void ggml_compute_forward_mul(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    binary_forward(params, dst, BIN_MUL);
}

void ggml_compute_forward_div(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    binary_forward(params, dst, BIN_DIV);
}
