// pooling.c — sequence embeddings from the final hidden states, a step after the graph that is
// the same for every architecture (llama_get_embeddings_seq reads the result):
//
//   MEAN  the average of the sequence's rows
//   CLS   its first row (BERT's [CLS] token)
//   LAST  its last row (decoder embedders: Qwen3-Embedding)
//   then, for MEAN / CLS / LAST, the model's dense projections when it has them (gemma-embedding:
//         dense_3 · dense_2 · x, the sentence-transformers Dense modules)
//   RANK  a relevance score: the first row (bidirectional models) or the last (causal ones),
//         through the classifier head when the model has one:
//           y = cls_out · tanh(cls · x + cls_b) + cls_out_b        (each part when present)
//         qwen3 rerankers' head is the lm head's "yes" and "no" rows: softmax over the two
//         (as llama.cpp does), so the score is P(yes)
//
// Rows arrive ubatch by ubatch (llama_pool_rows); llama_pool_finish completes MEAN and RANK.
// The head's weights are read as floats here (any stored type, wherever they live): a few
// matrix-vector products per sequence, next to nothing beside the encoder itself.
#include "llama-context.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void llama_pool_begin(struct llama_context * ctx) {
    const size_t n_embd = ctx->model->hparams.n_embd;
    memset(ctx->embd_seq, 0, (size_t) ctx->n_seq_max * n_embd * sizeof(float));
    memset(ctx->embd_seq_n, 0, ctx->n_seq_max * sizeof(int32_t));
}

void llama_pool_rows(struct llama_context * ctx, const struct llama_ubatch * ub, const float * rows) {
    const size_t n_embd = ctx->model->hparams.n_embd;
    const enum llama_pooling_type pt = ctx->pooling;
    const bool last = pt == LLAMA_POOLING_TYPE_LAST || (pt == LLAMA_POOLING_TYPE_RANK && ctx->causal_attn);
    for (int32_t i = 0; i < ub->n_tokens; i++) {
        const float * row = rows + (size_t) i * n_embd;
        for (int32_t j = 0; j < ub->n_seq_id[i]; j++) {
            const llama_seq_id s = ub->seq_id[i][j];
            float * dst = ctx->embd_seq + (size_t) s * n_embd;
            if (pt == LLAMA_POOLING_TYPE_MEAN) {
                for (size_t e = 0; e < n_embd; e++) {
                    dst[e] += row[e];
                }
            } else if (last || ctx->embd_seq_n[s] == 0) {
                memcpy(dst, row, n_embd * sizeof(float)); // last: every time; first: once
            }
            ctx->embd_seq_n[s]++;
        }
    }
}

// y[r] = w[:, r] · x (+ b[r]) for the ne[1] rows of w, read as floats through row (scratch of
// ne[0] floats) and raw (scratch of one stored row, for weights the host cannot read).
static void pool_matvec(const struct ggml_tensor * w, const struct ggml_tensor * b, const float * x, float * y, float * row,
                        void * raw) {
    const struct ggml_type_traits * tr = ggml_get_type_traits(w->type);
    const int64_t n = w->ne[0];
    const bool host = llama_model_tensor_on_host(w);
    for (int64_t r = 0; r < w->ne[1]; r++) {
        const void * src = (const char *) w->data + (size_t) r * w->nb[1];
        if (!host) {
            ggml_backend_tensor_get(w, raw, (size_t) r * w->nb[1], w->nb[1]);
            src = raw;
        }
        tr->to_float(src, row, n);
        double acc = 0.0;
        for (int64_t e = 0; e < n; e++) {
            acc += (double) row[e] * x[e];
        }
        y[r] = (float) acc;
    }
    if (b != NULL) {
        float * bias = row;
        ggml_backend_tensor_get(b, bias, 0, (size_t) w->ne[1] * sizeof(float));
        for (int64_t r = 0; r < w->ne[1]; r++) {
            y[r] += bias[r];
        }
    }
}

bool llama_pool_check(const struct llama_model * model, enum llama_pooling_type pt) {
    if (pt != LLAMA_POOLING_TYPE_RANK) {
        return true;
    }
    if (model->cls == NULL && model->cls_out == NULL) {
        LLAMA_LOG_ERROR("llama_init_from_model: RANK pooling needs a classifier head (cls / cls.output tensors); "
                        "this model has none\n");
        return false;
    }
    if (model->cls_out != NULL && model->cls_out->ne[1] > (int64_t) model->hparams.n_embd) {
        LLAMA_LOG_ERROR("llama_init_from_model: cls.output has %" PRId64 " rows, more than n_embd\n", model->cls_out->ne[1]);
        return false;
    }
    return true;
}

// gemma-embedding: x = dense_3 · (dense_2 · x), each when present (the sentence-transformers
// Dense modules after the pooling).
static bool pool_dense(struct llama_context * ctx) {
    const struct llama_model * model = ctx->model;
    const size_t n_embd = model->hparams.n_embd;
    if (model->dense_2 == NULL && model->dense_3 == NULL) {
        return true;
    }
    const size_t n_mid = model->dense_2 ? (size_t) model->dense_2->ne[1] : n_embd;
    const size_t n_row = n_mid > n_embd ? n_mid : n_embd;
    size_t raw_size = model->dense_2 ? model->dense_2->nb[1] : 0;
    if (model->dense_3 != NULL && model->dense_3->nb[1] > raw_size) raw_size = model->dense_3->nb[1];
    float * tmp = GGML_MALLOC((n_row + n_mid) * sizeof(float) + raw_size);
    if (tmp == NULL) {
        LLAMA_LOG_ERROR("llama_decode: out of memory for the dense projections\n");
        return false;
    }
    float *row = tmp, *mid = tmp + n_row;
    void * raw = tmp + n_row + n_mid;
    for (uint32_t s = 0; s < ctx->n_seq_max; s++) {
        if (ctx->embd_seq_n[s] == 0) {
            continue;
        }
        float * x = ctx->embd_seq + (size_t) s * n_embd;
        if (model->dense_2 != NULL) {
            pool_matvec(model->dense_2, NULL, x, mid, row, raw);
        } else {
            memcpy(mid, x, n_embd * sizeof(float));
        }
        if (model->dense_3 != NULL) {
            pool_matvec(model->dense_3, NULL, mid, x, row, raw);
        } else {
            memcpy(x, mid, n_embd * sizeof(float));
        }
    }
    free(tmp);
    return true;
}

bool llama_pool_finish(struct llama_context * ctx) {
    const struct llama_model * model = ctx->model;
    const size_t n_embd = model->hparams.n_embd;
    if (ctx->pooling == LLAMA_POOLING_TYPE_MEAN) {
        for (uint32_t s = 0; s < ctx->n_seq_max; s++) {
            if (ctx->embd_seq_n[s] > 0) {
                float * dst = ctx->embd_seq + (size_t) s * n_embd;
                const float inv = 1.0f / (float) ctx->embd_seq_n[s];
                for (size_t e = 0; e < n_embd; e++) {
                    dst[e] *= inv;
                }
            }
        }
    }
    if (ctx->pooling != LLAMA_POOLING_TYPE_RANK) {
        return pool_dense(ctx);
    }
    size_t raw_size = 0;
    if (model->cls != NULL) raw_size = model->cls->nb[1];
    if (model->cls_out != NULL && model->cls_out->nb[1] > raw_size) raw_size = model->cls_out->nb[1];
    float * tmp = GGML_MALLOC(2 * n_embd * sizeof(float) + raw_size);
    if (tmp == NULL) {
        LLAMA_LOG_ERROR("llama_decode: out of memory for the classifier head\n");
        return false;
    }
    float *row = tmp, *hid = tmp + n_embd;
    void * raw = tmp + 2 * n_embd;
    const bool softmax = strcmp(model->arch, "qwen3") == 0; // the yes / no rows of its lm head
    for (uint32_t s = 0; s < ctx->n_seq_max; s++) {
        if (ctx->embd_seq_n[s] == 0) {
            continue;
        }
        float * x = ctx->embd_seq + (size_t) s * n_embd;
        if (model->cls != NULL) {
            pool_matvec(model->cls, model->cls_b, x, hid, row, raw);
            for (size_t e = 0; e < n_embd; e++) {
                x[e] = tanhf(hid[e]);
            }
        }
        if (model->cls_out != NULL) {
            const int64_t n_out = model->cls_out->ne[1];
            pool_matvec(model->cls_out, model->cls_out_b, x, hid, row, raw);
            memset(x, 0, n_embd * sizeof(float));
            float mx = -INFINITY, sum = 0.0f;
            for (int64_t r = 0; r < n_out; r++) {
                mx = hid[r] > mx ? hid[r] : mx;
            }
            for (int64_t r = 0; r < n_out; r++) {
                x[r] = softmax ? expf(hid[r] - mx) : hid[r];
                sum += x[r];
            }
            for (int64_t r = 0; softmax && r < n_out; r++) {
                x[r] /= sum;
            }
        }
    }
    free(tmp);
    return true;
}
