// ops-sort.c — row sorts: argsort (the permutation that sorts each row, ascending or descending)
// and top_k (the indices of the k largest, largest first), both into I32 rows.
//
// Both order by value and break ties by the lower index, so the result is one fixed
// permutation whatever the algorithm or the thread count (a stable sort's result; expert
// routing needs ties resolved the same way every time). Neither reference has a tie rule to
// follow: torch.topk's CPU kernel (what transformers routes with) uses std::partial_sort or
// std::nth_element, llama.cpp's top-k std::partial_sort: which of equal values wins follows
// their internals (tests/test_moe_arch.py::test_router_ties). NaN sorts below every number,
// -inf included (argmax's rule: NaN never wins a top-k).
//
// Rows are split over threads. argsort is a bottom-up merge sort of (value, index) pairs in
// the thread's scratch (wdata: 2 * ne0 pairs per thread); top_k keeps a sorted list of the k
// best seen so far in dst's row (routing takes 8 of 128: about one comparison per element).
#include "ops-util.h"

struct sort_pair {
    float v;
    int32_t i;
};

// True if (a, ia) sorts before (b, ib) in descending order (NaN last, ties by lower index).
static inline bool sort_before_desc(float a, int32_t ia, float b, int32_t ib) {
    const bool an = isnan(a), bn = isnan(b);
    if (an || bn) return !an && bn ? true : (an && bn ? ia < ib : false);
    return a > b || (a == b && ia < ib);
}

// True if (a, ia) sorts before (b, ib) in ascending order (NaN first, ties by lower index).
static inline bool sort_before_asc(float a, int32_t ia, float b, int32_t ib) {
    const bool an = isnan(a), bn = isnan(b);
    if (an || bn) return an && !bn ? true : (an && bn ? ia < ib : false);
    return a < b || (a == b && ia < ib);
}

static inline bool sort_before(bool desc, const struct sort_pair * x, const struct sort_pair * y) {
    return desc ? sort_before_desc(x->v, x->i, y->v, y->i) : sort_before_asc(x->v, x->i, y->v, y->i);
}

// Loads row (i1, i2, i3) of src as (value, index) pairs.
static void sort_load_row(const struct ggml_tensor * src, int64_t i1, int64_t i2, int64_t i3, struct sort_pair * p) {
    const char * x = ggml_cpu_ptr(src, 0, i1, i2, i3);
    for (int64_t i = 0; i < src->ne[0]; i++) {
        p[i].v = ggml_cpu_load_f(x + i * src->nb[0], src->type);
        p[i].i = (int32_t) i;
    }
}

// Sorts n pairs of a (tmp: n more pairs of scratch); returns the buffer that holds the result.
static struct sort_pair * sort_merge(bool desc, struct sort_pair * a, struct sort_pair * tmp, int64_t n) {
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            const int64_t mid = GGML_MIN(n, lo + w), hi = GGML_MIN(n, lo + 2 * w);
            int64_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi) tmp[o++] = sort_before(desc, &a[j], &a[i]) ? a[j++] : a[i++];
            while (i < mid) tmp[o++] = a[i++];
            while (j < hi) tmp[o++] = a[j++];
        }
        struct sort_pair * s = a;
        a = tmp;
        tmp = s;
    }
    return a;
}

size_t ggml_cpu_work_size_argsort(const struct ggml_tensor * dst, int n_threads) {
    return (size_t) n_threads * 2 * (size_t) dst->src[0]->ne[0] * sizeof(struct sort_pair);
}

// Logs and fails unless src is a float type and dst I32 with unit stride.
static bool sort_types_ok(const struct ggml_compute_params * params, const struct ggml_tensor * dst) {
    const struct ggml_tensor * src0 = dst->src[0];
    if (ggml_cpu_is_float_type(src0->type) && dst->type == GGML_TYPE_I32 && dst->nb[0] == sizeof(int32_t)) {
        return true;
    }
    if (params->ith == 0) {
        GGML_LOG_ERROR("%s: unsupported types %s -> %s (or a strided result)\n", ggml_op_name(dst->op),
                       ggml_type_name(src0->type), ggml_type_name(dst->type));
    }
    ggml_cpu_kernel_failed(params);
    return false;
}

void ggml_compute_forward_argsort(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src0 = dst->src[0];
    if (!sort_types_ok(params, dst)) return;
    const int64_t ne0 = src0->ne[0];
    if (params->wsize < ggml_cpu_work_size_argsort(dst, params->nth)) {
        if (params->ith == 0) GGML_LOG_ERROR("ARGSORT: scratch too small\n");
        ggml_cpu_kernel_failed(params);
        return;
    }
    const bool desc = ggml_get_op_params_i32(dst, 0) == GGML_SORT_ORDER_DESC;
    struct sort_pair * buf = (struct sort_pair *) params->wdata + (size_t) params->ith * 2 * (size_t) ne0;
    int64_t ir0, ir1;
    ggml_cpu_split(ggml_nrows(src0), params->ith, params->nth, &ir0, &ir1);
    for (int64_t ir = ir0; ir < ir1; ir++) {
        int64_t i1, i2, i3;
        ggml_cpu_row_index(src0, ir, &i1, &i2, &i3);
        sort_load_row(src0, i1, i2, i3, buf);
        const struct sort_pair * s = sort_merge(desc, buf, buf + ne0, ne0);
        int32_t * out = (int32_t *) ggml_cpu_ptr(dst, 0, i1, i2, i3);
        for (int64_t i = 0; i < ne0; i++) out[i] = s[i].i;
    }
}

void ggml_compute_forward_top_k(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src0 = dst->src[0];
    if (!sort_types_ok(params, dst)) return;
    const int64_t ne0 = src0->ne[0], k = dst->ne[0];
    int64_t ir0, ir1;
    ggml_cpu_split(ggml_nrows(src0), params->ith, params->nth, &ir0, &ir1);
    for (int64_t ir = ir0; ir < ir1; ir++) {
        int64_t i1, i2, i3;
        ggml_cpu_row_index(src0, ir, &i1, &i2, &i3);
        const char * x = ggml_cpu_ptr(src0, 0, i1, i2, i3);
        int32_t * out = (int32_t *) ggml_cpu_ptr(dst, 0, i1, i2, i3);
        float best[GGML_CPU_CHUNK]; // values of out[] while k fits; else re-read from the row
        const bool cached = k <= GGML_CPU_CHUNK;
        int64_t n = 0; // entries of out[] filled, in sorted order
        for (int64_t i = 0; i < ne0; i++) {
            const float v = ggml_cpu_load_f(x + i * src0->nb[0], src0->type);
            // indices arrive in increasing order, so an equal value never displaces one in the list
            int64_t pos = n;
            while (pos > 0) {
                const float w = cached ? best[pos - 1] : ggml_cpu_load_f(x + out[pos - 1] * src0->nb[0], src0->type);
                if (!sort_before_desc(v, (int32_t) i, w, out[pos - 1])) break;
                pos--;
            }
            if (pos >= k) continue;
            const int64_t last = GGML_MIN(n, k - 1);
            for (int64_t j = last; j > pos; j--) {
                out[j] = out[j - 1];
                if (cached) best[j] = best[j - 1];
            }
            out[pos] = (int32_t) i;
            if (cached) best[pos] = v;
            if (n < k) n++;
        }
    }
}
