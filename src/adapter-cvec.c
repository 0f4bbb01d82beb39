// adapter-cvec.c — control vectors: one vector per layer added to that layer's output (the
// residual stream after the layer), as llama.h's llama_set_adapter_cvec defines them: data
// holds n_embd floats per layer starting from layer 1, applied to layers il_start..il_end.
#include "llama-adapter.h"
#include "llama-context.h"
#include "llama-graph.h"
#include "llama-model.h"

#include "ggml-backend.h"
#include "ggml-cpu.h"

#include <stdlib.h>
#include <string.h>

static void cvec_clear(struct llama_context * ctx) {
    ggml_backend_buffer_free(ctx->cvec_buf);
    ggml_free(ctx->cvec_ctx);
    ctx->cvec_buf = NULL;
    ctx->cvec_ctx = NULL;
    ctx->cvec = NULL;
}

int32_t llama_set_adapter_cvec(struct llama_context * ctx, const float * data, size_t len, int32_t n_embd, int32_t il_start,
                               int32_t il_end) {
    if (llama_context_checked(ctx, __func__) == NULL) {
        return -1;
    }
    ctx->graph_reusable = false;
    if (data == NULL) {
        cvec_clear(ctx);
        return 0;
    }
    const struct llama_hparams * hp = &ctx->model->hparams;
    if (n_embd != (int32_t) hp->n_embd) {
        LLAMA_LOG_ERROR("%s: control vector has n_embd %d, the model %u\n", __func__, n_embd, hp->n_embd);
        return -1;
    }
    if (ctx->cvec == NULL) {
        ctx->cvec_ctx = ggml_init((struct ggml_init_params) { .mem_size = ggml_tensor_overhead(), .no_alloc = true });
        ctx->cvec = ctx->cvec_ctx ? ggml_new_tensor_2d(ctx->cvec_ctx, GGML_TYPE_F32, hp->n_embd, hp->n_layer) : NULL;
        ctx->cvec_buf =
            ctx->cvec ? ggml_backend_alloc_ctx_tensors_from_buft(ctx->cvec_ctx, ggml_backend_cpu_buffer_type()) : NULL;
        if (ctx->cvec_buf == NULL) {
            LLAMA_LOG_ERROR("%s: out of memory\n", __func__);
            cvec_clear(ctx);
            return -1;
        }
    }
    // row il holds layer il's vector; layer 0 has none (data starts from layer 1)
    ggml_backend_buffer_clear(ctx->cvec_buf, 0);
    for (uint32_t il = 1; il < hp->n_layer; il++) {
        const size_t off = (size_t) n_embd * (il - 1);
        if (off + (size_t) n_embd <= len) {
            ggml_backend_tensor_set(ctx->cvec, data + off, (size_t) il * ctx->cvec->nb[1], (size_t) n_embd * sizeof(float));
        }
    }
    ctx->cvec_il_start = il_start;
    ctx->cvec_il_end = il_end;
    return 0;
}

struct ggml_tensor * llm_graph_cvec(struct llm_graph * g, uint32_t il, struct ggml_tensor * x) {
    const struct llama_context * ctx = g->ctx;
    if (ctx->cvec == NULL || x == NULL || il == 0 || (int64_t) il < ctx->cvec_il_start || (int64_t) il > ctx->cvec_il_end) {
        return x;
    }
    struct ggml_tensor * v = ggml_view_1d(g->c, ctx->cvec, ctx->cvec->ne[0], (size_t) il * ctx->cvec->nb[1]);
    return v ? ggml_add(g->c, x, v) : NULL;
}

void llama_context_adapters_free(struct llama_context * ctx) {
    cvec_clear(ctx);
    free(ctx->loras);
    ctx->loras = NULL;
    ctx->n_loras = 0;
    for (int32_t e = 0; e < ctx->n_lora_seq; e++) {
        free(ctx->lora_seq[e].scales);
    }
    free(ctx->lora_seq);
    free(ctx->lora_seq_scratch);
    free(ctx->alora_start);
    ctx->alora_start = NULL;
    ctx->lora_seq = NULL;
    ctx->lora_seq_scratch = NULL;
    ctx->n_lora_seq = 0;
    ctx->lora_seq_scratch_n = 0;
}
