// quantize.c — llama_model_quantize: rewrites a GGUF model with its weights in another type.
//
// The input is memory-mapped; tensors are converted one at a time (rows split across
// threads) and streamed to the output, so the memory needed beyond the mapping is about one
// output tensor. Per-tensor types follow the mixes users know from llama.cpp's ftypes:
// 1-D tensors and convolution taps (ssm_conv1d) stay as they are, output.weight goes to Q6_K for quantized ftypes, and the
// _M / _L mixes keep part of attn_v / ffn_down (and attn_output) at a higher type.
#include "llama-impl.h"
#include "gguf.h"
#include "ggml-cpu.h"

#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Base tensor type of a file type; GGML_TYPE_COUNT if the ftype is not supported.
static enum ggml_type quantize_base_type(enum llama_ftype ftype) {
    switch (ftype) {
        case LLAMA_FTYPE_ALL_F32: return GGML_TYPE_F32;
        case LLAMA_FTYPE_MOSTLY_F16: return GGML_TYPE_F16;
        case LLAMA_FTYPE_MOSTLY_BF16: return GGML_TYPE_BF16;
        case LLAMA_FTYPE_MOSTLY_Q4_0: return GGML_TYPE_Q4_0;
        case LLAMA_FTYPE_MOSTLY_Q4_1: return GGML_TYPE_Q4_1;
        case LLAMA_FTYPE_MOSTLY_Q5_0: return GGML_TYPE_Q5_0;
        case LLAMA_FTYPE_MOSTLY_Q5_1: return GGML_TYPE_Q5_1;
        case LLAMA_FTYPE_MOSTLY_Q8_0: return GGML_TYPE_Q8_0;
        case LLAMA_FTYPE_MOSTLY_Q2_K:
        case LLAMA_FTYPE_MOSTLY_Q2_K_S: return GGML_TYPE_Q2_K;
        case LLAMA_FTYPE_MOSTLY_Q3_K_S:
        case LLAMA_FTYPE_MOSTLY_Q3_K_M:
        case LLAMA_FTYPE_MOSTLY_Q3_K_L: return GGML_TYPE_Q3_K;
        case LLAMA_FTYPE_MOSTLY_Q4_K_S:
        case LLAMA_FTYPE_MOSTLY_Q4_K_M: return GGML_TYPE_Q4_K;
        case LLAMA_FTYPE_MOSTLY_Q5_K_S:
        case LLAMA_FTYPE_MOSTLY_Q5_K_M: return GGML_TYPE_Q5_K;
        case LLAMA_FTYPE_MOSTLY_Q6_K: return GGML_TYPE_Q6_K;
        case LLAMA_FTYPE_MOSTLY_IQ4_NL: return GGML_TYPE_IQ4_NL;
        case LLAMA_FTYPE_MOSTLY_IQ4_XS: return GGML_TYPE_IQ4_XS;
        case LLAMA_FTYPE_MOSTLY_TQ1_0: return GGML_TYPE_TQ1_0;
        case LLAMA_FTYPE_MOSTLY_TQ2_0: return GGML_TYPE_TQ2_0;
        case LLAMA_FTYPE_MOSTLY_MXFP4_MOE: return GGML_TYPE_MXFP4;
        case LLAMA_FTYPE_MOSTLY_IQ2_XXS: return GGML_TYPE_IQ2_XXS;
        case LLAMA_FTYPE_MOSTLY_IQ2_XS:
        case LLAMA_FTYPE_MOSTLY_IQ2_S: return GGML_TYPE_IQ2_XS;
        case LLAMA_FTYPE_MOSTLY_IQ2_M: return GGML_TYPE_IQ2_S;
        case LLAMA_FTYPE_MOSTLY_IQ3_XXS: return GGML_TYPE_IQ3_XXS;
        case LLAMA_FTYPE_MOSTLY_IQ3_XS:
        case LLAMA_FTYPE_MOSTLY_IQ3_S:
        case LLAMA_FTYPE_MOSTLY_IQ3_M: return GGML_TYPE_IQ3_S;
        case LLAMA_FTYPE_MOSTLY_IQ1_S: return GGML_TYPE_IQ1_S;
        case LLAMA_FTYPE_MOSTLY_IQ1_M: return GGML_TYPE_IQ1_M;
        default: return GGML_TYPE_COUNT;
    }
}

// The mixes whose layer weights go to IQ3_XXS / IQ2_* / IQ1_*: those grids are too coarse to
// quantize well without an importance matrix, so they require one (as llama.cpp does).
static bool quantize_needs_imatrix(enum llama_ftype ftype) {
    switch (ftype) {
        case LLAMA_FTYPE_MOSTLY_IQ2_XXS:
        case LLAMA_FTYPE_MOSTLY_IQ2_XS:
        case LLAMA_FTYPE_MOSTLY_IQ2_S:
        case LLAMA_FTYPE_MOSTLY_IQ2_M:
        case LLAMA_FTYPE_MOSTLY_IQ3_XXS:
        case LLAMA_FTYPE_MOSTLY_IQ1_S:
        case LLAMA_FTYPE_MOSTLY_IQ1_M: return true;
        default: return false;
    }
}

// The IQ2 and IQ1 mixes (they share llama.cpp's rules for the sensitive tensors).
static bool quantize_is_iq2(enum llama_ftype f) {
    return f == LLAMA_FTYPE_MOSTLY_IQ2_XXS || f == LLAMA_FTYPE_MOSTLY_IQ2_XS || f == LLAMA_FTYPE_MOSTLY_IQ2_S ||
        f == LLAMA_FTYPE_MOSTLY_IQ2_M || f == LLAMA_FTYPE_MOSTLY_IQ1_S || f == LLAMA_FTYPE_MOSTLY_IQ1_M;
}

static bool name_has(const char * name, const char * part) { return strstr(name, part) != NULL; }

// Layer index of "blk.N...." names, -1 otherwise.
static int quantize_layer_of(const char * name) {
    if (strncmp(name, "blk.", 4) != 0) return -1;
    return atoi(name + 4);
}

// The published "use more bits" layer pattern: the first and last eighth, and every third
// layer in between.
static bool use_more_bits(int i_layer, int n_layer) {
    return i_layer < n_layer / 8 || i_layer >= 7 * n_layer / 8 || (i_layer - n_layer / 8) % 3 == 2;
}

// The u32 value of "<arch>.<key>", or def where it is absent or not a u32.
static uint32_t quantize_arch_u32(const struct gguf_context * g, const char * arch, const char * key, uint32_t def) {
    char full[160];
    snprintf(full, sizeof(full), "%s.%s", arch, key);
    const int64_t k = gguf_find_key(g, full);
    return k >= 0 && gguf_get_kv_type(g, k) == GGUF_TYPE_UINT32 ? gguf_get_val_u32(g, k) : def;
}

// The tensor type overrides (params->tt_overrides, ended by a NULL pattern) compiled as POSIX
// extended regular expressions, searched in tensor names; false (logged) for a bad pattern.
#define QUANTIZE_MAX_OVERRIDES 64
struct quantize_overrides {
    regex_t re[QUANTIZE_MAX_OVERRIDES];
    enum ggml_type type[QUANTIZE_MAX_OVERRIDES];
    int n;
};

static bool quantize_overrides_init(struct quantize_overrides * o, const struct llama_model_tensor_override * p) {
    o->n = 0;
    for (; p && p->pattern; p++) {
        if (o->n == QUANTIZE_MAX_OVERRIDES) {
            LLAMA_LOG_ERROR("llama_model_quantize: more than %d tensor type overrides\n", QUANTIZE_MAX_OVERRIDES);
            return false;
        }
        if (ggml_get_type_traits(p->type) == NULL || regcomp(&o->re[o->n], p->pattern, REG_EXTENDED | REG_NOSUB) != 0) {
            LLAMA_LOG_ERROR("llama_model_quantize: bad tensor type override '%s' (type %d)\n", p->pattern, (int) p->type);
            return false;
        }
        o->type[o->n++] = p->type;
    }
    return true;
}

static void quantize_overrides_free(struct quantize_overrides * o) {
    for (int i = 0; i < o->n; i++) regfree(&o->re[i]);
    o->n = 0;
}

struct quantize_plan {
    enum llama_ftype ftype;
    enum ggml_type base;
    int n_layer;
    int n_gqa;         // attention heads per KV head (1 if unknown)
    bool has_imatrix;
    bool has_output;   // output.weight exists (else token_embd doubles as the output)
    const llama_model_quantize_params * params;
    const struct quantize_overrides * ov;
};

static enum ggml_type quantize_choose_type(const struct quantize_plan * p, const char * name, int n_dims, enum ggml_type cur,
                                           int64_t ne0, int64_t ne2) {
    const llama_model_quantize_params * params = p->params;
    if (params->only_copy || n_dims < 2) return cur;
    if (name_has(name, "ssm_conv1d.weight")) return cur; // convolution taps, read by an elementwise op: as stored
    if (strcmp(name, "token_embd.weight") != 0 && !name_has(name, ".weight")) return cur;
    // expert routers stay as they are (llama.cpp's rule): a rounded logit may pick another expert
    if (name_has(name, "ffn_gate_inp.weight")) return cur;
    enum ggml_type t = p->base;
    const bool is_output = strcmp(name, "output.weight") == 0 || (!p->has_output && strcmp(name, "token_embd.weight") == 0);
    const bool quantized_ftype = ggml_is_quantized(p->base);
    if (p->ftype == LLAMA_FTYPE_MOSTLY_MXFP4_MOE && !params->pure &&
        !(is_output && params->output_tensor_type < GGML_TYPE_COUNT) &&
        !(!is_output && strcmp(name, "token_embd.weight") == 0 && params->token_embedding_type < GGML_TYPE_COUNT)) {
        // experts (stacked in dim 2) to MXFP4, everything else to Q8_0
        if (is_output && !params->quantize_output_tensor) return cur;
        t = ne2 > 1 && !is_output ? GGML_TYPE_MXFP4 : GGML_TYPE_Q8_0;
    } else if (is_output) {
        if (params->output_tensor_type < GGML_TYPE_COUNT) return params->output_tensor_type;
        if (!params->quantize_output_tensor) return cur;
        // rows the mix's block size does not divide keep 8 bits (llama.cpp's rule); the 2-bit
        // mixes (and IQ3_XXS) take Q5_K, the others Q6_K
        if (!params->pure && quantized_ftype && ne0 % ggml_blck_size(p->base) != 0) return GGML_TYPE_Q8_0;
        if (!params->pure && quantized_ftype && t != GGML_TYPE_Q8_0)
            t = quantize_is_iq2(p->ftype) || p->ftype == LLAMA_FTYPE_MOSTLY_IQ3_XXS ? GGML_TYPE_Q5_K : GGML_TYPE_Q6_K;
    } else if (strcmp(name, "token_embd.weight") == 0) {
        if (params->token_embedding_type < GGML_TYPE_COUNT) return params->token_embedding_type;
        if (!params->pure && (p->ftype == LLAMA_FTYPE_MOSTLY_TQ1_0 || p->ftype == LLAMA_FTYPE_MOSTLY_TQ2_0)) {
            t = GGML_TYPE_Q4_K;
        } else if (!params->pure &&
                   (p->ftype == LLAMA_FTYPE_MOSTLY_IQ2_XXS || p->ftype == LLAMA_FTYPE_MOSTLY_IQ2_XS ||
                    p->ftype == LLAMA_FTYPE_MOSTLY_IQ1_S || p->ftype == LLAMA_FTYPE_MOSTLY_IQ1_M)) {
            t = GGML_TYPE_Q2_K;
        } else if (!params->pure &&
                   (p->ftype == LLAMA_FTYPE_MOSTLY_IQ2_S || p->ftype == LLAMA_FTYPE_MOSTLY_IQ2_M ||
                    p->ftype == LLAMA_FTYPE_MOSTLY_IQ3_XXS)) {
            t = GGML_TYPE_IQ3_S;
        }
    } else if (!params->pure && quantized_ftype) {
        const int il = quantize_layer_of(name);
        const int nl = p->n_layer > 0 ? p->n_layer : 1;
        const bool attn_v = name_has(name, "attn_v.weight");
        const bool ffn_down = name_has(name, "ffn_down");
        const bool attn_out = name_has(name, "attn_output.weight");
        const bool attn_qk = name_has(name, "attn_q.weight") || name_has(name, "attn_k.weight");
        const bool gate_up = name_has(name, "ffn_gate.weight") || name_has(name, "ffn_up.weight");
        const bool iq2_big = p->ftype == LLAMA_FTYPE_MOSTLY_IQ2_S || p->ftype == LLAMA_FTYPE_MOSTLY_IQ2_M;
        switch (p->ftype) {
            case LLAMA_FTYPE_MOSTLY_IQ2_XXS:
            case LLAMA_FTYPE_MOSTLY_IQ2_XS:
            case LLAMA_FTYPE_MOSTLY_IQ2_S:
            case LLAMA_FTYPE_MOSTLY_IQ2_M:
            case LLAMA_FTYPE_MOSTLY_IQ1_S:
            case LLAMA_FTYPE_MOSTLY_IQ1_M:
                if (attn_v)
                    t = p->n_gqa >= 4 ? GGML_TYPE_Q4_K : (iq2_big ? GGML_TYPE_IQ3_S : GGML_TYPE_Q2_K);
                else if (ffn_down && il >= 0 && il < nl / 8)
                    t = iq2_big ? GGML_TYPE_IQ3_S : GGML_TYPE_Q2_K;
                else if (attn_out && iq2_big)
                    t = GGML_TYPE_IQ3_S;
                else if (attn_out && (p->ftype == LLAMA_FTYPE_MOSTLY_IQ1_S || p->ftype == LLAMA_FTYPE_MOSTLY_IQ1_M)) {
                    t = GGML_TYPE_IQ2_XXS;
                }
                break;
            case LLAMA_FTYPE_MOSTLY_IQ3_XXS:
                if (attn_v)
                    t = p->n_gqa >= 4 ? GGML_TYPE_Q4_K : GGML_TYPE_IQ3_XXS;
                else if (attn_qk)
                    t = GGML_TYPE_IQ2_S;
                else if (attn_out)
                    t = GGML_TYPE_IQ3_S;
                break;
            case LLAMA_FTYPE_MOSTLY_IQ3_XS:
                if (attn_v && p->n_gqa >= 4)
                    t = GGML_TYPE_Q4_K;
                else if (attn_qk)
                    t = GGML_TYPE_IQ3_XXS;
                else if (gate_up && il >= nl / 8 && il < 7 * nl / 8)
                    t = GGML_TYPE_IQ3_XXS;
                break;
            case LLAMA_FTYPE_MOSTLY_IQ3_S:
                if (attn_v && p->n_gqa >= 4) t = GGML_TYPE_Q4_K;
                break;
            case LLAMA_FTYPE_MOSTLY_IQ3_M:
                if (attn_v || attn_out || name_has(name, "attn_qkv.weight"))
                    t = GGML_TYPE_Q4_K;
                else if (ffn_down && il >= 0 && il < nl / 8)
                    t = GGML_TYPE_Q4_K;
                break;
            case LLAMA_FTYPE_MOSTLY_Q2_K:
            case LLAMA_FTYPE_MOSTLY_Q2_K_S:
                if (attn_v)
                    t = GGML_TYPE_Q4_K;
                else if (ffn_down)
                    t = GGML_TYPE_Q3_K;
                break;
            case LLAMA_FTYPE_MOSTLY_Q3_K_S:
                if (ffn_down && il >= 0 && il < nl / 8) t = GGML_TYPE_Q4_K;
                break;
            case LLAMA_FTYPE_MOSTLY_Q3_K_M:
                if (attn_v)
                    t = il >= 0 && il < 2 ? GGML_TYPE_Q5_K : GGML_TYPE_Q4_K;
                else if (ffn_down)
                    t = il >= 0 && il < nl / 16 ? GGML_TYPE_Q5_K
                                                : (il >= 0 && use_more_bits(il, nl) ? GGML_TYPE_Q4_K : GGML_TYPE_Q3_K);
                else if (attn_out)
                    t = GGML_TYPE_Q4_K;
                break;
            case LLAMA_FTYPE_MOSTLY_Q3_K_L:
                if (attn_v || ffn_down || attn_out) t = GGML_TYPE_Q5_K;
                break;
            case LLAMA_FTYPE_MOSTLY_Q4_K_S:
                if ((attn_v && il >= 0 && il < 4) || (ffn_down && il >= 0 && il < nl / 8)) t = GGML_TYPE_Q5_K;
                break;
            case LLAMA_FTYPE_MOSTLY_Q4_K_M:
            case LLAMA_FTYPE_MOSTLY_Q5_K_M:
                if ((attn_v || ffn_down) && il >= 0 && use_more_bits(il, nl)) t = GGML_TYPE_Q6_K;
                break;
            case LLAMA_FTYPE_MOSTLY_IQ4_NL:
            case LLAMA_FTYPE_MOSTLY_IQ4_XS:
                // grouped-query attention makes attn_v small and shared: spend bits there
                if (attn_v && p->n_gqa >= 4)
                    t = GGML_TYPE_Q5_K;
                else if (ffn_down && il >= 0 && il < nl / 8 && !p->has_imatrix)
                    t = GGML_TYPE_Q5_K;
                break;
            default: break;
        }
    }
    // user overrides (the first matching pattern) replace the mix's choice for quantized ftypes
    if (quantized_ftype) {
        for (int i = 0; i < p->ov->n; i++) {
            if (regexec(&p->ov->re[i], name, 0, NULL, 0) == 0) {
                t = p->ov->type[i];
                break;
            }
        }
    }
    // Rows that do not fill whole blocks cannot use the chosen type: fall back.
    const int64_t bs = ggml_blck_size(t);
    if (ne0 % bs != 0) {
        if (ggml_is_quantized(t)) {
            t = ne0 % 32 == 0
                ? (t == GGML_TYPE_Q2_K || t == GGML_TYPE_Q3_K || t == GGML_TYPE_TQ1_0 || t == GGML_TYPE_TQ2_0 ? GGML_TYPE_Q4_0
                       : t == GGML_TYPE_Q4_K                                                                  ? GGML_TYPE_Q5_0
                       : t == GGML_TYPE_Q5_K                                                                  ? GGML_TYPE_Q5_1
                       : t == GGML_TYPE_IQ4_XS || t == GGML_TYPE_IQ3_S || t == GGML_TYPE_IQ3_XXS || t == GGML_TYPE_IQ2_S ||
                           t == GGML_TYPE_IQ2_XS || t == GGML_TYPE_IQ2_XXS || t == GGML_TYPE_IQ1_S || t == GGML_TYPE_IQ1_M
                       ? GGML_TYPE_IQ4_NL
                       : GGML_TYPE_Q8_0)
                : GGML_TYPE_F16;
        }
    }
    return t;
}

// Conversion work of one tensor, split by rows across threads.
struct quantize_job {
    const void * src;          // input tensor data
    enum ggml_type src_type;
    void * dst;                // output buffer
    enum ggml_type dst_type;
    const float * imatrix;     // column weights per matrix (ne0 each), or NULL
    int64_t ne0, nrows;
    int64_t rows_per_mat;      // rows sharing one ne0-slice of imatrix (a 3-D tensor's matrices)
    int ith, nth;
    bool ok;
};

static void * quantize_worker(void * arg) {
    struct quantize_job * j = arg;
    const struct ggml_type_traits * ts = ggml_get_type_traits(j->src_type);
    const size_t src_row = ggml_row_size(j->src_type, j->ne0);
    const size_t dst_row = ggml_row_size(j->dst_type, j->ne0);
    float * row = GGML_MALLOC((size_t) j->ne0 * sizeof(float));
    if (!row) {
        j->ok = false;
        return NULL;
    }
    const int64_t per = (j->nrows + j->nth - 1) / j->nth;
    const int64_t r0 = per * j->ith, r1 = r0 + per < j->nrows ? r0 + per : j->nrows;
    for (int64_t r = r0; r < r1; r++) {
        ts->to_float((const char *) j->src + r * src_row, row, j->ne0);
        const float * im = j->imatrix ? j->imatrix + (r / j->rows_per_mat) * j->ne0 : NULL;
        if (ggml_quantize_chunk(j->dst_type, row, (char *) j->dst + r * dst_row, 0, 1, j->ne0, im) == 0) {
            free(row);
            j->ok = false; // logged by ggml_quantize_chunk
            return NULL;
        }
    }
    free(row);
    j->ok = true;
    return NULL;
}

static bool quantize_tensor(const void * src, enum ggml_type st, void * dst, enum ggml_type dt, const float * imatrix,
                            int64_t ne0, int64_t nrows, int64_t rows_per_mat, int nthread) {
    if (nthread > 64) nthread = 64;
    if (nrows < nthread) nthread = nrows > 0 ? (int) nrows : 1;
    struct quantize_job jobs[64];
    pthread_t th[64];
    bool started[64] = { false };
    for (int i = 0; i < nthread; i++) {
        jobs[i] = (struct quantize_job) { src, st, dst, dt, imatrix, ne0, nrows, rows_per_mat, i, nthread, false };
        if (i > 0) started[i] = pthread_create(&th[i], NULL, quantize_worker, &jobs[i]) == 0;
    }
    quantize_worker(&jobs[0]);
    bool ok = jobs[0].ok;
    for (int i = 1; i < nthread; i++) {
        if (started[i])
            pthread_join(th[i], NULL);
        else
            quantize_worker(&jobs[i]); // thread creation failed: do its share here
        ok = ok && jobs[i].ok;
    }
    return ok;
}

// The importance-matrix entry of tensor name (NULL in *out when there is none); false (logged)
// when its size is neither ne0 nor ne0 per matrix of the tensor.
static bool quantize_imatrix_for(const llama_model_quantize_params * params, const char * name, int64_t ne0, int64_t n_mat,
                                 const float ** out) {
    *out = NULL;
    for (const struct llama_model_imatrix_data * e = params->imatrix; e && e->name; e++) {
        if (strcmp(e->name, name) != 0) continue;
        if (e->data == NULL || (e->size != (size_t) ne0 && e->size != (size_t) (ne0 * n_mat))) {
            LLAMA_LOG_ERROR("llama_model_quantize: imatrix entry %s has %zu values, the tensor needs %lld\n", name, e->size,
                            (long long) (ne0 * n_mat));
            return false;
        }
        if (e->size == (size_t) ne0 && n_mat > 1) {
            LLAMA_LOG_ERROR("llama_model_quantize: imatrix entry %s has one matrix's values for %lld matrices\n", name,
                            (long long) n_mat);
            return false;
        }
        *out = e->data;
        return true;
    }
    return true;
}

static bool write_zeros(FILE * f, size_t n) {
    static const char zeros[64] = { 0 };
    while (n > 0) {
        const size_t k = n < sizeof(zeros) ? n : sizeof(zeros);
        if (fwrite(zeros, 1, k, f) != k) return false;
        n -= k;
    }
    return true;
}

// Quantize phase 1: the parameters checked (a supported file type; an importance matrix where the
// type needs one). False (logged) otherwise.
static bool quantize_params_check(const llama_model_quantize_params * params, enum ggml_type base) {
    if (quantize_needs_imatrix(params->ftype) && params->imatrix == NULL && !params->only_copy) {
        LLAMA_LOG_ERROR("llama_model_quantize: file type %s needs an importance matrix (imatrix: "
                        "python -m llama_py imatrix, then quantize --imatrix FILE)\n",
                        llama_ftype_name(params->ftype));
        return false;
    }
    if (base == GGML_TYPE_COUNT && !params->only_copy) {
        LLAMA_LOG_ERROR("llama_model_quantize: file type %d is not supported\n", (int) params->ftype);
        return false;
    }
    return true;
}

// Quantize phase 2: the model's shape facts the type choice reads (layer count, GQA ratio).
static void quantize_plan_read_arch(struct quantize_plan * plan, const struct gguf_context * in) {
    const int64_t k = gguf_find_key(in, "general.architecture");
    if (k >= 0 && gguf_get_kv_type(in, k) == GGUF_TYPE_STRING) {
        const char * arch = gguf_get_val_str(in, k);
        plan->n_layer = (int) quantize_arch_u32(in, arch, "block_count", 0);
        const uint32_t nh = quantize_arch_u32(in, arch, "attention.head_count", 0);
        const uint32_t nkv = quantize_arch_u32(in, arch, "attention.head_count_kv", nh);
        if (nh > 0 && nkv > 0) plan->n_gqa = (int) (nh / nkv);
    }
}

// The output file's layout, sizes and the largest converted tensor, filled by quantize_layout.
struct quantize_layout {
    enum ggml_type * new_types;   // [n_tensors]: each tensor's type in the output
    size_t max_out;               // bytes of the largest converted tensor (the conversion buffer)
    size_t total_in, total_out;
};

// Quantize phase 3: each tensor's new type chosen and checked convertible, and added to out
// (so out's offsets and sizes are final). False (logged) when a tensor cannot be converted.
static bool quantize_layout(const struct quantize_plan * plan, const struct gguf_context * in, struct gguf_context * out,
                            struct ggml_context * meta, struct quantize_layout * lo) {
    const llama_model_quantize_params * params = plan->params;
    const int64_t n_tensors = gguf_get_n_tensors(in);
    for (int64_t i = 0; i < n_tensors; i++) {
        const char * name = gguf_get_tensor_name(in, i);
        const enum ggml_type cur = gguf_get_tensor_type(in, i);
        const int n_dims = gguf_get_tensor_n_dims(in, i);
        int64_t ne[GGML_MAX_DIMS] = { 1, 1, 1, 1 };
        for (int d = 0; d < n_dims; d++) ne[d] = gguf_get_tensor_ne(in, i, d);
        enum ggml_type nt = quantize_choose_type(plan, name, n_dims, cur, ne[0], ne[2]);
        if (nt != cur && ggml_is_quantized(cur) && !params->allow_requantize) {
            LLAMA_LOG_ERROR("llama_model_quantize: %s is already quantized (%s); set allow_requantize\n", name,
                            ggml_type_name(cur));
            return false;
        }
        const struct ggml_type_traits * tt = ggml_get_type_traits(nt);
        const struct ggml_type_traits * ts = ggml_get_type_traits(cur);
        const bool searchable = ggml_quantize_requires_imatrix(nt) && params->imatrix != NULL; // IQ2_XXS/XS, IQ1
        if (nt != cur && (!tt || !(tt->from_float_ref || searchable) || !ts || !ts->to_float)) {
            LLAMA_LOG_ERROR("llama_model_quantize: cannot convert %s from %s to %s\n", name, ggml_type_name(cur),
                            ggml_type_name(nt));
            return false;
        }
        lo->new_types[i] = nt;
        struct ggml_tensor * t = ggml_new_tensor(meta, cur, n_dims, ne);
        if (!t) return false;
        ggml_set_name(t, name);
        gguf_add_tensor(out, t);
        gguf_set_tensor_type(out, name, nt);
        const size_t sz = gguf_get_tensor_size(out, gguf_find_tensor(out, name));
        if (nt != cur && sz > lo->max_out) lo->max_out = sz;
        lo->total_in += gguf_get_tensor_size(in, i);
        lo->total_out += sz;
    }
    return true;
}

// Quantize phase 4: the output's metadata block written to f.
static bool quantize_write_meta(const struct gguf_context * out, FILE * f) {
    const size_t meta_size = gguf_get_meta_size(out);
    void * mbuf = GGML_MALLOC(meta_size);
    if (!mbuf) return false;
    gguf_get_meta_data(out, mbuf);
    const bool ok = fwrite(mbuf, 1, meta_size, f) == meta_size;
    free(mbuf);
    if (!ok) LLAMA_LOG_ERROR("llama_model_quantize: write error\n");
    return ok;
}

// Quantize phase 5: each tensor's data converted (through buf) or copied, written at its offset
// in the output. False (logged) on a conversion or write error.
static bool quantize_write_tensors(const llama_model_quantize_params * params, const struct gguf_context * in,
                                   const uint8_t * data_in, const struct gguf_context * out, struct ggml_context * meta,
                                   const enum ggml_type * new_types, void * buf, FILE * f) {
    const int64_t n_tensors = gguf_get_n_tensors(in);
    const int nthread = params->nthread > 0 ? params->nthread : ggml_cpu_n_physical_cores();
    size_t written = 0;
    for (int64_t i = 0; i < n_tensors; i++) {
        const char * name = gguf_get_tensor_name(in, i);
        const int64_t oi = gguf_find_tensor(out, name);
        const size_t off = gguf_get_tensor_offset(out, oi);
        const size_t sz = gguf_get_tensor_size(out, oi);
        if (off > written && !write_zeros(f, off - written)) return false;
        written = off;
        const void * src = data_in + gguf_get_tensor_offset(in, i);
        const enum ggml_type cur = gguf_get_tensor_type(in, i);
        const void * data = src;
        if (new_types[i] != cur) {
            const int64_t ne0 = gguf_get_tensor_ne(in, i, 0);
            const int64_t nrows = ne0 > 0 ? (int64_t) (ggml_nelements(ggml_get_tensor(meta, name)) / ne0) : 0;
            const int64_t ne1 = gguf_get_tensor_n_dims(in, i) > 1 ? gguf_get_tensor_ne(in, i, 1) : 1;
            const float * im = NULL;
            if (!quantize_imatrix_for(params, name, ne0, nrows / (ne1 > 0 ? ne1 : 1), &im)) {
                return false;
            }
            if (!quantize_tensor(src, cur, buf, new_types[i], im, ne0, nrows, ne1 > 0 ? ne1 : 1, nthread)) {
                LLAMA_LOG_ERROR("llama_model_quantize: cannot convert %s to %s (out of memory, or no importance "
                                "matrix entry for a type that needs one)\n",
                                name, ggml_type_name(new_types[i]));
                return false;
            }
            data = buf;
        }
        if (fwrite(data, 1, sz, f) != sz) {
            LLAMA_LOG_ERROR("llama_model_quantize: write error at %s\n", name);
            return false;
        }
        written += sz;
        LLAMA_LOG_INFO("[%4lld/%4lld] %-40s %-6s -> %-6s %10.2f KiB\n", (long long) (i + 1), (long long) n_tensors, name,
                       ggml_type_name(cur), ggml_type_name(new_types[i]), sz / 1024.0);
    }
    return true;
}

uint32_t llama_model_quantize(const char * fname_inp, const char * fname_out, const llama_model_quantize_params * params) {
    if (!fname_inp || !fname_out) {
        LLAMA_LOG_ERROR("llama_model_quantize: input and output file names are required\n");
        return 1;
    }
    llama_model_quantize_params defaults = llama_model_quantize_default_params();
    if (!params) params = &defaults;
    const enum ggml_type base = quantize_base_type(params->ftype);
    if (!quantize_params_check(params, base)) {
        return 1;
    }
    static struct quantize_overrides ov_none; // n = 0
    struct quantize_overrides * ov = params->tt_overrides ? GGML_CALLOC(1, sizeof(*ov)) : &ov_none;
    if (ov == NULL) return 1;
    if (ov != &ov_none && !quantize_overrides_init(ov, params->tt_overrides)) {
        quantize_overrides_free(ov);
        free(ov);
        return 1;
    }
    uint32_t rc = 1;
    struct gguf_init_params ip = { true, NULL };
    struct gguf_context * in = gguf_init_from_file(fname_inp, ip);
    struct gguf_mmap * map = in ? gguf_mmap_open(fname_inp) : NULL;
    struct gguf_context * out = NULL;
    struct ggml_context * meta = NULL;
    FILE * f = NULL;
    void * buf = NULL;
    struct quantize_layout lo = { 0 };
    if (!in || !map) {
        LLAMA_LOG_ERROR("llama_model_quantize: cannot read %s\n", fname_inp);
        goto done;
    }
    const int64_t n_tensors = gguf_get_n_tensors(in);
    struct quantize_plan plan = { params->ftype, base, 0, 1, params->imatrix != NULL, gguf_find_tensor(in, "output.weight") >= 0,
                                  params,        ov };
    quantize_plan_read_arch(&plan, in);
    out = gguf_init_empty();
    struct ggml_init_params mp = { (size_t) (n_tensors + 1) * ggml_tensor_overhead(), NULL, true };
    meta = ggml_init(mp);
    if (!out || !meta) goto done;
    gguf_set_kv(out, in);
    if (!params->only_copy) {
        gguf_set_val_u32(out, "general.file_type", (uint32_t) params->ftype);
        gguf_set_val_u32(out, "general.quantization_version", 2);
    }
    lo.new_types = GGML_CALLOC((size_t) (n_tensors > 0 ? n_tensors : 1), sizeof(enum ggml_type));
    if (!lo.new_types || !quantize_layout(&plan, in, out, meta, &lo)) goto done;
    if (params->dry_run) {
        LLAMA_LOG_INFO("llama_model_quantize: dry run: %.2f MiB -> %.2f MiB\n", lo.total_in / 1048576.0,
                       lo.total_out / 1048576.0);
        rc = 0;
        goto done;
    }
    buf = lo.max_out ? GGML_MALLOC(lo.max_out) : NULL;
    if (lo.max_out && !buf) {
        LLAMA_LOG_ERROR("llama_model_quantize: cannot allocate %zu bytes\n", lo.max_out);
        goto done;
    }
    f = fopen(fname_out, "wb");
    if (!f) {
        LLAMA_LOG_ERROR("llama_model_quantize: cannot open %s for writing\n", fname_out);
        goto done;
    }
    const uint8_t * data_in = (const uint8_t *) gguf_mmap_addr(map) + gguf_get_data_offset(in);
    if (!quantize_write_meta(out, f) || !quantize_write_tensors(params, in, data_in, out, meta, lo.new_types, buf, f)) {
        goto done;
    }
    if (fflush(f) != 0) goto done;
    LLAMA_LOG_INFO("llama_model_quantize: model size %.2f MiB -> %.2f MiB\n", lo.total_in / 1048576.0, lo.total_out / 1048576.0);
    rc = 0;
done:
    if (f && fclose(f) != 0) rc = 1;
    if (rc != 0 && f) remove(fname_out);
    free(lo.new_types);
    free(buf);
    ggml_free(meta);
    gguf_free(out);
    gguf_mmap_close(map);
    gguf_free(in);
    if (ov != &ov_none) {
        quantize_overrides_free(ov);
        free(ov);
    }
    return rc;
}
