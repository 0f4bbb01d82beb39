// ops-lora.c — LORA_ADD: the low-rank update of a product, y + s_j B (A x_j) per column j (ggml.h),
// as one node instead of two products, a scale and an add.
//
// Why a kernel of its own: B is [M, r] with r ~ 8-64, so as a MUL_MAT every output is a dot of
// length r (a horizontal sum per element), and the four nodes meet three times at barriers per
// adapted matrix. Here phase 1 computes c_j = s_j A x_j ([r] per column) with the float dot
// tiles of matmul-float.h (each A row read once, x as F32), the threads split A's rows; after one
// barrier phase 2 walks B transposed in panels of 64 outputs (r x 64 contiguous, so B is one
// sequential stream, not r strided ones) as an axpy per panel: out = y, then out += c_j[k] *
// panel[k] for k in order (vec.h's lora_axpy), the add fused; a panel stays in L1 across columns. Each element's result
// is the same chain whatever the thread count; a column with s_j = 0 is copied from y untouched.
#include "matmul-float.h"
#include "ops-util.h"
#include "vec.h"

// A rows per phase-1 item (one tile's rows).
#define LORA_ROWS GGML_MM_FLOAT_MR

size_t ggml_cpu_work_size_lora_add(const struct ggml_tensor * dst, int n_threads) {
    (void) n_threads;
    return (size_t) dst->src[2]->ne[1] * (size_t) dst->ne[1] * sizeof(float) + 64;
}

// s_j of column j (scale times rs[j], or scale).
static inline float lora_col_scale(const struct ggml_tensor * dst, int64_t j) {
    const struct ggml_tensor * rs = dst->src[4];
    const float scale = ggml_get_op_params_f32(dst, 0);
    return rs ? scale * *(const float *) ggml_cpu_ptr(rs, 0, j, 0, 0) : scale;
}

// dot(row of a (F32 or F16), x) over K in 256-element pieces, portable.
static float lora_dot_portable(const char * arow, enum ggml_type t, const float * x, int64_t K) {
    double s = 0.0;
    float buf[GGML_CPU_CHUNK];
    for (int64_t i = 0; i < K; i += GGML_CPU_CHUNK) {
        const int64_t n = GGML_MIN(GGML_CPU_CHUNK, K - i);
        ggml_cpu_row_to_f32(arow + i * ggml_type_size(t), t, buf, n);
        s += ggml_cpu_vec_dot(n, buf, x + i);
    }
    return (float) s;
}

void ggml_compute_forward_lora_add(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * y = dst->src[0];
    const struct ggml_tensor * x = dst->src[1];
    const struct ggml_tensor * a = dst->src[2];
    const struct ggml_tensor * bt = dst->src[3];
    const int64_t K = x->ne[0], N = x->ne[1], M = dst->ne[0], r = a->ne[1];
    float * c = (float *) params->wdata; // [N][r]: c_j = s_j A x_j
    const int ith = params->ith, nth = params->nth;

    // phase 1: items are (LORA_ROWS rows of A) x (up to NR active columns)
    const ggml_mm_float_tile_t tile = K % 8 == 0 ? ggml_mm_float_tile_get(a->type) : NULL;
    const int64_t row_items = (r + LORA_ROWS - 1) / LORA_ROWS, col_items = (N + GGML_MM_FLOAT_NR - 1) / GGML_MM_FLOAT_NR;
    int64_t t, t_end;
    ggml_cpu_split(row_items * col_items, ith, nth, &t, &t_end);
    for (; t < t_end; t++) {
        const int64_t r0 = (t % row_items) * LORA_ROWS, j0 = (t / row_items) * GGML_MM_FLOAT_NR;
        const int nr = (int) GGML_MIN(LORA_ROWS, r - r0);
        const float * xp[GGML_MM_FLOAT_NR];
        float * op[GGML_MM_FLOAT_NR];
        int64_t cols[GGML_MM_FLOAT_NR];
        int nc = 0;
        for (int64_t j = j0; j < GGML_MIN(N, j0 + GGML_MM_FLOAT_NR); j++) {
            if (lora_col_scale(dst, j) != 0.0f) { // columns of other sequences: nothing to compute
                cols[nc] = j;
                xp[nc] = (const float *) ggml_cpu_ptr(x, 0, j, 0, 0);
                op[nc++] = c + j * r + r0;
            }
        }
        if (nc == 0) continue;
        const char * arows = (const char *) a->data + r0 * a->nb[1];
        if (tile) {
            tile(K, arows, a->nb[1], nr, xp, nc, op);
        } else {
            for (int q = 0; q < nc; q++) {
                for (int i = 0; i < nr; i++) op[q][i] = lora_dot_portable(arows + i * a->nb[1], a->type, xp[q], K);
            }
        }
        for (int q = 0; q < nc; q++) {
            const float s = lora_col_scale(dst, cols[q]);
            for (int i = 0; i < nr; i++) op[q][i] *= s;
        }
    }
    ggml_cpu_barrier(params); // every c_j is ready

    // phase 2: this thread's panels of 64 outputs (each r x 64 contiguous: one sequential stream),
    // every column per panel
    const struct ggml_cpu_vec_kernels * vk = ggml_cpu_vec_kernels_selected();
    int64_t p0, p1;
    ggml_cpu_split(bt->ne[2], ith, nth, &p0, &p1);
    for (int64_t p = p0; p < p1; p++) {
        const int64_t m0 = p * GGML_LORA_PANEL, n = GGML_MIN(GGML_LORA_PANEL, M - m0);
        const char * panel = (const char *) bt->data + p * bt->nb[2];
        for (int64_t j = 0; j < N; j++) {
            const float * yj = (const float *) ggml_cpu_ptr(y, m0, j, 0, 0);
            float * oj = (float *) ggml_cpu_ptr(dst, m0, j, 0, 0);
            if (lora_col_scale(dst, j) == 0.0f) {
                if (oj != yj) memmove(oj, yj, (size_t) n * sizeof(float));
            } else if (bt->type == GGML_TYPE_F16) {
                vk->lora_axpy_f16(n, oj, yj, (int) r, c + j * r, (const ggml_fp16_t *) panel, GGML_LORA_PANEL);
            } else {
                vk->lora_axpy_f32(n, oj, yj, (int) r, c + j * r, (const float *) panel, GGML_LORA_PANEL);
            }
        }
    }
}
