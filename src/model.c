// model.c — loading GGUF models of the architectures in the table (arch.c): metadata (with
// kv_overrides), the vocabulary, hyperparameters, weight tensors viewed in place in the mapped
// file, validation of every required tensor and shape; and the model accessors and metadata.
#include "llama-adapter.h"
#include "llama-model.h"
#include "llama-vocab.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef _WIN32
#include <sys/mman.h>
#include <unistd.h>
#endif

// ---------------------------------------------------------------------------------------------
// defaults and checks

struct llama_model_params llama_model_default_params(void) {
    struct llama_model_params p;
    memset(&p, 0, sizeof(p));
    p.devices = NULL;
    p.tensor_buft_overrides = NULL;
    p.n_gpu_layers = 999;            // "all layers", like llama.cpp (where a GPU is present)
    p.split_mode = LLAMA_SPLIT_MODE_LAYER;
    p.load_mode = LLAMA_LOAD_MODE_AUTO;
    p.lazy_mode = LLAMA_LAZY_MODE_OFF;
    p.main_gpu = 0;
    p.tensor_split = NULL;
    p.progress_callback = NULL;
    p.progress_callback_user_data = NULL;
    p.kv_overrides = NULL;
    p.vocab_only = false;
    p.check_tensors = false;
    p.use_extra_bufts = true;
    p.no_host = false;
    p.no_alloc = false;
    p.load_mtp = false;
    return p;
}

const struct llama_model * llama_model_checked(const struct llama_model * model, const char * func) {
    if (model == NULL) {
        LLAMA_LOG_ERROR("%s: model is NULL\n", func);
        return NULL;
    }
    if (model->magic != LLAMA_MAGIC_MODEL) {
        LLAMA_LOG_ERROR("%s: not a live llama_model (freed or foreign pointer)\n", func);
        return NULL;
    }
    return model;
}

const struct llama_vocab * llama_model_vocab_internal(const struct llama_model * model) {
    if (model == NULL || model->magic != LLAMA_MAGIC_MODEL) {
        return NULL;
    }
    return model->vocab;
}

// ---------------------------------------------------------------------------------------------
// typed metadata reads that accept any integer / numeric GGUF type

static bool gguf_type_is_int(enum gguf_type t) {
    switch (t) {
        case GGUF_TYPE_UINT8:
        case GGUF_TYPE_INT8:
        case GGUF_TYPE_UINT16:
        case GGUF_TYPE_INT16:
        case GGUF_TYPE_UINT32:
        case GGUF_TYPE_INT32:
        case GGUF_TYPE_UINT64:
        case GGUF_TYPE_INT64:
        case GGUF_TYPE_BOOL: // a flag (expert_weights_norm) reads as 0 / 1
            return true;
        default: return false;
    }
}

static int64_t gguf_int_at(const struct gguf_context * g, int64_t id) {
    switch (gguf_get_kv_type(g, id)) {
        case GGUF_TYPE_UINT8: return gguf_get_val_u8(g, id);
        case GGUF_TYPE_INT8: return gguf_get_val_i8(g, id);
        case GGUF_TYPE_UINT16: return gguf_get_val_u16(g, id);
        case GGUF_TYPE_INT16: return gguf_get_val_i16(g, id);
        case GGUF_TYPE_UINT32: return gguf_get_val_u32(g, id);
        case GGUF_TYPE_INT32: return gguf_get_val_i32(g, id);
        case GGUF_TYPE_UINT64: return (int64_t) gguf_get_val_u64(g, id);
        case GGUF_TYPE_INT64: return gguf_get_val_i64(g, id);
        case GGUF_TYPE_BOOL: return gguf_get_val_bool(g, id) ? 1 : 0;
        default: return 0;
    }
}

bool llama_model_gguf_get_int(const struct gguf_context * g, const char * key, int64_t * out) {
    const int64_t id = gguf_find_key(g, key);
    if (id < 0) {
        return false;
    }
    const enum gguf_type t = gguf_get_kv_type(g, id);
    if (!gguf_type_is_int(t)) {
        LLAMA_LOG_ERROR("llama_model: key '%s' has type %s, expected an integer\n", key, gguf_type_name(t));
        return false;
    }
    *out = gguf_int_at(g, id);
    return true;
}

bool llama_model_gguf_get_float(const struct gguf_context * g, const char * key, double * out) {
    const int64_t id = gguf_find_key(g, key);
    if (id < 0) {
        return false;
    }
    const enum gguf_type t = gguf_get_kv_type(g, id);
    if (t == GGUF_TYPE_FLOAT32) {
        *out = gguf_get_val_f32(g, id);
    } else if (t == GGUF_TYPE_FLOAT64) {
        *out = gguf_get_val_f64(g, id);
    } else if (gguf_type_is_int(t)) {
        *out = (double) gguf_int_at(g, id);
    } else {
        LLAMA_LOG_ERROR("llama_model: key '%s' has type %s, expected a number\n", key, gguf_type_name(t));
        return false;
    }
    return true;
}

// ---------------------------------------------------------------------------------------------
// kv_overrides: rewritten into the metadata before anything reads it, keeping the stored type
// of an existing key so that strict readers (the vocabulary) still find the type they expect.

static bool model_apply_override(struct gguf_context * g, const struct llama_model_kv_override * o) {
    char key[sizeof(o->key) + 1];
    memcpy(key, o->key, sizeof(o->key));
    key[sizeof(o->key)] = '\0';
    const int64_t id = gguf_find_key(g, key);
    const enum gguf_type t = id >= 0 ? gguf_get_kv_type(g, id) : GGUF_TYPE_COUNT;
    switch (o->tag) {
        case LLAMA_KV_OVERRIDE_TYPE_INT: {
            const int64_t v = o->value.val_i64;
            if (id < 0) {
                gguf_set_val_i64(g, key, v);
                break;
            }
            switch (t) {
                case GGUF_TYPE_UINT8: gguf_set_val_u8(g, key, (uint8_t) v); break;
                case GGUF_TYPE_INT8: gguf_set_val_i8(g, key, (int8_t) v); break;
                case GGUF_TYPE_UINT16: gguf_set_val_u16(g, key, (uint16_t) v); break;
                case GGUF_TYPE_INT16: gguf_set_val_i16(g, key, (int16_t) v); break;
                case GGUF_TYPE_UINT32: gguf_set_val_u32(g, key, (uint32_t) v); break;
                case GGUF_TYPE_INT32: gguf_set_val_i32(g, key, (int32_t) v); break;
                case GGUF_TYPE_UINT64: gguf_set_val_u64(g, key, (uint64_t) v); break;
                case GGUF_TYPE_INT64: gguf_set_val_i64(g, key, v); break;
                case GGUF_TYPE_FLOAT32: gguf_set_val_f32(g, key, (float) v); break;
                case GGUF_TYPE_FLOAT64: gguf_set_val_f64(g, key, (double) v); break;
                default:
                    LLAMA_LOG_ERROR("llama_model_load: override of '%s': int given, key has type %s\n", key, gguf_type_name(t));
                    return false;
            }
            LLAMA_LOG_INFO("llama_model_load: override %s = %" PRId64 "\n", key, v);
            break;
        }
        case LLAMA_KV_OVERRIDE_TYPE_FLOAT: {
            const double v = o->value.val_f64;
            if (id < 0 || t == GGUF_TYPE_FLOAT32) {
                gguf_set_val_f32(g, key, (float) v);
            } else if (t == GGUF_TYPE_FLOAT64) {
                gguf_set_val_f64(g, key, v);
            } else {
                LLAMA_LOG_ERROR("llama_model_load: override of '%s': float given, key has type %s\n", key, gguf_type_name(t));
                return false;
            }
            LLAMA_LOG_INFO("llama_model_load: override %s = %f\n", key, v);
            break;
        }
        case LLAMA_KV_OVERRIDE_TYPE_BOOL: {
            if (id >= 0 && t != GGUF_TYPE_BOOL) {
                LLAMA_LOG_ERROR("llama_model_load: override of '%s': bool given, key has type %s\n", key, gguf_type_name(t));
                return false;
            }
            gguf_set_val_bool(g, key, o->value.val_bool);
            LLAMA_LOG_INFO("llama_model_load: override %s = %s\n", key, o->value.val_bool ? "true" : "false");
            break;
        }
        case LLAMA_KV_OVERRIDE_TYPE_STR: {
            if (id >= 0 && t != GGUF_TYPE_STRING) {
                LLAMA_LOG_ERROR("llama_model_load: override of '%s': string given, key has type %s\n", key, gguf_type_name(t));
                return false;
            }
            char val[sizeof(o->value.val_str) + 1];
            memcpy(val, o->value.val_str, sizeof(o->value.val_str));
            val[sizeof(o->value.val_str)] = '\0';
            gguf_set_val_str(g, key, val);
            LLAMA_LOG_INFO("llama_model_load: override %s = '%s'\n", key, val);
            break;
        }
        default: LLAMA_LOG_ERROR("llama_model_load: override of '%s' has an unknown tag %d\n", key, (int) o->tag); return false;
    }
    return true;
}

static bool model_apply_overrides(struct gguf_context * g, const struct llama_model_kv_override * ov) {
    if (ov == NULL) {
        return true;
    }
    for (int i = 0; ov[i].key[0] != '\0'; i++) {
        if (i >= 4096) {
            LLAMA_LOG_ERROR("llama_model_load: kv_overrides is not terminated by an empty key\n");
            return false;
        }
        if (!model_apply_override(g, &ov[i])) {
            return false;
        }
    }
    return true;
}

// ---------------------------------------------------------------------------------------------
// hyperparameters

// Reads <arch>.<name> as an unsigned 32-bit value. required: missing is an error.
static bool hp_u32(const struct gguf_context * g, const char * arch, const char * name, uint32_t * out, bool required,
                   bool * ok) {
    char key[256];
    snprintf(key, sizeof(key), "%s.%s", arch, name);
    int64_t v;
    const int64_t id = gguf_find_key(g, key);
    if (id < 0) {
        if (required) {
            LLAMA_LOG_ERROR("llama_model_load: missing required key '%s'\n", key);
            *ok = false;
        }
        return false;
    }
    if (!llama_model_gguf_get_int(g, key, &v)) {
        *ok = false;
        return false;
    }
    if (v < 0 || v > (int64_t) UINT32_MAX) {
        LLAMA_LOG_ERROR("llama_model_load: key '%s' = %" PRId64 " is out of range\n", key, v);
        *ok = false;
        return false;
    }
    *out = (uint32_t) v;
    return true;
}

static bool hp_f32(const struct gguf_context * g, const char * arch, const char * name, float * out, bool * ok) {
    char key[256];
    snprintf(key, sizeof(key), "%s.%s", arch, name);
    if (gguf_find_key(g, key) < 0) {
        return false;
    }
    double v;
    if (!llama_model_gguf_get_float(g, key, &v)) {
        *ok = false;
        return false;
    }
    *out = (float) v;
    return true;
}

// The pooling the file asks for, causal attention, token types and classifier labels (keys of
// embedding and reranking models; absent in the others).
static void model_load_embedding_hparams(const struct gguf_context * g, const char * a, struct llama_hparams * hp, bool * ok) {
    char key[256];
    hp_u32(g, a, "pooling_type", &hp->pooling_type, false, ok);
    hp->causal_attn = true;
    snprintf(key, sizeof(key), "%s.attention.causal", a);
    const int64_t kc = gguf_find_key(g, key);
    if (kc >= 0 && gguf_get_kv_type(g, kc) == GGUF_TYPE_BOOL) {
        hp->causal_attn = gguf_get_val_bool(g, kc);
    }
    int64_t v = 0;
    if (llama_model_gguf_get_int(g, "tokenizer.ggml.token_type_count", &v) && v > 0 && v <= INT32_MAX) {
        hp->n_token_types = (uint32_t) v;
    }
    hp->n_cls_out = 1;
    snprintf(key, sizeof(key), "%s.classifier.output_labels", a);
    const int64_t kl = gguf_find_key(g, key);
    if (kl >= 0 && gguf_get_kv_type(g, kl) == GGUF_TYPE_ARRAY && gguf_get_arr_n(g, kl) > 0) {
        hp->n_cls_out = (uint32_t) gguf_get_arr_n(g, kl);
    }
}

// strict: the model will be run, so every value must be present and consistent.
// <arch>.attention.recurrent_layers (bools or integers per layer), when the file has it, says
// which layers are recurrent (otherwise the architecture's finish hook derived them).
static bool model_read_recurrent_layers(const struct gguf_context * g, const char * a, struct llama_hparams * hp) {
    char key[256];
    snprintf(key, sizeof(key), "%s.attention.recurrent_layers", a);
    const int64_t id = gguf_find_key(g, key);
    if (id < 0) {
        return true;
    }
    const enum gguf_type t = gguf_get_kv_type(g, id) == GGUF_TYPE_ARRAY ? gguf_get_arr_type(g, id) : GGUF_TYPE_COUNT;
    const size_t n = t != GGUF_TYPE_COUNT ? gguf_get_arr_n(g, id) : 0;
    if ((t != GGUF_TYPE_BOOL && t != GGUF_TYPE_INT32 && t != GGUF_TYPE_UINT8 && t != GGUF_TYPE_INT8) || n < hp->n_layer) {
        LLAMA_LOG_ERROR("llama_model_load: '%s' must be an array of bools of at least block_count (%u) entries\n", key,
                        hp->n_layer);
        return false;
    }
    const void * d = gguf_get_arr_data(g, id);
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        hp->recurrent_layers[il] = t == GGUF_TYPE_INT32 ? ((const int32_t *) d)[il] != 0 : ((const uint8_t *) d)[il] != 0;
    }
    return true;
}

static bool model_has_arch_key(const struct gguf_context * g, const char * a, const char * suffix) {
    char key[256];
    snprintf(key, sizeof(key), "%s.%s", a, suffix);
    return gguf_find_key(g, key) >= 0;
}

static bool model_load_hparams(struct llama_model * m, bool strict) {
    const struct gguf_context * g = m->gguf;
    const char * a = m->arch;
    struct llama_hparams * hp = &m->hparams;
    bool ok = true;
    memset(hp, 0, sizeof(*hp));

    hp_u32(g, a, "context_length", &hp->n_ctx_train, strict, &ok);
    hp_u32(g, a, "embedding_length", &hp->n_embd, strict, &ok);
    hp_u32(g, a, "block_count", &hp->n_layer, strict, &ok);
    if (hp->n_layer > LLAMA_MAX_LAYERS) {
        LLAMA_LOG_ERROR("llama_model_load: %s.block_count = %u exceeds %d\n", a, hp->n_layer, LLAMA_MAX_LAYERS);
        return false;
    }
    // one value, or one per layer (model-layers.c); the shared value is layer 0's
    // a model made only of experts may have none (qwen35moe): its row's finish hook decides
    if (!llama_model_hp_layers(g, a, "feed_forward_length", hp->n_layer, hp->n_ff_l, &ok) && strict && ok &&
        !model_has_arch_key(g, a, "expert_count")) {
        LLAMA_LOG_ERROR("llama_model_load: missing required key '%s.feed_forward_length'\n", a);
        ok = false;
    }
    hp->n_ff = hp->n_ff_l[0];
    hp_u32(g, a, "attention.head_count", &hp->n_head, strict, &ok);
    if (!llama_model_hp_layers(g, a, "attention.head_count_kv", hp->n_layer, hp->n_head_kv_l, &ok)) {
        for (uint32_t il = 0; il < hp->n_layer; il++) {
            hp->n_head_kv_l[il] = hp->n_head;
        }
    }
    hp->n_head_kv = hp->n_head_kv_l[0];
    const uint32_t head_default = hp->n_head > 0 ? hp->n_embd / hp->n_head : 0;
    if (!hp_u32(g, a, "attention.key_length", &hp->n_embd_head_k, false, &ok)) {
        hp->n_embd_head_k = head_default;
    }
    if (!hp_u32(g, a, "attention.value_length", &hp->n_embd_head_v, false, &ok)) {
        hp->n_embd_head_v = head_default;
    }
    if (!hp_u32(g, a, "rope.dimension_count", &hp->n_rot, false, &ok)) {
        hp->n_rot = hp->n_embd_head_k;
    }
    // Encoders and embedders: a LayerNorm epsilon stands in for the RMS one.
    const bool have_ln_eps = hp_f32(g, a, "attention.layer_norm_epsilon", &hp->f_norm_eps, &ok);
    model_load_embedding_hparams(g, a, hp, &ok);
    hp->f_norm_rms_eps = 1e-5f;
    if (!hp_f32(g, a, "attention.layer_norm_rms_epsilon", &hp->f_norm_rms_eps, &ok) && strict && !have_ln_eps) {
        LLAMA_LOG_ERROR("llama_model_load: missing required key '%s.attention.layer_norm_rms_epsilon'\n", a);
        ok = false;
    }
    hp->rope_freq_base_train = 10000.0f;
    hp_f32(g, a, "rope.freq_base", &hp->rope_freq_base_train, &ok);

    // RoPE scaling: llama.rope.scaling.{type,factor,original_context_length}, or the older
    // llama.rope.scale_linear (a linear factor).
    hp->rope_scaling_type_train = LLAMA_ROPE_SCALING_TYPE_NONE;
    float factor = 0.0f;
    char key[256];
    snprintf(key, sizeof(key), "%s.rope.scaling.type", a);
    const int64_t tid = gguf_find_key(g, key);
    if (tid >= 0) {
        const char * s = gguf_get_kv_type(g, tid) == GGUF_TYPE_STRING ? gguf_get_val_str(g, tid) : NULL;
        if (s == NULL) {
            LLAMA_LOG_ERROR("llama_model_load: key '%s' is not a string\n", key);
            ok = false;
        } else if (strcmp(s, "none") == 0) {
            hp->rope_scaling_type_train = LLAMA_ROPE_SCALING_TYPE_NONE;
        } else if (strcmp(s, "linear") == 0) {
            hp->rope_scaling_type_train = LLAMA_ROPE_SCALING_TYPE_LINEAR;
        } else if (strcmp(s, "yarn") == 0) {
            hp->rope_scaling_type_train = LLAMA_ROPE_SCALING_TYPE_YARN;
        } else if (strict) {
            LLAMA_LOG_ERROR("llama_model_load: unsupported rope scaling type '%s' (%s)\n", s, key);
            ok = false;
        }
    }
    if (!hp_f32(g, a, "rope.scaling.factor", &factor, &ok)) {
        if (hp_f32(g, a, "rope.scale_linear", &factor, &ok) && tid < 0) {
            hp->rope_scaling_type_train = LLAMA_ROPE_SCALING_TYPE_LINEAR;
        }
    }
    hp->rope_freq_scale_train = factor > 0.0f ? 1.0f / factor : 1.0f;
    if (!hp_u32(g, a, "rope.scaling.original_context_length", &hp->n_ctx_orig_yarn, false, &ok)) {
        hp->n_ctx_orig_yarn = hp->n_ctx_train;
    }
    // The architecture's own keys (arch.c), then the values it fixes or derives.
    const struct llama_arch_info * ai = m->arch_info;
    for (const struct llm_key_spec * k = ai ? ai->keys : NULL; k != NULL && k->suffix != NULL; k++) {
        void * field = (char *) hp + k->offset;
        if (k->type == LLM_KEY_U32) {
            uint32_t v = (uint32_t) k->def;
            hp_u32(g, a, k->suffix, &v, strict && k->required, &ok);
            memcpy(field, &v, sizeof(v));
        } else {
            float v = (float) k->def;
            if (!hp_f32(g, a, k->suffix, &v, &ok) && strict && k->required) {
                LLAMA_LOG_ERROR("llama_model_load: missing required key '%s.%s'\n", a, k->suffix);
                ok = false;
            }
            memcpy(field, &v, sizeof(v));
        }
    }
    if (!ok || !strict) {
        return ok;
    }
    if (ai->finish != NULL && !ai->finish(hp)) {
        return false;
    }

    // Consistency of the shape; each failure names the value.
    if (hp->n_ctx_train == 0 || hp->n_embd == 0 || hp->n_layer == 0 || hp->n_ff == 0 || hp->n_head == 0) {
        LLAMA_LOG_ERROR("llama_model_load: %s.context_length, embedding_length, block_count, "
                        "feed_forward_length and attention.head_count must be > 0\n",
                        a);
        return false;
    }
    if (hp->n_expert > 0 && (hp->n_expert_used == 0 || hp->n_expert_used > hp->n_expert)) {
        LLAMA_LOG_ERROR("llama_model_load: %s.expert_used_count = %u must be in 1..%s.expert_count = %u\n", a, hp->n_expert_used,
                        a, hp->n_expert);
        return false;
    }
    if (hp->n_expert == 0 && hp->n_expert_used > 0) {
        LLAMA_LOG_ERROR("llama_model_load: %s.expert_used_count = %u without %s.expert_count\n", a, hp->n_expert_used, a);
        return false;
    }
    if (hp->n_expert > 0 && hp->expert_gating != 0 && hp->expert_gating != LLM_EXPERT_GATING_SOFTMAX &&
        hp->expert_gating != LLM_EXPERT_GATING_SIGMOID && hp->expert_gating != LLM_EXPERT_GATING_SOFTMAX_WEIGHT) {
        LLAMA_LOG_ERROR(
            "llama_model_load: %s.expert_gating_func = %u is not supported (1: softmax, 2: sigmoid, 3: softmax of the chosen)\n",
            a, hp->expert_gating);
        return false;
    }
    if (hp->n_head_kv == 0 || hp->n_head % hp->n_head_kv != 0) {
        LLAMA_LOG_ERROR("llama_model_load: %s.attention.head_count = %u is not a multiple of "
                        "%s.attention.head_count_kv = %u\n",
                        a, hp->n_head, a, hp->n_head_kv);
        return false;
    }
    snprintf(key, sizeof(key), "%s.attention.key_length", a);
    if (gguf_find_key(g, key) < 0 && hp->n_embd % hp->n_head != 0) {
        LLAMA_LOG_ERROR("llama_model_load: %s.embedding_length = %u is not a multiple of "
                        "%s.attention.head_count = %u\n",
                        a, hp->n_embd, a, hp->n_head);
        return false;
    }
    if (hp->n_embd_head_k == 0 || hp->n_embd_head_v == 0) {
        LLAMA_LOG_ERROR("llama_model_load: head size is 0\n");
        return false;
    }
    if (hp->n_rot > hp->n_embd_head_k || hp->n_rot % 2 != 0) {
        LLAMA_LOG_ERROR("llama_model_load: %s.rope.dimension_count = %u must be even and <= the head size %u\n", a, hp->n_rot,
                        hp->n_embd_head_k);
        return false;
    }
    if (!(hp->f_norm_rms_eps > 0.0f) || !isfinite(hp->f_norm_rms_eps)) {
        LLAMA_LOG_ERROR("llama_model_load: %s.attention.layer_norm_rms_epsilon must be > 0\n", a);
        return false;
    }
    if (!(hp->rope_freq_base_train > 0.0f) || !isfinite(hp->rope_freq_base_train)) {
        LLAMA_LOG_ERROR("llama_model_load: %s.rope.freq_base must be > 0\n", a);
        return false;
    }
    if (!(hp->rope_freq_base_swa >= 0.0f) || !isfinite(hp->rope_freq_base_swa) || !(hp->rope_attn_factor >= 0.0f) ||
        !isfinite(hp->rope_attn_factor)) {
        LLAMA_LOG_ERROR("llama_model_load: %s.rope.freq_base_swa / rope.scaling.attn_factor must be finite and >= 0\n", a);
        return false;
    }
    // Sliding-window layers, per-layer heads and widths, KV sharing; recurrent layers.
    if (!llama_model_layers_init(hp, g, a)) {
        return false;
    }
    return model_read_recurrent_layers(g, a, hp);
}

// ---------------------------------------------------------------------------------------------
// tensors

struct model_loader {
    struct llama_model * m;
    const uint8_t * data;   // start of the tensor data section in memory
    size_t data_size;       // bytes available from data
    bool * used;            // [n_tensors] which file tensors were taken
};

// Creates the header of tensor `name` with exactly the shape ne (n_dims dims), viewing its bytes
// in the mapped file. required: absence is an error. NULL (logged) on any mismatch.
static struct ggml_tensor * model_tensor(struct model_loader * ld, const char * name, int n_dims, const int64_t * ne,
                                         bool required, bool * ok) {
    const struct gguf_context * g = ld->m->gguf;
    const int64_t id = gguf_find_tensor(g, name);
    if (id < 0) {
        if (required) {
            LLAMA_LOG_ERROR("llama_model_load: missing tensor '%s'\n", name);
            *ok = false;
        }
        return NULL;
    }
    const int nd = gguf_get_tensor_n_dims(g, id);
    int64_t fne[GGML_MAX_DIMS] = { 1, 1, 1, 1 };
    for (int i = 0; i < nd && i < GGML_MAX_DIMS; i++) {
        fne[i] = gguf_get_tensor_ne(g, id, i);
    }
    bool same = true;
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        const int64_t want = i < n_dims ? ne[i] : 1;
        same = same && fne[i] == want;
    }
    if (!same) {
        LLAMA_LOG_ERROR("llama_model_load: tensor '%s' has wrong shape; expected [%" PRId64 ", %" PRId64 ", %" PRId64
                        "], got [%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 "]\n",
                        name, ne[0], n_dims > 1 ? ne[1] : 1, n_dims > 2 ? ne[2] : 1, fne[0], fne[1], fne[2], fne[3]);
        *ok = false;
        return NULL;
    }
    const enum ggml_type type = gguf_get_tensor_type(g, id);
    const struct ggml_type_traits * tr = ggml_get_type_traits(type);
    if (tr == NULL || tr->to_float == NULL) {
        LLAMA_LOG_ERROR("llama_model_load: tensor '%s' has unsupported type %s (%d)\n", name, ggml_type_name(type), (int) type);
        *ok = false;
        return NULL;
    }
    const size_t offs = gguf_get_tensor_offset(g, id);
    const size_t size = gguf_get_tensor_size(g, id);
    if (offs > ld->data_size || size > ld->data_size - offs) {
        LLAMA_LOG_ERROR("llama_model_load: tensor '%s' data [%zu, %zu) lies outside the file (%zu bytes of data)\n", name, offs,
                        offs + size, ld->data_size);
        *ok = false;
        return NULL;
    }
    struct ggml_tensor * t = ggml_new_tensor(ld->m->ctx_w, type, n_dims, ne);
    if (t == NULL) {
        LLAMA_LOG_ERROR("llama_model_load: cannot create tensor '%s'\n", name);
        *ok = false;
        return NULL;
    }
    ggml_set_name(t, name);
    t->data = (void *) (ld->data + offs);
    ld->used[id] = true;
    return t;
}

// True if every value of t is finite (any type with a to_float conversion).
static bool model_tensor_is_finite(const struct ggml_tensor * t, int64_t * bad_row) {
    const struct ggml_type_traits * tr = ggml_get_type_traits(t->type);
    const int64_t ne0 = t->ne[0];
    const int64_t nrows = ggml_nrows(t);
    const size_t row_size = ggml_row_size(t->type, ne0);
    float * buf = GGML_MALLOC((size_t) ne0 * sizeof(float));
    if (buf == NULL) {
        return true; // cannot check; the load itself is not at fault
    }
    bool finite = true;
    for (int64_t r = 0; r < nrows && finite; r++) {
        const uint8_t * row = (const uint8_t *) t->data + (size_t) r * row_size;
        if (t->type == GGML_TYPE_F32) {
            memcpy(buf, row, (size_t) ne0 * sizeof(float));
        } else {
            tr->to_float(row, buf, ne0);
        }
        for (int64_t i = 0; i < ne0; i++) {
            if (!isfinite(buf[i])) {
                finite = false;
                *bad_row = r;
                break;
            }
        }
    }
    free(buf);
    return finite;
}

static bool model_progress(const struct llama_model_params * p, float v) {
    if (p->progress_callback == NULL) {
        return true;
    }
    return p->progress_callback(v, p->progress_callback_user_data);
}

// The size of symbolic dimension d (arch.h) for layer il of this model (il = n_layer: a tensor
// outside the blocks, which takes layer 0's values).
static int64_t model_dim(const struct llama_hparams * hp, uint32_t il, uint8_t d) {
    const uint32_t l = il < hp->n_layer ? il : 0;
    const int64_t n_q = (int64_t) hp->n_embd_head_k_l[l] * hp->n_head;
    const int64_t n_k = llama_hparams_n_embd_k_gqa_l(hp, l), n_v = llama_hparams_n_embd_v_gqa_l(hp, l);
    switch ((enum llm_dim) d) {
        case LLM_DIM_EMBD: return hp->n_embd;
        case LLM_DIM_VOCAB: return hp->n_vocab;
        case LLM_DIM_FF: return hp->n_ff_l[l];
        case LLM_DIM_FF2: return 2 * (int64_t) hp->n_ff_l[l];
        case LLM_DIM_Q: return n_q;
        case LLM_DIM_K: return n_k;
        case LLM_DIM_V: return n_v;
        case LLM_DIM_O: return (int64_t) hp->n_embd_head_v_l[l] * hp->n_head;
        case LLM_DIM_QKV: return n_q + n_k + n_v;
        case LLM_DIM_HEAD_K: return hp->n_embd_head_k_l[l];
        case LLM_DIM_ROT2: return hp->n_rot / 2;
        case LLM_DIM_EXPERT: return hp->n_expert;
        case LLM_DIM_FF_EXP: return hp->n_ff_exp ? hp->n_ff_exp : hp->n_ff;
        case LLM_DIM_FF_SHEXP: return hp->n_ff_shexp ? hp->n_ff_shexp : (hp->n_ff_exp ? hp->n_ff_exp : hp->n_ff);
        case LLM_DIM_Q2: return 2 * n_q;
        case LLM_DIM_SSM_CONV_K: return hp->ssm_d_conv;
        case LLM_DIM_SSM_CONV_CH: return 2 * (int64_t) hp->ssm_d_state * hp->ssm_n_group + hp->ssm_d_inner;
        case LLM_DIM_SSM_INNER: return hp->ssm_d_inner;
        case LLM_DIM_SSM_HEADS: return hp->ssm_dt_rank;
        case LLM_DIM_SSM_STATE: return hp->ssm_d_state;
        case LLM_DIM_FF_EXP2: return 2 * (int64_t) (hp->n_ff_exp ? hp->n_ff_exp : hp->n_ff);
        case LLM_DIM_PLE: return hp->n_embd_per_layer;
        case LLM_DIM_PLE_ALL: return (int64_t) hp->n_embd_per_layer * hp->n_layer;
        case LLM_DIM_CTX_TRAIN: return hp->n_ctx_train;
        case LLM_DIM_TOKEN_TYPES: return hp->n_token_types;
        case LLM_DIM_CLS_OUT: return hp->n_cls_out;
        case LLM_DIM_DENSE_2_OUT: return hp->n_dense_2_out;
        case LLM_DIM_DENSE_3_IN: return hp->n_dense_3_in;
        case LLM_DIM_HEAD: return hp->n_head;
        case LLM_DIM_FF_SHEXP_KEY: return hp->n_ff_shexp;
        default: return 1;
    }
}

// One tensor of the architecture's list (of layer il, or n_layer) into its field; false (logged)
// on a missing required one, a wrong shape, or a type the ops cannot take.
static bool model_load_spec(struct model_loader * ld, const struct llm_tensor_spec * ts, uint32_t il, const char * name,
                            void * base) {
    const struct llama_hparams * hp = &ld->m->hparams;
    int64_t ne[3] = { model_dim(hp, il, ts->ne[0]), model_dim(hp, il, ts->ne[1]), model_dim(hp, il, ts->ne[2]) };
    // a dense FFN's tensors in a model with experts, or the experts' in a dense one, stay unloaded
    if (((ts->flags & LLM_T_DENSE) && hp->n_expert > 0) || ((ts->flags & LLM_T_MOE) && hp->n_expert == 0)) {
        return true;
    }
    bool required = (ts->flags & (LLM_T_REQUIRED | LLM_T_DENSE | LLM_T_MOE)) != 0;
    if ((ts->flags & LLM_T_KV) && il < hp->n_layer && hp->kv_layer[il] == il) {
        required = true;
    }
    if ((ts->flags & LLM_T_IF_DIM) && ne[0] > 0 && (ts->n_dims < 2 || ne[1] > 0)) {
        required = true;
    }
    bool ok = true;
    struct ggml_tensor * t = model_tensor(ld, name, ts->n_dims, ne, required, &ok);
    if (ok && t != NULL && (ts->flags & LLM_T_F32) && t->type != GGML_TYPE_F32 &&
        !((ts->flags & LLM_T_F16_OK) && t->type == GGML_TYPE_F16)) {
        LLAMA_LOG_ERROR("llama_model_load: tensor '%s' must be f32%s, got %s\n", name,
                        (ts->flags & LLM_T_F16_OK) ? " or f16" : "", ggml_type_name(t->type));
        return false;
    }
    memcpy((char *) base + ts->offset, &t, sizeof(t));
    return ok;
}

// Every tensor the architecture row lists (arch.c), block by block; output tied to the
// embeddings when the file has none.
static bool model_load_arch_tensors(struct llama_model * m, struct model_loader * ld, const struct llama_model_params * params,
                                    bool * cancelled) {
    const struct llama_hparams * hp = &m->hparams;
    const struct llm_tensor_spec * specs = m->arch_info->tensors;
    char name[GGML_MAX_NAME];
    bool ok = true;
    for (const struct llm_tensor_spec * ts = specs; ok && ts->name != NULL; ts++) {
        if (!(ts->flags & LLM_T_LAYER)) {
            ok = model_load_spec(ld, ts, hp->n_layer, ts->name, m);
        }
    }
    if (ok && m->output == NULL) {
        m->output = m->tok_embd; // tied embeddings
    }
    for (uint32_t il = 0; il < hp->n_layer && ok; il++) {
        for (const struct llm_tensor_spec * ts = specs; ok && ts->name != NULL; ts++) {
            if (ts->flags & LLM_T_LAYER) {
                snprintf(name, sizeof(name), ts->name, il);
                ok = model_load_spec(ld, ts, il, name, &m->layers[il]);
            }
        }
        if (ok && !model_progress(params, 0.05f + 0.9f * (float) (il + 1) / (float) hp->n_layer)) {
            *cancelled = true;
            ok = false;
        }
    }
    return ok;
}

// Maps the file and creates every weight tensor; false (logged) on any problem or a cancel.
static bool model_load_tensors(struct llama_model * m, const char * path, const struct llama_model_params * params,
                               bool * cancelled) {
    const struct llama_hparams * hp = &m->hparams;
    struct gguf_context * g = m->gguf;
    const int64_t n_tensors = gguf_get_n_tensors(g);

    enum llama_load_mode mode = params->load_mode;
    const bool use_mmap = mode == LLAMA_LOAD_MODE_AUTO || mode == LLAMA_LOAD_MODE_MMAP || mode == LLAMA_LOAD_MODE_MMAP_MLOCK;
    const bool use_mlock = mode == LLAMA_LOAD_MODE_MLOCK || mode == LLAMA_LOAD_MODE_MMAP_MLOCK;
    if (mode < LLAMA_LOAD_MODE_AUTO || mode > LLAMA_LOAD_MODE_DIRECT_IO) {
        LLAMA_LOG_WARN("llama_model_load: unknown load_mode %d, using mmap\n", (int) mode);
    }
    if (!model_progress(params, 0.0f)) {
        *cancelled = true;
        return false;
    }
    m->map = use_mmap ? gguf_mmap_open(path) : gguf_file_read_all(path);
    if (m->map == NULL) {
        LLAMA_LOG_ERROR("llama_model_load: cannot %s '%s'\n", use_mmap ? "map" : "read", path);
        return false;
    }
    const size_t file_size = gguf_mmap_size(m->map);
    const size_t data_offset = gguf_get_data_offset(g);
    if (data_offset > file_size) {
        LLAMA_LOG_ERROR("llama_model_load: '%s' is shorter than its metadata says (changed while loading?)\n", path);
        return false;
    }
#ifndef _WIN32
    if (use_mlock && file_size > 0) {
        if (mlock(gguf_mmap_addr(m->map), file_size) == 0) {
            m->mlocked = true;
        } else {
            LLAMA_LOG_WARN("llama_model_load: mlock of %zu bytes failed; continuing unlocked\n", file_size);
        }
    }
#else
    (void) use_mlock;
#endif

    m->ctx_w = ggml_init((struct ggml_init_params) {
        .mem_size = (size_t) (n_tensors + 8) * ggml_tensor_overhead(),
        .mem_buffer = NULL,
        .no_alloc = true,
    });
    m->layers = GGML_CALLOC(hp->n_layer, sizeof(struct llama_layer));
    struct model_loader ld = {
        .m = m,
        .data = (const uint8_t *) gguf_mmap_addr(m->map) + data_offset,
        .data_size = file_size - data_offset,
        .used = GGML_CALLOC((size_t) n_tensors + 1, sizeof(bool)),
    };
    if (m->ctx_w == NULL || m->layers == NULL || ld.used == NULL) {
        LLAMA_LOG_ERROR("llama_model_load: out of memory\n");
        free(ld.used);
        return false;
    }

    bool ok = model_load_arch_tensors(m, &ld, params, cancelled);
    if (ok) {
        for (int64_t i = 0; i < n_tensors; i++) {
            if (!ld.used[i]) {
                LLAMA_LOG_WARN("llama_model_load: tensor '%s' is not used by the %s architecture\n", gguf_get_tensor_name(g, i),
                               m->arch);
            }
        }
    }
    free(ld.used);
    if (!ok) {
        return false;
    }

    if (params->check_tensors) {
        for (struct ggml_tensor * t = ggml_get_first_tensor(m->ctx_w); t != NULL; t = ggml_get_next_tensor(m->ctx_w, t)) {
            int64_t bad_row = -1;
            if (!model_tensor_is_finite(t, &bad_row)) {
                LLAMA_LOG_ERROR("llama_model_load: tensor '%s' has invalid data (NaN or inf in row %" PRId64 ")\n", t->name,
                                bad_row);
                return false;
            }
        }
    }
    if (!llama_model_place_weights(m, params)) {
        return false;
    }
    if (params->use_extra_bufts) {
        llama_model_repack_weights(m, use_mmap && !m->mlocked);
    }
    if (!model_progress(params, 1.0f)) {
        *cancelled = true;
        return false;
    }
    return true;
}

// ---------------------------------------------------------------------------------------------
// load / free

static enum llama_ftype model_guess_ftype(const struct gguf_context * g) {
    int counts[GGML_TYPE_COUNT] = { 0 };
    for (int64_t i = 0; i < gguf_get_n_tensors(g); i++) {
        const enum ggml_type t = gguf_get_tensor_type(g, i);
        if (gguf_get_tensor_n_dims(g, i) >= 2 && (int) t >= 0 && t < GGML_TYPE_COUNT) {
            counts[t]++;
        }
    }
    int best = GGML_TYPE_F32;
    for (int t = 0; t < GGML_TYPE_COUNT; t++) {
        if (counts[t] > counts[best]) {
            best = t;
        }
    }
    enum llama_ftype f;
    switch (best) {
        case GGML_TYPE_F32: f = LLAMA_FTYPE_ALL_F32; break;
        case GGML_TYPE_F16: f = LLAMA_FTYPE_MOSTLY_F16; break;
        case GGML_TYPE_BF16: f = LLAMA_FTYPE_MOSTLY_BF16; break;
        case GGML_TYPE_Q4_0: f = LLAMA_FTYPE_MOSTLY_Q4_0; break;
        case GGML_TYPE_Q4_1: f = LLAMA_FTYPE_MOSTLY_Q4_1; break;
        case GGML_TYPE_Q5_0: f = LLAMA_FTYPE_MOSTLY_Q5_0; break;
        case GGML_TYPE_Q5_1: f = LLAMA_FTYPE_MOSTLY_Q5_1; break;
        case GGML_TYPE_Q8_0: f = LLAMA_FTYPE_MOSTLY_Q8_0; break;
        case GGML_TYPE_Q2_K: f = LLAMA_FTYPE_MOSTLY_Q2_K; break;
        case GGML_TYPE_Q3_K: f = LLAMA_FTYPE_MOSTLY_Q3_K_M; break;
        case GGML_TYPE_Q4_K: f = LLAMA_FTYPE_MOSTLY_Q4_K_M; break;
        case GGML_TYPE_Q5_K: f = LLAMA_FTYPE_MOSTLY_Q5_K_M; break;
        case GGML_TYPE_Q6_K: f = LLAMA_FTYPE_MOSTLY_Q6_K; break;
        case GGML_TYPE_IQ2_XXS: f = LLAMA_FTYPE_MOSTLY_IQ2_XXS; break;
        case GGML_TYPE_IQ2_XS: f = LLAMA_FTYPE_MOSTLY_IQ2_XS; break;
        case GGML_TYPE_IQ2_S: f = LLAMA_FTYPE_MOSTLY_IQ2_S; break;
        case GGML_TYPE_IQ3_XXS: f = LLAMA_FTYPE_MOSTLY_IQ3_XXS; break;
        case GGML_TYPE_IQ3_S: f = LLAMA_FTYPE_MOSTLY_IQ3_S; break;
        case GGML_TYPE_IQ1_S: f = LLAMA_FTYPE_MOSTLY_IQ1_S; break;
        case GGML_TYPE_IQ1_M: f = LLAMA_FTYPE_MOSTLY_IQ1_M; break;
        case GGML_TYPE_IQ4_NL: f = LLAMA_FTYPE_MOSTLY_IQ4_NL; break;
        case GGML_TYPE_IQ4_XS: f = LLAMA_FTYPE_MOSTLY_IQ4_XS; break;
        case GGML_TYPE_TQ1_0: f = LLAMA_FTYPE_MOSTLY_TQ1_0; break;
        case GGML_TYPE_TQ2_0: f = LLAMA_FTYPE_MOSTLY_TQ2_0; break;
        case GGML_TYPE_MXFP4: f = LLAMA_FTYPE_MOSTLY_MXFP4_MOE; break;
        default: f = LLAMA_FTYPE_ALL_F32; break;
    }
    return (enum llama_ftype)(f | LLAMA_FTYPE_GUESSED);
}

void llama_model_free(struct llama_model * model) {
    if (model == NULL) {
        return;
    }
    if (model->magic != LLAMA_MAGIC_MODEL) {
        LLAMA_LOG_ERROR("llama_model_free: not a live llama_model (double free?)\n");
        return;
    }
    model->magic = LLAMA_MAGIC_DEAD;
    llama_adapter_lora_free_all(model);
    llama_vocab_free(model->vocab);
#ifndef _WIN32
    if (model->mlocked && model->map != NULL) {
        munlock(gguf_mmap_addr(model->map), gguf_mmap_size(model->map));
    }
#endif
    llama_model_free_buffers(model);
    free(model->repack_ts);
    ggml_free(model->ctx_fused);
    gguf_mmap_close(model->map);
    ggml_free(model->ctx_w);
    gguf_free(model->gguf);
    free(model->layers);
    free(model->meta_ids);
    free(model);
}

void llama_free_model(struct llama_model * model) { llama_model_free(model); }

struct llama_model * llama_model_load_from_file(const char * path_model, struct llama_model_params params) {
    const int64_t t_start = llama_time_us();
    if (path_model == NULL) {
        LLAMA_LOG_ERROR("llama_model_load_from_file: path_model is NULL\n");
        return NULL;
    }
    struct gguf_context * g = gguf_init_from_file(path_model, (struct gguf_init_params) { .no_alloc = true, .ctx = NULL });
    if (g == NULL) {
        LLAMA_LOG_ERROR("llama_model_load_from_file: failed to read GGUF metadata of '%s'\n", path_model);
        return NULL;
    }
    struct llama_model * m = GGML_CALLOC(1, sizeof(*m));
    if (m == NULL) {
        LLAMA_LOG_ERROR("llama_model_load_from_file: out of memory\n");
        gguf_free(g);
        return NULL;
    }
    m->magic = LLAMA_MAGIC_MODEL;
    m->gguf = g;
    m->t_start_us = t_start;
    m->vocab_only = params.vocab_only;

    bool cancelled = false;
    if (!model_apply_overrides(g, params.kv_overrides)) {
        goto fail;
    }
    const int64_t arch_id = gguf_find_key(g, "general.architecture");
    const char * arch = arch_id >= 0 && gguf_get_kv_type(g, arch_id) == GGUF_TYPE_STRING ? gguf_get_val_str(g, arch_id) : NULL;
    if (arch == NULL) {
        LLAMA_LOG_ERROR("llama_model_load: '%s' has no general.architecture string\n", path_model);
        goto fail;
    }
    snprintf(m->arch, sizeof(m->arch), "%s", arch);
    // A vocabulary can be loaded from any architecture's file; running needs a table row.
    m->arch_info = llama_arch_find(arch);
    if (!params.vocab_only && m->arch_info == NULL) {
        char names[256];
        LLAMA_LOG_ERROR("llama_model_load: unsupported architecture '%s' (supported: %s)\n", arch,
                        llama_arch_list(names, sizeof(names)));
        goto fail;
    }
    if (!model_load_hparams(m, !params.vocab_only)) {
        if (!params.vocab_only) {
            goto fail;
        }
        // A vocabulary does not need them (an architecture whose keys this version cannot read).
        LLAMA_LOG_WARN("llama_model_load: vocab_only: the '%s' hyperparameters were not all read; loading the "
                       "vocabulary only\n",
                       arch);
    }
    {
        int64_t ft;
        if (llama_model_gguf_get_int(g, "general.file_type", &ft)) {
            m->ftype = (enum llama_ftype) ft;
        } else {
            m->ftype = model_guess_ftype(g);
        }
    }
    m->vocab = llama_vocab_load(g);
    if (m->vocab == NULL) {
        LLAMA_LOG_ERROR("llama_model_load: failed to load the vocabulary of '%s'\n", path_model);
        goto fail;
    }
    {
        // The vocabulary size is the number of logits; token_embd must have one row per token.
        const int32_t n_tokens = llama_vocab_n_tokens(m->vocab);
        int64_t vs;
        char key[128];
        snprintf(key, sizeof(key), "%s.vocab_size", m->arch);
        if (llama_model_gguf_get_int(g, key, &vs) && vs != n_tokens) {
            LLAMA_LOG_WARN("llama_model_load: %s = %" PRId64 " but the vocabulary has %d tokens\n", key, vs, n_tokens);
        }
        m->hparams.n_vocab = (uint32_t) (n_tokens > 0 ? n_tokens : 0);
        if (!params.vocab_only && n_tokens <= 0) {
            LLAMA_LOG_ERROR("llama_model_load: empty vocabulary\n");
            goto fail;
        }
    }

    // Metadata listed by llama_model_meta_*: every non-array key, in file order.
    {
        const int64_t n_kv = gguf_get_n_kv(g);
        m->meta_ids = GGML_CALLOC((size_t) n_kv + 1, sizeof(int64_t));
        if (m->meta_ids == NULL) {
            LLAMA_LOG_ERROR("llama_model_load: out of memory\n");
            goto fail;
        }
        for (int64_t i = 0; i < n_kv; i++) {
            if (gguf_get_kv_type(g, i) != GGUF_TYPE_ARRAY) {
                m->meta_ids[m->n_meta++] = i;
            }
        }
    }
    for (int64_t i = 0; i < gguf_get_n_tensors(g); i++) {
        int64_t ne = 1;
        for (int d = 0; d < gguf_get_tensor_n_dims(g, i); d++) {
            ne *= gguf_get_tensor_ne(g, i, d);
        }
        m->n_params += (uint64_t) ne;
        m->n_bytes += gguf_get_tensor_size(g, i);
    }

    if (!params.vocab_only) {
        if (!model_load_tensors(m, path_model, &params, &cancelled)) {
            goto fail;
        }
    } else {
        if (!model_progress(&params, 1.0f)) {
            cancelled = true;
            goto fail;
        }
    }
    m->t_load_us = llama_time_us() - t_start;
    return m;

fail:
    if (cancelled) {
        LLAMA_LOG_INFO("llama_model_load: cancelled by the progress callback\n");
    }
    llama_model_free(m);
    return NULL;
}

struct llama_model * llama_load_model_from_file(const char * path_model, struct llama_model_params params) {
    return llama_model_load_from_file(path_model, params);
}

struct llama_model * llama_model_load_from_splits(const char ** paths, size_t n_paths, struct llama_model_params params) {
    if (paths == NULL || n_paths == 0) {
        LLAMA_LOG_ERROR("llama_model_load_from_splits: no paths given\n");
        return NULL;
    }
    if (n_paths != 1) {
        LLAMA_LOG_ERROR("llama_model_load_from_splits: split models (%zu files) are not supported\n", n_paths);
        return NULL;
    }
    return llama_model_load_from_file(paths[0], params);
}

struct llama_model * llama_model_load_from_file_ptr(FILE * file, struct llama_model_params params) {
    (void) file;
    (void) params;
    LLAMA_LOG_ERROR("llama_model_load_from_file_ptr: not supported; use llama_model_load_from_file\n");
    return NULL;
}

struct llama_model * llama_model_init_from_user(struct gguf_context * metadata, llama_model_set_tensor_data_t set_tensor_data,
                                                void * set_tensor_data_ud, struct llama_model_params params) {
    (void) metadata;
    (void) set_tensor_data;
    (void) set_tensor_data_ud;
    (void) params;
    LLAMA_LOG_ERROR("llama_model_init_from_user: not supported\n");
    return NULL;
}

void llama_model_save_to_file(const struct llama_model * model, const char * path_model) {
    if (!llama_model_checked(model, "llama_model_save_to_file")) {
        return;
    }
    if (model->vocab_only || model->map == NULL) {
        LLAMA_LOG_ERROR("llama_model_save_to_file: the model has no weights (vocab_only)\n");
        return;
    }
    struct gguf_context * out = gguf_init_empty();
    if (out == NULL) {
        LLAMA_LOG_ERROR("llama_model_save_to_file: out of memory\n");
        return;
    }
    gguf_set_kv(out, model->gguf);
    // Every tensor of the file, with its bytes from the mapping, in file order.
    const struct gguf_context * g = model->gguf;
    const uint8_t * base = (const uint8_t *) gguf_mmap_addr(model->map) + gguf_get_data_offset(g);
    struct ggml_context * tmp = ggml_init((struct ggml_init_params) {
        .mem_size = (size_t) (gguf_get_n_tensors(g) + 1) * ggml_tensor_overhead(), .mem_buffer = NULL, .no_alloc = true });
    bool ok = tmp != NULL;
    for (int64_t i = 0; ok && i < gguf_get_n_tensors(g); i++) {
        int64_t ne[GGML_MAX_DIMS] = { 1, 1, 1, 1 };
        const int nd = gguf_get_tensor_n_dims(g, i);
        for (int d = 0; d < nd; d++) {
            ne[d] = gguf_get_tensor_ne(g, i, d);
        }
        struct ggml_tensor * t = ggml_new_tensor(tmp, gguf_get_tensor_type(g, i), nd, ne);
        if (t == NULL) {
            ok = false;
            break;
        }
        ggml_set_name(t, gguf_get_tensor_name(g, i));
        t->data = (void *) (base + gguf_get_tensor_offset(g, i));
        gguf_add_tensor(out, t);
    }
    if (!ok || !gguf_write_to_file(out, path_model, false)) {
        LLAMA_LOG_ERROR("llama_model_save_to_file: failed to write '%s'\n", path_model ? path_model : "(null)");
    }
    ggml_free(tmp);
    gguf_free(out);
}

// ---------------------------------------------------------------------------------------------
// accessors

#define MODEL_OR(ret)                            \
    if (!llama_model_checked(model, __func__)) { \
        return ret;                              \
    }

const struct llama_vocab * llama_model_get_vocab(const struct llama_model * model) {
    MODEL_OR(NULL);
    return model->vocab;
}

enum llama_rope_type llama_model_rope_type(const struct llama_model * model) {
    MODEL_OR(LLAMA_ROPE_TYPE_NONE);
    if (model->arch_info == NULL) {
        return LLAMA_ROPE_TYPE_NONE;
    }
    return model->arch_info->rope == LLM_ROPE_NEOX ? LLAMA_ROPE_TYPE_NEOX : LLAMA_ROPE_TYPE_NORM;
}

int32_t llama_model_n_ctx_train(const struct llama_model * model) {
    MODEL_OR(0);
    return (int32_t) model->hparams.n_ctx_train;
}
int32_t llama_model_n_embd(const struct llama_model * model) {
    MODEL_OR(0);
    return (int32_t) model->hparams.n_embd;
}
int32_t llama_model_n_embd_inp(const struct llama_model * model) {
    MODEL_OR(0);
    return (int32_t) model->hparams.n_embd;
}
int32_t llama_model_n_embd_out(const struct llama_model * model) {
    MODEL_OR(0);
    return (int32_t) model->hparams.n_embd;
}
int32_t llama_model_n_layer(const struct llama_model * model) {
    MODEL_OR(0);
    return (int32_t) model->hparams.n_layer;
}
int32_t llama_model_n_layer_nextn(const struct llama_model * model) {
    MODEL_OR(0);
    return 0;
}
int32_t llama_model_n_head(const struct llama_model * model) {
    MODEL_OR(0);
    return (int32_t) model->hparams.n_head;
}
int32_t llama_model_n_head_kv(const struct llama_model * model) {
    MODEL_OR(0);
    return (int32_t) model->hparams.n_head_kv;
}
int32_t llama_model_n_swa(const struct llama_model * model) {
    MODEL_OR(0);
    return (int32_t) model->hparams.n_swa;
}
float llama_model_rope_freq_scale_train(const struct llama_model * model) {
    MODEL_OR(0.0f);
    return model->hparams.rope_freq_scale_train;
}
uint32_t llama_model_n_cls_out(const struct llama_model * model) {
    MODEL_OR(0);
    return model->hparams.n_cls_out;
}

const char * llama_model_cls_label(const struct llama_model * model, uint32_t i) {
    MODEL_OR(NULL);
    char key[256];
    snprintf(key, sizeof(key), "%s.classifier.output_labels", model->arch);
    const int64_t k = model->gguf ? gguf_find_key(model->gguf, key) : -1;
    if (k < 0 || gguf_get_kv_type(model->gguf, k) != GGUF_TYPE_ARRAY || gguf_get_arr_type(model->gguf, k) != GGUF_TYPE_STRING ||
        i >= gguf_get_arr_n(model->gguf, k)) {
        return NULL;
    }
    return gguf_get_arr_str(model->gguf, k, i);
}

int32_t llama_n_ctx_train(const struct llama_model * model) { return llama_model_n_ctx_train(model); }
int32_t llama_n_embd(const struct llama_model * model) { return llama_model_n_embd(model); }
int32_t llama_n_layer(const struct llama_model * model) { return llama_model_n_layer(model); }
int32_t llama_n_head(const struct llama_model * model) { return llama_model_n_head(model); }

bool llama_model_has_encoder(const struct llama_model * model) {
    MODEL_OR(false);
    return false;
}
bool llama_model_has_decoder(const struct llama_model * model) {
    MODEL_OR(false);
    return true;
}
llama_token llama_model_decoder_start_token(const struct llama_model * model) {
    MODEL_OR(LLAMA_TOKEN_NULL);
    return LLAMA_TOKEN_NULL;
}
// True when some layers carry recurrent state: all of them (recurrent) or some (hybrid).
static bool model_recurrent_layers(const struct llama_model * model, bool all) {
    const struct llama_hparams * hp = &model->hparams;
    uint32_t n = 0;
    for (uint32_t il = 0; il < hp->n_layer && il < LLAMA_MAX_LAYERS; il++) {
        n += hp->recurrent_layers[il];
    }
    return all ? n > 0 && n == hp->n_layer : n > 0 && n < hp->n_layer;
}
bool llama_model_is_recurrent(const struct llama_model * model) {
    MODEL_OR(false);
    return model_recurrent_layers(model, true);
}
bool llama_model_is_hybrid(const struct llama_model * model) {
    MODEL_OR(false);
    return model_recurrent_layers(model, false);
}
bool llama_model_is_diffusion(const struct llama_model * model) {
    MODEL_OR(false);
    return false;
}

enum llama_ftype llama_model_ftype(const struct llama_model * model) {
    MODEL_OR(LLAMA_FTYPE_ALL_F32);
    return model->ftype;
}
uint64_t llama_model_size(const struct llama_model * model) {
    MODEL_OR(0);
    return model->n_bytes;
}
uint64_t llama_model_n_params(const struct llama_model * model) {
    MODEL_OR(0);
    return model->n_params;
}

int32_t llama_model_desc(const struct llama_model * model, char * buf, size_t buf_size) {
    MODEL_OR(-1);
    char size_label[32];
    const double n = (double) model->n_params;
    if (n <= 0) {
        snprintf(size_label, sizeof(size_label), "?B");
    } else if (n < 1e9) {
        snprintf(size_label, sizeof(size_label), "%.0fM", n / 1e6);
    } else {
        snprintf(size_label, sizeof(size_label), "%.1fB", n / 1e9);
    }
    const char * ft = llama_ftype_name((enum llama_ftype)(model->ftype & ~LLAMA_FTYPE_GUESSED));
    return snprintf(buf, buf_size, "%s %s %s", model->arch, size_label, ft ? ft : "?");
}

const char * llama_model_chat_template(const struct llama_model * model, const char * name) {
    MODEL_OR(NULL);
    char key[256];
    if (name == NULL) {
        snprintf(key, sizeof(key), "tokenizer.chat_template");
    } else {
        snprintf(key, sizeof(key), "tokenizer.chat_template.%s", name);
    }
    const int64_t id = gguf_find_key(model->gguf, key);
    if (id < 0 || gguf_get_kv_type(model->gguf, id) != GGUF_TYPE_STRING) {
        return NULL;
    }
    return gguf_get_val_str(model->gguf, id);
}

// ---------------------------------------------------------------------------------------------
// metadata as strings (the format llama.cpp uses: ints in decimal, floats with %f, bools
// true/false, strings as stored; arrays are not listed)

int32_t llama_gguf_kv_to_str(const struct gguf_context * g, int64_t id, char * buf, size_t buf_size) {
    char tmp[64];
    const char * s = tmp;
    switch (gguf_get_kv_type(g, id)) {
        case GGUF_TYPE_UINT8:
        case GGUF_TYPE_INT8:
        case GGUF_TYPE_UINT16:
        case GGUF_TYPE_INT16:
        case GGUF_TYPE_UINT32:
        case GGUF_TYPE_INT32:
        case GGUF_TYPE_INT64: snprintf(tmp, sizeof(tmp), "%" PRId64, gguf_int_at(g, id)); break;
        case GGUF_TYPE_UINT64: snprintf(tmp, sizeof(tmp), "%" PRIu64, gguf_get_val_u64(g, id)); break;
        case GGUF_TYPE_FLOAT32: snprintf(tmp, sizeof(tmp), "%f", (double) gguf_get_val_f32(g, id)); break;
        case GGUF_TYPE_FLOAT64: snprintf(tmp, sizeof(tmp), "%f", gguf_get_val_f64(g, id)); break;
        case GGUF_TYPE_BOOL: s = gguf_get_val_bool(g, id) ? "true" : "false"; break;
        case GGUF_TYPE_STRING: s = gguf_get_val_str(g, id); break;
        default: return -1;
    }
    if (s == NULL) {
        return -1;
    }
    if (buf == NULL || buf_size == 0) {
        return (int32_t) strlen(s);
    }
    return snprintf(buf, buf_size, "%s", s);
}

int32_t llama_model_meta_val_str(const struct llama_model * model, const char * key, char * buf, size_t buf_size) {
    MODEL_OR(-1);
    if (key == NULL) {
        return -1;
    }
    const int64_t id = gguf_find_key(model->gguf, key);
    if (id < 0) {
        if (buf != NULL && buf_size > 0) {
            buf[0] = '\0';
        }
        return -1;
    }
    return llama_gguf_kv_to_str(model->gguf, id, buf, buf_size);
}

int32_t llama_model_meta_count(const struct llama_model * model) {
    MODEL_OR(-1);
    return model->n_meta;
}

int32_t llama_model_meta_key_by_index(const struct llama_model * model, int32_t i, char * buf, size_t buf_size) {
    MODEL_OR(-1);
    if (i < 0 || i >= model->n_meta) {
        if (buf != NULL && buf_size > 0) {
            buf[0] = '\0';
        }
        return -1;
    }
    const char * k = gguf_get_key(model->gguf, model->meta_ids[i]);
    if (buf == NULL || buf_size == 0) {
        return (int32_t) strlen(k);
    }
    return snprintf(buf, buf_size, "%s", k);
}

int32_t llama_model_meta_val_str_by_index(const struct llama_model * model, int32_t i, char * buf, size_t buf_size) {
    MODEL_OR(-1);
    if (i < 0 || i >= model->n_meta) {
        if (buf != NULL && buf_size > 0) {
            buf[0] = '\0';
        }
        return -1;
    }
    return llama_gguf_kv_to_str(model->gguf, model->meta_ids[i], buf, buf_size);
}

const char * llama_model_meta_key_str(enum llama_model_meta_key key) {
    switch (key) {
        case LLAMA_MODEL_META_KEY_SAMPLING_SEQUENCE: return "general.sampling.sequence";
        case LLAMA_MODEL_META_KEY_SAMPLING_TOP_K: return "general.sampling.top_k";
        case LLAMA_MODEL_META_KEY_SAMPLING_TOP_P: return "general.sampling.top_p";
        case LLAMA_MODEL_META_KEY_SAMPLING_MIN_P: return "general.sampling.min_p";
        case LLAMA_MODEL_META_KEY_SAMPLING_XTC_PROBABILITY: return "general.sampling.xtc_probability";
        case LLAMA_MODEL_META_KEY_SAMPLING_XTC_THRESHOLD: return "general.sampling.xtc_threshold";
        case LLAMA_MODEL_META_KEY_SAMPLING_TEMP: return "general.sampling.temp";
        case LLAMA_MODEL_META_KEY_SAMPLING_PENALTY_LAST_N: return "general.sampling.penalty_last_n";
        case LLAMA_MODEL_META_KEY_SAMPLING_PENALTY_REPEAT: return "general.sampling.penalty_repeat";
        case LLAMA_MODEL_META_KEY_SAMPLING_MIROSTAT: return "general.sampling.mirostat";
        case LLAMA_MODEL_META_KEY_SAMPLING_MIROSTAT_TAU: return "general.sampling.mirostat_tau";
        case LLAMA_MODEL_META_KEY_SAMPLING_MIROSTAT_ETA: return "general.sampling.mirostat_eta";
        default: return NULL;
    }
}
