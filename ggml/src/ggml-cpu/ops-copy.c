// ops-copy.c — dup / cont / cpy (type conversion with arbitrary strides), get_rows, set_rows
// and concat.
//
// Copies are driven by the destination: its elements, in logical row-major order, are
// split into chunks of at most GGML_CPU_CHUNK elements; each chunk is gathered from the
// source as floats (the element with the same flat index), then written in dst's type,
// quantizing whole blocks when dst is quantized. Same-type copies move bytes instead, so
// integer and quantized data survive unchanged.
#include "ops-util.h"

// Row converter float -> type t (fast CPU quantizer first, reference one otherwise); NULL if none.
static ggml_from_float_t copy_quantizer(enum ggml_type t) {
    const struct ggml_type_traits_cpu * tc = ggml_get_type_traits_cpu(t);
    if (tc && tc->from_float) return tc->from_float;
    const struct ggml_type_traits * tt = ggml_get_type_traits(t);
    return tt ? tt->from_float_ref : NULL;
}

// Row converter type t -> float; NULL if none.
static ggml_to_float_t copy_dequantizer(enum ggml_type t) {
    const struct ggml_type_traits * tt = ggml_get_type_traits(t);
    return tt ? tt->to_float : NULL;
}

// Where a flat logical index falls in a tensor: a position that advances element by element.
struct copy_cursor {
    int64_t i0, i1, i2, i3;
};

static void copy_cursor_set(struct copy_cursor * c, const struct ggml_tensor * t, int64_t flat) {
    c->i0 = flat % t->ne[0];
    flat /= t->ne[0];
    c->i1 = flat % t->ne[1];
    flat /= t->ne[1];
    c->i2 = flat % t->ne[2];
    flat /= t->ne[2];
    c->i3 = flat;
}

// Moves the cursor to the start of the next row.
static void copy_cursor_next_row(struct copy_cursor * c, const struct ggml_tensor * t) {
    c->i0 = 0;
    if (++c->i1 < t->ne[1]) return;
    c->i1 = 0;
    if (++c->i2 < t->ne[2]) return;
    c->i2 = 0;
    c->i3++;
}

// Reads n elements of src starting at flat index `flat` into out as floats. For a quantized
// src, flat and n must be whole blocks within rows (checked by the caller).
static void copy_gather_f32(const struct ggml_tensor * src, ggml_to_float_t to_float, int64_t flat, int64_t n, float * out) {
    struct copy_cursor c;
    copy_cursor_set(&c, src, flat);
    const size_t ts = ggml_type_size(src->type);
    const int64_t bs = ggml_blck_size(src->type);
    int64_t k = 0;
    while (k < n) {
        const int64_t run = GGML_MIN(n - k, src->ne[0] - c.i0);
        const char * p = ggml_cpu_ptr(src, 0, c.i1, c.i2, c.i3);
        if (to_float) {
            to_float(p + (c.i0 / bs) * ts, out + k, run);
        } else if (src->nb[0] == ts) {
            ggml_cpu_row_to_f32(p + c.i0 * ts, src->type, out + k, run);
        } else {
            for (int64_t j = 0; j < run; j++) out[k + j] = ggml_cpu_load_f(p + (c.i0 + j) * src->nb[0], src->type);
        }
        k += run;
        c.i0 += run;
        if (c.i0 == src->ne[0]) copy_cursor_next_row(&c, src);
    }
}

// Writes n floats into dst's row (i1, i2, i3) starting at element j0 (whole blocks if quantized).
static void copy_store_f32(struct ggml_tensor * dst, ggml_from_float_t quantize, int64_t i1, int64_t i2, int64_t i3, int64_t j0,
                           int64_t n, const float * in) {
    char * p = ggml_cpu_ptr(dst, 0, i1, i2, i3);
    const size_t ts = ggml_type_size(dst->type);
    if (quantize) {
        quantize(in, p + (j0 / ggml_blck_size(dst->type)) * ts, n);
    } else if (dst->nb[0] == ts) {
        ggml_cpu_row_from_f32(in, p + j0 * ts, dst->type, n);
    } else {
        for (int64_t j = 0; j < n; j++) ggml_cpu_store_f(p + (j0 + j) * dst->nb[0], dst->type, in[j]);
    }
}

// Same type, any strides and shapes: element bytes copied in dst order.
static void copy_same_type_elements(const struct ggml_compute_params * params, const struct ggml_tensor * src,
                                    struct ggml_tensor * dst) {
    const size_t ts = ggml_type_size(dst->type);
    const int64_t ne0 = dst->ne[0];
    const bool same_shape = ggml_are_same_shape(src, dst);
    int64_t ir0, ir1;
    ggml_cpu_split(ggml_nrows(dst), params->ith, params->nth, &ir0, &ir1);
    for (int64_t ir = ir0; ir < ir1; ir++) {
        int64_t i1, i2, i3;
        ggml_cpu_row_index(dst, ir, &i1, &i2, &i3);
        char * d = ggml_cpu_ptr(dst, 0, i1, i2, i3);
        if (same_shape) {
            const char * s = ggml_cpu_ptr(src, 0, i1, i2, i3);
            if (src->nb[0] == ts && dst->nb[0] == ts) {
                memcpy(d, s, (size_t) ne0 * ts);
            } else {
                for (int64_t j = 0; j < ne0; j++) memcpy(d + j * dst->nb[0], s + j * src->nb[0], ts);
            }
            continue;
        }
        struct copy_cursor c;
        copy_cursor_set(&c, src, ir * ne0);
        for (int64_t j = 0; j < ne0; j++) {
            memcpy(d + j * dst->nb[0], ggml_cpu_ptr(src, c.i0, c.i1, c.i2, c.i3), ts);
            if (++c.i0 == src->ne[0]) copy_cursor_next_row(&c, src);
        }
    }
}

// dst := src (same element count), converting type; dst may be a strided view.
static void copy_forward(const struct ggml_compute_params * params, const struct ggml_tensor * src, struct ggml_tensor * dst) {
    if (ggml_nelements(src) != ggml_nelements(dst)) {
        if (params->ith == 0) GGML_LOG_ERROR("%s: element counts differ\n", ggml_op_name(dst->op));
        return;
    }
    const bool src_q = ggml_is_quantized(src->type);
    const bool dst_q = ggml_is_quantized(dst->type);

    if (src->type == dst->type) {
        if (ggml_is_contiguous(src) && ggml_is_contiguous(dst)) {
            // One flat memcpy, split in byte ranges.
            int64_t b0, b1;
            ggml_cpu_split((int64_t) ggml_nbytes(dst), params->ith, params->nth, &b0, &b1);
            if (b1 > b0) memcpy((char *) dst->data + b0, (const char *) src->data + b0, (size_t) (b1 - b0));
            return;
        }
        if (!src_q) {
            copy_same_type_elements(params, src, dst);
            return;
        }
        if (ggml_are_same_shape(src, dst)) {
            // Quantized rows are whole runs of blocks: copy row by row.
            const size_t rs = ggml_row_size(dst->type, dst->ne[0]);
            int64_t ir0, ir1;
            ggml_cpu_split(ggml_nrows(dst), params->ith, params->nth, &ir0, &ir1);
            for (int64_t ir = ir0; ir < ir1; ir++) {
                int64_t i1, i2, i3;
                ggml_cpu_row_index(dst, ir, &i1, &i2, &i3);
                memcpy(ggml_cpu_ptr(dst, 0, i1, i2, i3), ggml_cpu_ptr(src, 0, i1, i2, i3), rs);
            }
            return;
        }
    }

    ggml_to_float_t to_float = src_q ? copy_dequantizer(src->type) : NULL;
    ggml_from_float_t quantize = dst_q ? copy_quantizer(dst->type) : NULL;
    const int64_t sbs = ggml_blck_size(src->type);
    const int64_t dbs = ggml_blck_size(dst->type);
    const bool ok_src = src_q ? to_float != NULL && src->ne[0] % sbs == 0 && dst->ne[0] % sbs == 0
                              : ggml_cpu_is_float_type(src->type) || src->type == GGML_TYPE_I32;
    const bool ok_dst =
        dst_q ? quantize != NULL && dst->ne[0] % dbs == 0 : ggml_cpu_is_float_type(dst->type) || dst->type == GGML_TYPE_I32;
    if (!ok_src || !ok_dst) {
        if (params->ith == 0) {
            GGML_LOG_ERROR("%s: cannot convert %s [%lld] -> %s [%lld]\n", ggml_op_name(dst->op), ggml_type_name(src->type),
                           (long long) src->ne[0], ggml_type_name(dst->type), (long long) dst->ne[0]);
        }
        return;
    }

    // Work units: chunks of GGML_CPU_CHUNK elements of dst rows (a multiple of every block
    // size), so a single long row is still split across threads.
    const int64_t ne0 = dst->ne[0];
    const int64_t chunks_per_row = (ne0 + GGML_CPU_CHUNK - 1) / GGML_CPU_CHUNK;
    float tmp[GGML_CPU_CHUNK];
    int64_t u0, u1;
    ggml_cpu_split(ggml_nrows(dst) * chunks_per_row, params->ith, params->nth, &u0, &u1);
    for (int64_t u = u0; u < u1; u++) {
        const int64_t ir = u / chunks_per_row;
        const int64_t j0 = (u - ir * chunks_per_row) * GGML_CPU_CHUNK;
        const int64_t n = GGML_MIN(GGML_CPU_CHUNK, ne0 - j0);
        int64_t i1, i2, i3;
        ggml_cpu_row_index(dst, ir, &i1, &i2, &i3);
        copy_gather_f32(src, to_float, ir * ne0 + j0, n, tmp);
        copy_store_f32(dst, quantize, i1, i2, i3, j0, n, tmp);
    }
}

void ggml_compute_forward_dup(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    copy_forward(params, dst->src[0], dst);
}

void ggml_compute_forward_cpy(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    copy_forward(params, dst->src[0], dst);
}

// dst[:, i10, i11, i12] = float(src0[:, ids[i10, i11, i12], i11, i12]); out-of-range ids give zeros.
void ggml_compute_forward_get_rows(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src0 = dst->src[0];
    const struct ggml_tensor * ids = dst->src[1];
    const bool src_q = ggml_is_quantized(src0->type);
    ggml_to_float_t to_float = src_q ? copy_dequantizer(src0->type) : NULL;
    if (ids->type != GGML_TYPE_I32 || (src_q && !to_float) ||
        (!src_q && !ggml_cpu_is_float_type(src0->type) && src0->type != GGML_TYPE_I32) || !ggml_cpu_is_float_type(dst->type)) {
        if (params->ith == 0) {
            GGML_LOG_ERROR("GET_ROWS: unsupported types %s [%s ids] -> %s\n", ggml_type_name(src0->type),
                           ggml_type_name(ids->type), ggml_type_name(dst->type));
        }
        return;
    }
    const int64_t ne0 = src0->ne[0];
    const bool direct = dst->type == GGML_TYPE_F32 && dst->nb[0] == sizeof(float);
    bool logged = false;

    int64_t ir0, ir1;
    ggml_cpu_split(ggml_nelements(ids), params->ith, params->nth, &ir0, &ir1);
    for (int64_t ir = ir0; ir < ir1; ir++) {
        // ids is [n, B2, B3]: its element (i10, i11, i12) names the row of dst.
        const int64_t i12 = ir / (ids->ne[0] * ids->ne[1]);
        const int64_t i11 = (ir - i12 * ids->ne[0] * ids->ne[1]) / ids->ne[0];
        const int64_t i10 = ir - i12 * ids->ne[0] * ids->ne[1] - i11 * ids->ne[0];
        const int64_t row = *(const int32_t *) ggml_cpu_ptr(ids, i10, i11, i12, 0);
        char * d = ggml_cpu_ptr(dst, 0, i10, i11, i12);
        if (row < 0 || row >= src0->ne[1]) {
            if (!logged) {
                GGML_LOG_ERROR("GET_ROWS: row id %lld out of range [0, %lld)\n", (long long) row, (long long) src0->ne[1]);
                logged = true;
            }
            for (int64_t j = 0; j < ne0; j++) ggml_cpu_store_f(d + j * dst->nb[0], dst->type, 0.0f);
            continue;
        }
        const char * s = ggml_cpu_ptr(src0, 0, row, i11 % src0->ne[2], i12 % src0->ne[3]);
        if (direct && to_float) {
            to_float(s, (float *) d, ne0);
        } else if (direct && src0->nb[0] == ggml_type_size(src0->type) && src0->type != GGML_TYPE_I32) {
            ggml_cpu_row_to_f32(s, src0->type, (float *) d, ne0);
        } else if (to_float) {
            float tmp[GGML_CPU_CHUNK];
            const int64_t bs = ggml_blck_size(src0->type);
            for (int64_t j0 = 0; j0 < ne0; j0 += GGML_CPU_CHUNK) {
                const int64_t n = GGML_MIN(GGML_CPU_CHUNK, ne0 - j0);
                to_float(s + (j0 / bs) * ggml_type_size(src0->type), tmp, n);
                for (int64_t j = 0; j < n; j++) ggml_cpu_store_f(d + (j0 + j) * dst->nb[0], dst->type, tmp[j]);
            }
        } else {
            for (int64_t j = 0; j < ne0; j++) {
                ggml_cpu_store_f(d + j * dst->nb[0], dst->type, ggml_cpu_load_f(s + j * src0->nb[0], src0->type));
            }
        }
    }
}

// dst[:, ids[i01, i02 % ne11, i03 % ne12], i02, i03] = src0[:, i01, i02, i03] in dst's type.
void ggml_compute_forward_set_rows(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src0 = dst->src[0];
    const struct ggml_tensor * ids = dst->src[1];
    const bool dst_q = ggml_is_quantized(dst->type);
    ggml_from_float_t quantize = dst_q ? copy_quantizer(dst->type) : NULL;
    if ((ids->type != GGML_TYPE_I32 && ids->type != GGML_TYPE_I64) || !ggml_cpu_is_float_type(src0->type) ||
        (dst_q ? (!quantize || dst->ne[0] % ggml_blck_size(dst->type) != 0) : !ggml_cpu_is_float_type(dst->type)) ||
        src0->ne[0] != dst->ne[0]) {
        if (params->ith == 0) {
            GGML_LOG_ERROR("SET_ROWS: unsupported %s rows [%lld] -> %s [%lld] (ids %s)\n", ggml_type_name(src0->type),
                           (long long) src0->ne[0], ggml_type_name(dst->type), (long long) dst->ne[0], ggml_type_name(ids->type));
        }
        return;
    }
    const int64_t ne0 = src0->ne[0];
    const bool src_direct = src0->type == GGML_TYPE_F32 && src0->nb[0] == sizeof(float);
    bool logged = false;

    int64_t ir0, ir1;
    ggml_cpu_split(ggml_nrows(src0), params->ith, params->nth, &ir0, &ir1);
    for (int64_t ir = ir0; ir < ir1; ir++) {
        int64_t i01, i02, i03;
        ggml_cpu_row_index(src0, ir, &i01, &i02, &i03);
        const char * pi = ggml_cpu_ptr(ids, i01, i02 % ids->ne[1], i03 % ids->ne[2], 0);
        const int64_t row = ids->type == GGML_TYPE_I32 ? *(const int32_t *) pi : *(const int64_t *) pi;
        if (row < 0 || row >= dst->ne[1]) {
            if (!logged) {
                GGML_LOG_ERROR("SET_ROWS: row id %lld out of range [0, %lld)\n", (long long) row, (long long) dst->ne[1]);
                logged = true;
            }
            continue;
        }
        const char * s = ggml_cpu_ptr(src0, 0, i01, i02, i03);
        char * d = ggml_cpu_ptr(dst, 0, row, i02, i03);
        if (src_direct && quantize) {
            quantize((const float *) s, d, ne0);
        } else if (src_direct && dst->nb[0] == ggml_type_size(dst->type)) {
            ggml_cpu_row_from_f32((const float *) s, d, dst->type, ne0);
        } else {
            float tmp[GGML_CPU_CHUNK];
            for (int64_t j0 = 0; j0 < ne0; j0 += GGML_CPU_CHUNK) {
                const int64_t n = GGML_MIN(GGML_CPU_CHUNK, ne0 - j0);
                for (int64_t j = 0; j < n; j++) tmp[j] = ggml_cpu_load_f(s + (j0 + j) * src0->nb[0], src0->type);
                copy_store_f32(dst, quantize, row, i02, i03, j0, n, tmp);
            }
        }
    }
}

// dst = a and b joined along dim (op_params i32[0]); other dims equal.
void ggml_compute_forward_concat(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * a = dst->src[0];
    const struct ggml_tensor * b = dst->src[1];
    const int dim = ggml_get_op_params_i32(dst, 0);
    const bool same = a->type == dst->type && b->type == dst->type && !ggml_is_quantized(dst->type);
    const bool conv = ggml_cpu_is_float_type(a->type) && ggml_cpu_is_float_type(b->type) && ggml_cpu_is_float_type(dst->type);
    if (dim < 0 || dim >= GGML_MAX_DIMS || (!same && !conv)) {
        if (params->ith == 0) {
            GGML_LOG_ERROR("CONCAT: unsupported dim %d or types %s, %s -> %s\n", dim, ggml_type_name(a->type),
                           ggml_type_name(b->type), ggml_type_name(dst->type));
        }
        return;
    }
    const size_t ts = ggml_type_size(dst->type);
    const int64_t ne0 = dst->ne[0];

    int64_t ir0, ir1;
    ggml_cpu_split(ggml_nrows(dst), params->ith, params->nth, &ir0, &ir1);
    for (int64_t ir = ir0; ir < ir1; ir++) {
        int64_t i[4] = { 0, 0, 0, 0 };
        ggml_cpu_row_index(dst, ir, &i[1], &i[2], &i[3]);
        char * d = ggml_cpu_ptr(dst, 0, i[1], i[2], i[3]);
        for (int64_t j = 0; j < ne0;) {
            // The longest run of this row that comes from one source.
            int64_t k[4] = { j, i[1], i[2], i[3] };
            const struct ggml_tensor * s = a;
            int64_t run = ne0 - j;
            if (k[dim] >= a->ne[dim]) {
                s = b;
                k[dim] -= a->ne[dim];
            } else if (dim == 0) {
                run = a->ne[0] - j;
            }
            const char * p = ggml_cpu_ptr(s, k[0], k[1], k[2], k[3]);
            if (same && s->nb[0] == ts && dst->nb[0] == ts) {
                memcpy(d + j * ts, p, (size_t) run * ts);
            } else if (same) {
                for (int64_t t = 0; t < run; t++) memcpy(d + (j + t) * dst->nb[0], p + t * s->nb[0], ts);
            } else {
                for (int64_t t = 0; t < run; t++) {
                    ggml_cpu_store_f(d + (j + t) * dst->nb[0], dst->type, ggml_cpu_load_f(p + t * s->nb[0], s->type));
                }
            }
            j += run;
        }
    }
}
