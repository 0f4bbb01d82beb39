// model-placement.c — where a model's weights live: the mapped file as one CPU buffer, the
// last n_gpu_layers blocks (and the output head when n_gpu_layers exceeds the block count) in
// one buffer of the chosen device, as llama.cpp places them. Architecture-agnostic: a tensor
// belongs to block i by its GGUF name "blk.<i>.". The token embedding stays on the CPU (its
// lookup is a get_rows over the whole table); a tied output head gets a device copy.
#include "llama-model.h"

#include <stdlib.h>
#include <string.h>

// The devices that offloading may target: GPUs, and the test device when it is enabled.
// NULL with *bad set when main_gpu names no device although there are some (an error: the
// caller asked for a device that does not exist; silently taking another would hide it).
static ggml_backend_dev_t placement_pick_device(int32_t main_gpu, bool * bad) {
    *bad = false;
    ggml_backend_load_all();
    const size_t n = ggml_backend_dev_count();
    int32_t k = 0;
    ggml_backend_dev_t first = NULL;
    for (size_t i = 0; i < n; i++) {
        ggml_backend_dev_t d = ggml_backend_dev_get(i);
        if (ggml_backend_dev_type(d) != GGML_BACKEND_DEVICE_TYPE_GPU) {
            continue;
        }
        if (!first) first = d;
        if (k++ == main_gpu) return d;
    }
    if (first) {
        LLAMA_LOG_ERROR("llama_model_load: main_gpu = %d is out of range (%d GPU devices)\n", main_gpu, k);
        *bad = true;
    }
    return NULL;
}

// Block index of a tensor named "blk.<i>.*", or -1.
static int placement_block_of(const char * name) {
    if (strncmp(name, "blk.", 4) != 0) return -1;
    char * end = NULL;
    const long il = strtol(name + 4, &end, 10);
    return end && *end == '.' && il >= 0 ? (int) il : -1;
}

// True if the tensor goes to the device under this placement.
static bool placement_on_device(const struct llama_model * m, const struct ggml_tensor * t) {
    const int il = placement_block_of(t->name);
    if (il >= 0) return (uint32_t) il >= m->i_layer_dev;
    return m->output_dev &&
        (strcmp(t->name, "output.weight") == 0 || strcmp(t->name, "output_norm.weight") == 0 ||
         strncmp(t->name, "output.", 7) == 0 || strncmp(t->name, "output_norm.", 12) == 0);
}

bool llama_model_place_weights(struct llama_model * m, const struct llama_model_params * params) {
    const uint32_t n_layer = m->hparams.n_layer;
    // the whole mapping is host memory the CPU computes on
    m->buf_host = ggml_backend_cpu_buffer_from_ptr((void *) gguf_mmap_addr(m->map), gguf_mmap_size(m->map));
    if (!m->buf_host) {
        return false;
    }
    ggml_backend_buffer_set_usage(m->buf_host, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    for (struct ggml_tensor * t = ggml_get_first_tensor(m->ctx_w); t; t = ggml_get_next_tensor(m->ctx_w, t)) {
        if (t->data && !t->buffer) t->buffer = m->buf_host;
    }

    m->i_layer_dev = n_layer;
    m->output_dev = false;
    const int32_t ngl = params->n_gpu_layers;
    if (ngl <= 0) {
        return true;
    }
    if (params->split_mode == LLAMA_SPLIT_MODE_ROW) {
        LLAMA_LOG_WARN("llama_model_load: split_mode ROW is not supported; splitting by layer\n");
    }
    bool bad_gpu = false;
    ggml_backend_dev_t dev = placement_pick_device(params->main_gpu, &bad_gpu);
    if (bad_gpu) {
        return false;
    }
    if (!dev) {
        if (ngl != 999 && ngl > 0) {
            LLAMA_LOG_INFO("llama_model_load: n_gpu_layers = %d: no GPU device, running on the CPU\n", ngl);
        }
        return true;
    }
    m->dev = dev;
    m->i_layer_dev = (uint32_t) ngl >= n_layer ? 0 : n_layer - (uint32_t) ngl;
    m->output_dev = (uint32_t) ngl > n_layer;

    // a tied output head: the device gets its own copy of the embedding table
    struct ggml_tensor * tied = NULL;
    if (m->output_dev && m->output == m->tok_embd) {
        m->ctx_dev = ggml_init((struct ggml_init_params) { 2 * ggml_tensor_overhead(), NULL, true });
        tied = m->ctx_dev ? ggml_dup_tensor(m->ctx_dev, m->tok_embd) : NULL;
        if (!tied) {
            LLAMA_LOG_ERROR("llama_model_load: out of memory\n");
            return false;
        }
        ggml_set_name(tied, "output.weight");
    }

    ggml_backend_buffer_type_t buft = ggml_backend_dev_buffer_type(dev);
    const size_t align = ggml_backend_buft_get_alignment(buft);
    size_t total = 0;
    for (struct ggml_tensor * t = ggml_get_first_tensor(m->ctx_w); t; t = ggml_get_next_tensor(m->ctx_w, t)) {
        if (placement_on_device(m, t)) total += GGML_PAD(ggml_backend_buft_get_alloc_size(buft, t), align);
    }
    if (tied) total += GGML_PAD(ggml_backend_buft_get_alloc_size(buft, tied), align);
    if (total == 0) {
        return true;
    }
    size_t free_mem = 0, total_mem = 0;
    ggml_backend_dev_memory(dev, &free_mem, &total_mem);
    if (total_mem && total > free_mem) {
        LLAMA_LOG_ERROR("llama_model_load: %zu bytes of weights do not fit %s (%zu bytes free)\n", total,
                        ggml_backend_dev_name(dev), free_mem);
        return false;
    }
    m->buf_dev = ggml_backend_buft_alloc_buffer(buft, total);
    if (!m->buf_dev) {
        LLAMA_LOG_ERROR("llama_model_load: cannot allocate %zu bytes of weights on %s\n", total, ggml_backend_dev_name(dev));
        return false;
    }
    ggml_backend_buffer_set_usage(m->buf_dev, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    char * p = ggml_backend_buffer_get_base(m->buf_dev);
    for (struct ggml_tensor * t = ggml_get_first_tensor(m->ctx_w); t; t = ggml_get_next_tensor(m->ctx_w, t)) {
        if (!placement_on_device(m, t)) continue;
        const void * host = t->data;
        if (ggml_backend_tensor_alloc(m->buf_dev, t, p) != GGML_STATUS_SUCCESS) return false;
        ggml_backend_tensor_set(t, host, 0, ggml_nbytes(t));
        p += GGML_PAD(ggml_backend_buft_get_alloc_size(buft, t), align);
    }
    if (tied) {
        if (ggml_backend_tensor_alloc(m->buf_dev, tied, p) != GGML_STATUS_SUCCESS) return false;
        ggml_backend_tensor_set(tied, m->tok_embd->data, 0, ggml_nbytes(tied));
        m->output = tied;
    }
    LLAMA_LOG_INFO("llama_model_load: offloaded %u of %u blocks%s to %s (%.2f MiB)\n", n_layer - m->i_layer_dev, n_layer,
                   m->output_dev ? " and the output head" : "", ggml_backend_dev_name(dev), total / 1048576.0);
    return true;
}

bool llama_model_tensor_on_host(const struct ggml_tensor * t) {
    return t != NULL && (t->buffer == NULL || ggml_backend_buffer_is_host(t->buffer));
}

ggml_backend_buffer_type_t llama_model_layer_buft(const struct llama_model * m, uint32_t il) {
    if (m->dev && il >= m->i_layer_dev) return ggml_backend_dev_buffer_type(m->dev);
    return ggml_backend_cpu_buffer_type();
}

void llama_model_free_buffers(struct llama_model * m) {
    ggml_backend_buffer_free(m->buf_repack);
    ggml_backend_buffer_free(m->buf_dev);
    ggml_backend_buffer_free(m->buf_host);
    ggml_free(m->ctx_dev);
    m->buf_repack = m->buf_dev = m->buf_host = NULL;
    m->ctx_dev = NULL;
}
