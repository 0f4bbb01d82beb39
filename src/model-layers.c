// model-layers.c — the per-layer shape of a model: which layers slide, each layer's KV-head
// count, head sizes, rope dimensions and FFN width, and which layer's KV cache each attends over.
//
// Most files give one value for all layers. Some give arrays, as llama.cpp's converter writes
// them: <arch>.attention.head_count_kv and <arch>.feed_forward_length with one value per layer,
// <arch>.attention.sliding_window_pattern as one bool per layer (true: sliding). Sliding layers
// may have their own head size and rope dimensions (attention.key_length_swa,
// value_length_swa, rope.dimension_count_swa). With attention.shared_kv_layers = n, the last n
// layers own no KV: each attends over the KV of the last earlier layer of its own kind (sliding
// or global), as transformers' Gemma 4 defines the sharing.
#include "llama-model.h"

#include <inttypes.h>
#include <stdio.h>

bool llama_model_hp_layers(const struct gguf_context * g, const char * arch, const char * name, uint32_t n_layer, uint32_t * out,
                           bool * ok) {
    char key[256];
    snprintf(key, sizeof(key), "%s.%s", arch, name);
    const int64_t id = gguf_find_key(g, key);
    if (id < 0) {
        return false;
    }
    if (gguf_get_kv_type(g, id) != GGUF_TYPE_ARRAY) {
        int64_t v;
        if (!llama_model_gguf_get_int(g, key, &v) || v < 0 || v > (int64_t) UINT32_MAX) {
            LLAMA_LOG_ERROR("llama_model_load: key '%s' is not an unsigned 32-bit value\n", key);
            *ok = false;
            return false;
        }
        for (uint32_t il = 0; il < n_layer; il++) {
            out[il] = (uint32_t) v;
        }
        return true;
    }
    const enum gguf_type t = gguf_get_arr_type(g, id);
    if ((size_t) gguf_get_arr_n(g, id) != n_layer || (t != GGUF_TYPE_UINT32 && t != GGUF_TYPE_INT32)) {
        LLAMA_LOG_ERROR("llama_model_load: key '%s' must be a (u)int32 array of %u values (one per layer)\n", key, n_layer);
        *ok = false;
        return false;
    }
    const void * data = gguf_get_arr_data(g, id);
    for (uint32_t il = 0; il < n_layer; il++) {
        const int64_t v =
            t == GGUF_TYPE_UINT32 ? (int64_t) ((const uint32_t *) data)[il] : (int64_t) ((const int32_t *) data)[il];
        if (v < 0) {
            LLAMA_LOG_ERROR("llama_model_load: key '%s'[%u] = %" PRId64 " is negative\n", key, il, v);
            *ok = false;
            return false;
        }
        out[il] = (uint32_t) v;
    }
    return true;
}

// Sliding layers: the per-layer bool array when the file has one, else all but every
// swa_period-th (period 0: all) when a window is set.
static bool layers_swa(struct llama_hparams * hp, const struct gguf_context * g, const char * arch) {
    char key[256];
    snprintf(key, sizeof(key), "%s.attention.sliding_window_pattern", arch);
    const int64_t id = gguf_find_key(g, key);
    if (id >= 0 && gguf_get_kv_type(g, id) == GGUF_TYPE_ARRAY) {
        if (gguf_get_arr_type(g, id) != GGUF_TYPE_BOOL || (size_t) gguf_get_arr_n(g, id) != hp->n_layer) {
            LLAMA_LOG_ERROR("llama_model_load: key '%s' must be a bool array of %u values\n", key, hp->n_layer);
            return false;
        }
        const int8_t * v = gguf_get_arr_data(g, id);
        for (uint32_t il = 0; il < hp->n_layer; il++) {
            hp->swa_layers[il] = hp->n_swa > 0 && v[il] != 0;
        }
        return true;
    }
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        hp->swa_layers[il] = hp->n_swa > 0 && (hp->swa_period == 0 || (il + 1) % hp->swa_period != 0);
    }
    return true;
}

// Layer il's KV source: itself, or for the last n_kv_shared layers the last owning layer of
// the same kind; false (logged) when there is none.
static bool layers_kv_sharing(struct llama_hparams * hp) {
    if (hp->n_kv_shared >= hp->n_layer) {
        LLAMA_LOG_ERROR("llama_model_load: attention.shared_kv_layers = %u leaves no layer owning KV (%u layers)\n",
                        hp->n_kv_shared, hp->n_layer);
        return false;
    }
    const uint32_t first = hp->n_layer - hp->n_kv_shared;
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        hp->kv_layer[il] = (uint16_t) il;
        if (il < first) {
            continue;
        }
        uint32_t src = first;
        for (uint32_t j = first; j-- > 0;) {
            if (hp->swa_layers[j] == hp->swa_layers[il]) {
                src = j;
                break;
            }
        }
        if (src == first) {
            LLAMA_LOG_ERROR("llama_model_load: layer %u shares KV, but no earlier layer of its kind owns any\n", il);
            return false;
        }
        // the source must have the same KV shape (it does: same kind, same per-kind values)
        if (hp->n_head_kv_l[src] != hp->n_head_kv_l[il] || hp->n_embd_head_k_l[src] != hp->n_embd_head_k_l[il] ||
            hp->n_embd_head_v_l[src] != hp->n_embd_head_v_l[il]) {
            LLAMA_LOG_ERROR("llama_model_load: layer %u shares the KV of layer %u, whose heads differ\n", il, src);
            return false;
        }
        hp->kv_layer[il] = (uint16_t) src;
    }
    return true;
}

bool llama_model_layers_init(struct llama_hparams * hp, const struct gguf_context * g, const char * arch) {
    if (!layers_swa(hp, g, arch)) {
        return false;
    }
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        const bool swa = hp->swa_layers[il];
        hp->n_embd_head_k_l[il] = swa && hp->n_embd_head_k_swa ? hp->n_embd_head_k_swa : hp->n_embd_head_k;
        hp->n_embd_head_v_l[il] = swa && hp->n_embd_head_v_swa ? hp->n_embd_head_v_swa : hp->n_embd_head_v;
        hp->n_rot_l[il] =
            swa && hp->n_rot_swa ? hp->n_rot_swa : (swa && hp->n_embd_head_k_swa ? hp->n_embd_head_k_swa : hp->n_rot);
        const uint32_t hkv = hp->n_head_kv_l[il];
        if (hkv == 0 || hp->n_head % hkv != 0) {
            LLAMA_LOG_ERROR("llama_model_load: %s.attention.head_count = %u is not a multiple of layer %u's "
                            "head_count_kv = %u\n",
                            arch, hp->n_head, il, hkv);
            return false;
        }
        if (hp->n_ff_l[il] == 0) {
            LLAMA_LOG_ERROR("llama_model_load: %s.feed_forward_length of layer %u is 0\n", arch, il);
            return false;
        }
        if (hp->n_rot_l[il] > hp->n_embd_head_k_l[il] || hp->n_rot_l[il] % 2 != 0) {
            LLAMA_LOG_ERROR("llama_model_load: layer %u's rope dimensions (%u) must be even and <= its head size %u\n", il,
                            hp->n_rot_l[il], hp->n_embd_head_k_l[il]);
            return false;
        }
    }
    return layers_kv_sharing(hp);
}
