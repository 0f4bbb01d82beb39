// ops-attention.c — fused attention: out = softmax(scale * q.k^T (+ softcap) + slope*mask) . v,
// one pass over the KV entries with an online softmax (running max M and sum S; when a new
// score exceeds M, the accumulator and S are rescaled by exp(M_old - M_new)).
//
// q [D, n_q, H, ne3] F32; k [D, n_kv, H_kv, *] and v [Dv, n_kv, H_kv, *] in any type with CPU
// dot traits (F32, F16, ...), rows unit-stride but otherwise any strides (KV-cache views);
// mask [n_kv, >= n_q, *, *] F32/F16 or NULL, dims 2-3 broadcast by modulo; head h reads KV
// head h / (H / H_kv) (dim 3 likewise). Output [Dv, H, n_q, ne3] F32. Items (head, q row) are split over
// threads; each thread has its own scratch slice of wdata.
#include "ops-util.h"

struct fa_plan {
    const struct ggml_type_traits_cpu * ktc; // k's dot kernel, or NULL: k rows go through floats
    enum ggml_type qdt;                      // type q is converted to for the dot kernel
    size_t qf_bytes, qv_bytes, acc_bytes, vt_bytes, kt_bytes;
};

static void fa_plan_make(const struct ggml_tensor * q, const struct ggml_tensor * k, const struct ggml_tensor * v,
                         struct fa_plan * p) {
    memset(p, 0, sizeof(*p));
    const int64_t D = q->ne[0], Dv = v->ne[0];
    const struct ggml_type_traits_cpu * tc = ggml_get_type_traits_cpu(k->type);
    if (tc && tc->vec_dot && k->nb[0] == ggml_type_size(k->type) &&
        D % ggml_blck_size(tc->vec_dot_type) == 0 && D % ggml_blck_size(k->type) == 0) {
        p->ktc = tc;
        p->qdt = tc->vec_dot_type;
    } else {
        p->qdt = GGML_TYPE_F32;
    }
    p->qf_bytes  = GGML_PAD((size_t) D*sizeof(float), 64);
    p->qv_bytes  = GGML_PAD(ggml_row_size(p->qdt, D), 64);
    p->acc_bytes = GGML_PAD((size_t) Dv*sizeof(float), 64);
    p->vt_bytes  = GGML_PAD((size_t) Dv*sizeof(float), 64);
    p->kt_bytes  = p->ktc ? 0 : GGML_PAD((size_t) D*sizeof(float), 64);
}

static size_t fa_thread_bytes(const struct fa_plan * p) {
    return p->qf_bytes + p->qv_bytes + p->acc_bytes + p->vt_bytes + p->kt_bytes;
}

size_t ggml_cpu_work_size_flash_attn_ext(const struct ggml_tensor * dst, int n_threads) {
    struct fa_plan p;
    fa_plan_make(dst->src[0], dst->src[1], dst->src[2], &p);
    return (size_t) n_threads*fa_thread_bytes(&p);
}

// ALiBi slope of head h (see ops-softmax.c for the formula); 1 when max_bias is 0.
static float fa_alibi_slope(float max_bias, int64_t n_head, int64_t h) {
    if (max_bias <= 0.0f) return 1.0f;
    int64_t n_head_log2 = 1;
    while (n_head_log2*2 <= n_head) n_head_log2 *= 2;
    const float m0 = powf(2.0f, -max_bias/(float) n_head_log2);
    const float m1 = powf(2.0f, -max_bias/2.0f/(float) n_head_log2);
    return h < n_head_log2 ? powf(m0, (float) (h + 1)) : powf(m1, (float) (2*(h - n_head_log2) + 1));
}

// n elements of a row of t (unit stride or not, any float/quantized type) as floats.
static void fa_row_to_f32(const struct ggml_tensor * t, const char * row, int64_t n, float * out) {
    const size_t ts = ggml_type_size(t->type);
    if (ggml_is_quantized(t->type)) {
        ggml_get_type_traits(t->type)->to_float(row, out, n);
    } else if (t->nb[0] == ts) {
        ggml_cpu_row_to_f32(row, t->type, out, n);
    } else {
        for (int64_t i = 0; i < n; i++) out[i] = ggml_cpu_load_f(row + i*t->nb[0], t->type);
    }
}

static bool fa_type_ok(const struct ggml_tensor * t) {
    if (ggml_cpu_is_float_type(t->type)) return true;
    const struct ggml_type_traits * tt = ggml_get_type_traits(t->type);
    return tt && tt->is_quantized && tt->to_float && t->nb[0] == tt->type_size && t->ne[0] % tt->blck_size == 0;
}

void ggml_compute_forward_flash_attn_ext(const struct ggml_compute_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * q    = dst->src[0];
    const struct ggml_tensor * k    = dst->src[1];
    const struct ggml_tensor * v    = dst->src[2];
    const struct ggml_tensor * mask = dst->src[3];

    struct fa_plan p;
    fa_plan_make(q, k, v, &p);
    const int64_t D = q->ne[0], n_q = q->ne[1], H = q->ne[2], Dv = v->ne[0], n_kv = k->ne[1];
    const int64_t H_kv = k->ne[2];
    const ggml_from_float_t q_convert = p.qdt == GGML_TYPE_F32 ? NULL :
        (ggml_get_type_traits_cpu(p.qdt)->from_float ? ggml_get_type_traits_cpu(p.qdt)->from_float
                                                     : ggml_get_type_traits(p.qdt)->from_float_ref);
    if (!ggml_cpu_is_float_type(q->type) || !fa_type_ok(k) || !fa_type_ok(v) || dst->type != GGML_TYPE_F32 ||
        k->ne[0] != D || v->ne[1] != n_kv || v->ne[2] != H_kv || H_kv <= 0 || H % H_kv != 0 ||
        k->ne[3] <= 0 || v->ne[3] <= 0 || q->ne[3] % k->ne[3] != 0 || q->ne[3] % v->ne[3] != 0 ||
        (p.qdt != GGML_TYPE_F32 && !q_convert) ||
        (mask && ((mask->type != GGML_TYPE_F32 && mask->type != GGML_TYPE_F16) || mask->ne[0] < n_kv || mask->ne[1] < n_q)) ||
        params->wsize < (size_t) params->nth*fa_thread_bytes(&p)) {
        if (params->ith == 0) {
            GGML_LOG_ERROR("FLASH_ATTN_EXT: unsupported shapes/types (q %s D=%lld, k %s, v %s, H=%lld, H_kv=%lld)\n",
                           ggml_type_name(q->type), (long long) D, ggml_type_name(k->type), ggml_type_name(v->type),
                           (long long) H, (long long) H_kv);
        }
        return;
    }
    const float scale         = ggml_get_op_params_f32(dst, 0);
    const float max_bias      = ggml_get_op_params_f32(dst, 1);
    const float logit_softcap = ggml_get_op_params_f32(dst, 2);
    const int64_t group = H/H_kv;

    char * ws = (char *) params->wdata + (size_t) params->ith*fa_thread_bytes(&p);
    float * qf  = (float *) ws;                         ws += p.qf_bytes;
    void *  qv  = ws;                                   ws += p.qv_bytes;
    float * acc = (float *) ws;                         ws += p.acc_bytes;
    float * vt  = (float *) ws;                         ws += p.vt_bytes;
    float * kt  = p.kt_bytes ? (float *) ws : NULL;

    const bool v_direct = v->type == GGML_TYPE_F32 && v->nb[0] == sizeof(float);
    const bool m_f32    = mask && mask->type == GGML_TYPE_F32 && mask->nb[0] == sizeof(float);

    int64_t r0, r1;
    ggml_cpu_split(H*n_q*q->ne[3], params->ith, params->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        // Item r = (h, iq, i3) with h fastest: the heads of one query row are neighbours.
        const int64_t i3 = r/(H*n_q);
        const int64_t iq = (r - i3*H*n_q)/H;
        const int64_t h  = r - i3*H*n_q - iq*H;
        const int64_t hk = h/group;
        const int64_t k3 = i3/(q->ne[3]/k->ne[3]), v3 = i3/(q->ne[3]/v->ne[3]);
        const float slope = fa_alibi_slope(max_bias, H, h);

        fa_row_to_f32(q, ggml_cpu_ptr(q, 0, iq, h, i3), D, qf);
        const void * qdot = qf;
        if (q_convert) { q_convert(qf, qv, D); qdot = qv; }

        const char * mrow = mask ? ggml_cpu_ptr(mask, 0, iq, h % mask->ne[2], i3 % mask->ne[3]) : NULL;

        float M = -INFINITY, S = 0.0f;
        memset(acc, 0, (size_t) Dv*sizeof(float));
        for (int64_t j = 0; j < n_kv; j++) {
            float mv = 0.0f;
            if (mrow) {
                mv = m_f32 ? ((const float *) mrow)[j] : ggml_cpu_load_f(mrow + j*mask->nb[0], mask->type);
                if (mv == -INFINITY) continue; // masked: skip the dot product entirely
            }
            const char * krow = ggml_cpu_ptr(k, 0, j, hk, k3);
            float s;
            if (p.ktc) {
                p.ktc->vec_dot((int) D, &s, krow, qdot);
            } else {
                fa_row_to_f32(k, krow, D, kt);
                s = ggml_cpu_vec_dot(D, kt, qf);
            }
            s *= scale;
            if (logit_softcap > 0.0f) s = logit_softcap*tanhf(s/logit_softcap);
            s += slope*mv;
            if (s == -INFINITY) continue;

            float vs = 1.0f;
            if (s > M) {
                const float ms = ggml_cpu_expf(M - s); // 0 on the first entry (M = -inf)
                M = s;
                if (S != 0.0f) ggml_cpu_vec_scale(Dv, acc, ms);
                S = S*ms;
            } else {
                vs = ggml_cpu_expf(s - M);
            }
            S += vs;

            const char * vrow = ggml_cpu_ptr(v, 0, j, hk, v3);
            const float * vf = (const float *) vrow;
            if (!v_direct) { fa_row_to_f32(v, vrow, Dv, vt); vf = vt; }
            ggml_cpu_vec_mad(Dv, acc, vf, vs);
        }

        float * out = (float *) ggml_cpu_ptr(dst, 0, h, iq, i3);
        const float inv = S > 0.0f ? 1.0f/S : 0.0f;
        for (int64_t i = 0; i < Dv; i++) out[i] = acc[i]*inv;
    }
}
