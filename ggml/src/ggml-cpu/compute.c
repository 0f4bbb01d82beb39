// compute.c — op dispatch for the CPU executor, per-node thread counts and scratch sizes. The
// CPU facts (core count, instruction-set features) are in cpu-features.c.
#include "cpu-impl.h"
#include "quants.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---------------------------------------------------------------------------------------------
// dispatch

bool ggml_cpu_compute_forward(const struct ggml_compute_params * params, struct ggml_tensor * node) {
    switch (node->op) {
        case GGML_OP_NONE:
        case GGML_OP_RESHAPE:
        case GGML_OP_VIEW:
        case GGML_OP_PERMUTE:
        case GGML_OP_TRANSPOSE: return true; // metadata only
        case GGML_OP_DUP: ggml_compute_forward_dup(params, node); return true;
        case GGML_OP_CONT: ggml_compute_forward_dup(params, node); return true;
        case GGML_OP_CPY: ggml_compute_forward_cpy(params, node); return true;
        case GGML_OP_ADD: ggml_compute_forward_add(params, node); return true;
        case GGML_OP_SUB: ggml_compute_forward_sub(params, node); return true;
        case GGML_OP_MUL: ggml_compute_forward_mul(params, node); return true;
        case GGML_OP_DIV: ggml_compute_forward_div(params, node); return true;
        case GGML_OP_SCALE: ggml_compute_forward_scale(params, node); return true;
        case GGML_OP_RMS_NORM: ggml_compute_forward_rms_norm(params, node); return true;
        case GGML_OP_NORM: ggml_compute_forward_norm(params, node); return true;
        case GGML_OP_SILU: ggml_compute_forward_silu(params, node); return true;
        case GGML_OP_GELU: ggml_compute_forward_gelu(params, node); return true;
        case GGML_OP_TANH: ggml_compute_forward_tanh(params, node); return true;
        case GGML_OP_SIGMOID: ggml_compute_forward_sigmoid(params, node); return true;
        case GGML_OP_SOFTPLUS: ggml_compute_forward_softplus(params, node); return true;
        case GGML_OP_CLAMP: ggml_compute_forward_clamp(params, node); return true;
        case GGML_OP_L2_NORM: ggml_compute_forward_l2_norm(params, node); return true;
        case GGML_OP_SSM_CONV: ggml_compute_forward_ssm_conv(params, node); return true;
        case GGML_OP_GATED_DELTA_NET: ggml_compute_forward_gated_delta_net(params, node); return true;
        case GGML_OP_LORA_ADD: ggml_compute_forward_lora_add(params, node); return true;
        case GGML_OP_SWIGLU: ggml_compute_forward_swiglu(params, node); return true;
        case GGML_OP_MUL_MAT: ggml_compute_forward_mul_mat(params, node); return true;
        case GGML_OP_SOFT_MAX: ggml_compute_forward_soft_max(params, node); return true;
        case GGML_OP_ROPE: ggml_compute_forward_rope(params, node); return true;
        case GGML_OP_DIAG_MASK_INF: ggml_compute_forward_diag_mask_inf(params, node); return true;
        case GGML_OP_GET_ROWS: ggml_compute_forward_get_rows(params, node); return true;
        case GGML_OP_SET_ROWS: ggml_compute_forward_set_rows(params, node); return true;
        case GGML_OP_SUM_ROWS: ggml_compute_forward_sum_rows(params, node); return true;
        case GGML_OP_ARGMAX: ggml_compute_forward_argmax(params, node); return true;
        case GGML_OP_CONCAT: ggml_compute_forward_concat(params, node); return true;
        case GGML_OP_FLASH_ATTN_EXT: ggml_compute_forward_flash_attn_ext(params, node); return true;
        case GGML_OP_ARGSORT: ggml_compute_forward_argsort(params, node); return true;
        case GGML_OP_TOP_K: ggml_compute_forward_top_k(params, node); return true;
        case GGML_OP_MUL_MAT_ID: ggml_compute_forward_mul_mat_id(params, node); return true;
        case GGML_OP_COUNT: break;
    }
    if (params->ith == 0) {
        GGML_LOG_ERROR("ggml_graph_compute: op %s (%d) of node '%s' (%s) has no CPU kernel", ggml_op_name(node->op),
                       (int) node->op, node->name, ggml_type_name(node->type));
    }
    return false;
}

size_t ggml_cpu_work_size(const struct ggml_tensor * node, int n_threads) {
    switch (node->op) {
        case GGML_OP_MUL_MAT: return ggml_cpu_work_size_mul_mat(node, n_threads);
        case GGML_OP_SOFT_MAX: return ggml_cpu_work_size_soft_max(node, n_threads);
        case GGML_OP_FLASH_ATTN_EXT: return ggml_cpu_work_size_flash_attn_ext(node, n_threads);
        case GGML_OP_ARGSORT: return ggml_cpu_work_size_argsort(node, n_threads);
        case GGML_OP_MUL_MAT_ID: return ggml_cpu_work_size_mul_mat_id(node, n_threads);
        case GGML_OP_GATED_DELTA_NET: return ggml_cpu_work_size_gated_delta_net(node, n_threads);
        case GGML_OP_LORA_ADD: return ggml_cpu_work_size_lora_add(node, n_threads);
        default: return 0;
    }
}

// Below this much estimated work (about one element-op each, ~0.3-1 ns) a node runs on one
// thread: meeting the other threads at a barrier costs ~0.2-1 us on an idle machine and
// far more on a busy one.
#define GGML_CPU_MIN_WORK_PER_TASK 4096

// Fewest elements per thread of a split elementwise op (add, mul, silu, swiglu, ...).
#define GGML_CPU_EW_MIN_UNIT 512

// Independent pieces node's kernel splits its work into (rows, heads x queries, ...): more
// threads than this would only idle until the next barrier.
static int64_t ggml_cpu_n_units(const struct ggml_tensor * node) {
    switch (node->op) {
        case GGML_OP_MUL_MAT:
        case GGML_OP_MUL_MAT_ID:
        case GGML_OP_DUP:
        case GGML_OP_CONT:
        case GGML_OP_CPY: return ggml_nelements(node); // tiles of rows x columns; contiguous copies split bytes
        case GGML_OP_GET_ROWS: return ggml_nelements(node->src[1]);
        case GGML_OP_SET_ROWS:
        case GGML_OP_SUM_ROWS:
        case GGML_OP_ARGMAX:
        case GGML_OP_ARGSORT:
        case GGML_OP_TOP_K:
        case GGML_OP_ROPE:
        case GGML_OP_SOFT_MAX: return ggml_nrows(node->src[0]);
        case GGML_OP_SSM_CONV: return (node->ne[0] + 15) / 16 * node->ne[2];  // blocks of 16 channels x sequences
        case GGML_OP_GATED_DELTA_NET: return node->src[2]->ne[1] * node->src[2]->ne[3]; // heads x sequences
        case GGML_OP_LORA_ADD: return node->src[3]->ne[2]; // phase 2's panels of outputs
        case GGML_OP_ADD:
        case GGML_OP_SUB:
        case GGML_OP_MUL:
        case GGML_OP_DIV:
        case GGML_OP_SCALE:
        case GGML_OP_SILU:
        case GGML_OP_GELU:
        case GGML_OP_TANH:
        case GGML_OP_SIGMOID:
        case GGML_OP_SOFTPLUS:
        case GGML_OP_CLAMP:
        case GGML_OP_SWIGLU:
            // flat element ranges across rows (ggml_cpu_ew_split), so one long row splits too;
            // a share under GGML_CPU_EW_MIN_UNIT floats saves less than the barrier costs
            return ggml_nelements(node) / GGML_CPU_EW_MIN_UNIT;
        default: return ggml_nrows(node); // FLASH_ATTN_EXT: [Dv, heads, queries, seqs]: heads x queries
    }
}

int ggml_cpu_n_tasks_max(const struct ggml_tensor * node, int n_threads) {
    if (n_threads <= 1 || ggml_op_is_view(node->op)) {
        return 1;
    }
    const int64_t units = ggml_cpu_n_units(node);
    return units < 1 ? 1 : (units < n_threads ? (int) units : n_threads);
}

int ggml_cpu_n_tasks(const struct ggml_tensor * node, int n_threads) {
    const int max = ggml_cpu_n_tasks_max(node, n_threads);
    if (max <= 1) {
        return 1;
    }
    int64_t work;
    switch (node->op) {
        case GGML_OP_MUL_MAT:
        case GGML_OP_MUL_MAT_ID: {
            // Multiply-adds: K * M * N (b's rows times a's rows); int8/SIMD dots do ~8 per element-op.
            const struct ggml_tensor * a = node->src[0];
            work = a->ne[0] * ggml_nelements(node) / 8;
            break;
        }
        case GGML_OP_FLASH_ATTN_EXT: {
            // Per query row and KV cell: a dot of D and an axpy of Dv, plus an exp and the
            // online-softmax bookkeeping: several element-ops per element, not 1/8.
            const struct ggml_tensor * k = node->src[1];
            work = 2 * ggml_nelements(node->src[0]) * k->ne[1];
            break;
        }
        case GGML_OP_SOFT_MAX:
        case GGML_OP_SILU:
        case GGML_OP_GELU:
        case GGML_OP_TANH:
        case GGML_OP_SIGMOID:
        case GGML_OP_SOFTPLUS:
        case GGML_OP_SWIGLU:
            work = 4 * ggml_nelements(node); // an exp or tanh per element
            break;
        case GGML_OP_ROPE: work = 2 * ggml_nelements(node); break;
        case GGML_OP_LORA_ADD:
            // multiply-adds: r (K + M) per column, as MUL_MAT's ~8 per element-op
            work = node->src[2]->ne[1] * (node->src[1]->ne[0] + node->ne[0]) * node->ne[1] / 8;
            break;
        case GGML_OP_SSM_CONV: work = ggml_nelements(node) * node->src[1]->ne[0]; break;
        case GGML_OP_GATED_DELTA_NET:
            // per token and value head: four passes over the S x S state
            work = 4 * ggml_nelements(node->src[2]) * node->src[2]->ne[0];
            break;
        case GGML_OP_ARGMAX:
        case GGML_OP_TOP_K:
        case GGML_OP_SUM_ROWS:
        case GGML_OP_CPY:
        case GGML_OP_SET_ROWS: work = ggml_nelements(node->src[0]); break;
        case GGML_OP_ARGSORT:
            work = 8 * ggml_nelements(node->src[0]); // log2(n) merge passes
            break;
        default: work = ggml_nelements(node); break;
    }
    const int64_t n = work / GGML_CPU_MIN_WORK_PER_TASK;
    if (n <= 1) {
        return 1;
    }
    return n < max ? (int) n : max;
}
