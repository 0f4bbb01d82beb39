// llama-context.h — internal layout of a context (context.c), its KV cache (kv-cache.c), the
// validated batch (batch.c) and the transformer graph builder (graph.c). Not installed.
//
// One decode: batch.c validates the llama_batch into a llama_batch_prep (positions filled in,
// output flags resolved); context.c cuts it into ubatches of at most n_ubatch tokens, asks the
// cache for free cells, graph.c builds the graph for the ubatch (writing K/V into the cells and
// attending over the first n_kv cells through a mask), ggml-alloc places its intermediates in
// one reused buffer, the thread pool computes it, and the output rows are copied out.
#ifndef LLAMA_CONTEXT_H
#define LLAMA_CONTEXT_H

#include "llama-model.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LLAMA_MAGIC_CONTEXT 0x4c435458u  // "LCTX"
#define LLAMA_MAGIC_MEMORY  0x4c4b5643u  // "LKVC"

// Most sequences a context may hold (llama_max_parallel_sequences).
#define LLAMA_MAX_SEQ 256

// Recurrent state beside the KV cache (memory-recurrent.c), for the layers of a hybrid or
// state-space model that carry a fixed-size state per sequence instead of K/V rows: slot s holds
// sequence s (n_seq_max slots).
struct llama_memory_recurrent {
    uint32_t n_slots;               // = n_seq_max
    uint32_t n_layer;
    llama_pos *pos_min, *pos_max; // [n_slots] positions the state has consumed; -1: empty (zero state)
    uint32_t n_embd_r, n_embd_s;    // floats per slot: convolution state, recurrence state
    struct ggml_context * ctx;      // headers of r_l / s_l
    struct ggml_tensor ** r_l; // [n_layer] F32 [n_embd_r, n_slots] (a slot: [channels, d_conv - 1]), NULL for attention layers
    struct ggml_tensor ** s_l; // [n_layer] F32 [n_embd_s, n_slots], NULL for attention layers
    ggml_backend_buffer_t bufs[2]; // the CPU's layers, an offloaded device's (owned)
    int n_bufs;
    // the split of the current batch into equal-length sequence groups (grown, never shrunk)
    int32_t * order; // [n_tokens] batch rows grouped by sequence, batch order within each
    int32_t *seq_first, *seq_len; // [n_slots] per sequence: its span of order[], tokens left
    int32_t * seq_done; // [n_slots] tokens of the span already given out
    llama_seq_id * seqs; // [n_slots] sequences of the batch in order of appearance
    int32_t n_seqs_batch;
    int32_t * rows; // [n_tokens] rows of the ubatches, in processing order
    int32_t n_rows; // rows given out so far
    llama_token * u_token; // ubatch gathers [n_ubatch] (embd: [n_ubatch * n_embd])
    float * u_embd;
    llama_pos * u_pos;
    int32_t * u_n_seq_id;
    llama_seq_id ** u_seq_id;
    int8_t * u_output;
    uint32_t * u_cells;
    llama_seq_id * u_seqs; // [n_slots] sequences of the ubatch
    size_t cap_tokens;
};

// The KV cache: llama_memory_t points at this (embedded in its context).
struct llama_memory_i {
    uint32_t magic; // LLAMA_MAGIC_MEMORY while its context lives
    struct llama_context * lctx; // owner (its thread pool re-rotates shifted keys)
    uint32_t size; // cells (= n_ctx)
    uint32_t n_seq_max;
    uint32_t n_words; // 64-bit words per cell's sequence set
    llama_pos * pos; // [size] position of each cell, -1 when empty
    uint64_t * seq; // [size * n_words] sequence-id bitsets
    uint32_t n_used; // non-empty cells
    uint32_t * seq_page; // [n_seq_max] page (LLAMA_KV_PAGE cells) a sequence last took cells from, or UINT32_MAX
    uint32_t n_layer; // slots: the model's layers that own KV (all, without sharing)
    enum ggml_type type_k, type_v;
    uint32_t n_embd_k_gqa, n_embd_v_gqa; // the widest slot's (layers may differ: llama_hparams_n_embd_k_gqa_l)
    uint32_t n_embd_head_k, n_embd_head_v, n_head_kv;
    uint32_t * slot_of_layer; // [model n_layer] slot a model layer writes / reads
    uint32_t * layer_of_slot; // [n_layer] model layer owning each slot
    struct ggml_context * ctx; // headers of k_l / v_l
    struct ggml_tensor ** k_l; // [n_layer] slot s: [n_embd_k_gqa of its layer, size] of type_k, row per cell
    struct ggml_tensor ** v_l; // [n_layer] each [n_embd_v_gqa of its layer, size] of type_v, row per cell
    ggml_backend_buffer_t bufs[2]; // the K and V data: the CPU's blocks, an offloaded device's (owned)
    int n_bufs;
    struct llama_memory_recurrent * rs; // recurrent state of a hybrid model's other layers, or NULL (owned)
    // The window cache (swa_full off, kv-cache-swa.c): the sliding-window layers' slots hold
    // swa->size rows, whose cells swa keeps (positions and sequences only: swa has no slots of
    // its own); the cells here record every position (the full layers' rows, pos_max, and what
    // the window cells must hold). NULL: every slot has size rows over these cells.
    struct llama_memory_i * swa; // (owned)
    uint8_t * slot_swa; // [n_layer] 1: the slot's rows are swa's cells
    uint32_t n_swa; // in swa: a cell every sequence of which has moved n_swa positions past it is free again (0: main)
};

// A validated batch: every array filled in (owned by the context, reused between calls).
struct llama_batch_prep {
    int32_t n_tokens;
    const llama_token * token; // [n_tokens] or NULL when embd is used
    const float * embd; // [n_tokens * n_embd] or NULL
    llama_pos * pos; // [n_tokens]
    int32_t * n_seq_id; // [n_tokens]
    llama_seq_id ** seq_id; // [n_tokens] pointers into the caller's batch (or seq0)
    int8_t * output; // [n_tokens] 1: this row's logits / embedding are returned
    int32_t n_outputs;
    size_t cap; // rows allocated
    llama_seq_id seq0; // target of seq_id rows when the batch gives none
};

// One graph's worth of tokens: a slice of a llama_batch_prep plus the cells it writes.
struct llama_ubatch {
    int32_t n_tokens;
    const llama_token * token;
    const float * embd;
    const llama_pos * pos;
    const int32_t * n_seq_id;
    llama_seq_id * const * seq_id;
    const int8_t * output;
    int32_t n_outputs; // rows flagged in output
    bool all_rows; // compute the final hidden state of every row (pooling)
    const uint32_t * cells; // [n_tokens] KV cells the rows are written to
    uint32_t n_kv; // cells attended over: [0, n_kv)
    const uint32_t * cells_swa; // [n_tokens] window cells of the sliding layers (kv.swa), or NULL
    uint32_t n_kv_swa; // window cells attended over: [0, n_kv_swa)
    // recurrent models: the rows are n_seqs sequences of n_seq_tokens tokens each, sequence
    // after sequence (0: a plain ubatch)
    uint32_t n_seqs, n_seq_tokens;
    const llama_seq_id * seqs; // [n_seqs]
    // llama_encode: attention runs over enc_grp groups of enc_len slots each (encode.c), with K
    // and V taken from the graph in F32, never from the cache (0: a decode through the cache)
    uint32_t enc_len, enc_grp;
    // attention without flash attention, per sequence (attn-seq.c): grp_n groups (the ubatch's
    // sequences) of grp_len token slots, each over grp_cells cells of its own sequence (0: over
    // the cells [0, n_kv), masked)
    uint32_t grp_n, grp_len, grp_cells;
};

// Tensors of a built graph the context fills before and reads after computing.
struct llama_graph_result {
    struct ggml_cgraph * gf;
    struct ggml_tensor * inp_tokens; // I32 [n_tokens] or NULL
    struct ggml_tensor * inp_embd; // F32 [n_embd, n_tokens] or NULL
    struct ggml_tensor * inp_pos; // I32 [n_tokens]
    struct ggml_tensor * inp_kv_idx; // I32 [n_tokens] cells to write
    struct ggml_tensor * inp_mask; // F32 [n_kv, n_tokens]
    struct ggml_tensor * inp_mask_swa; // F32 [n_kv (n_kv_swa with kv.swa), n_tokens] within the sliding window, or NULL
    struct ggml_tensor * inp_out_ids; // I32 [n_rows] rows kept for the output, or NULL (all)
    struct ggml_tensor * inp_pos_out; // I32 [n_rows] positions of those rows, or NULL (a builder's)
    struct ggml_tensor * inp_kv_range; // I32 [n_kv] = 0..n_kv-1 (quantized caches), or NULL
    struct ggml_tensor * inp_kv_idx_swa; // I32 [n_tokens] window cells to write (kv.swa), or NULL
    struct ggml_tensor * inp_kv_range_swa; // I32 [n_kv_swa] (quantized caches with kv.swa), or NULL
    struct ggml_tensor * inp_s_ids; // I32 [n_seqs] recurrent state slots of the ubatch's sequences, or NULL
    struct ggml_tensor * inp_enc_slots; // I32 [enc_len * enc_grp] token of each encode slot, or NULL (slot = token)
    struct ggml_tensor * inp_enc_rows; // I32 [n_tokens] slot of each token, or NULL (slot = token)
    struct ggml_tensor * inp_grp_toks; // I32 [grp_len * grp_n] token of each group slot, or NULL (no groups)
    struct ggml_tensor * inp_grp_rows; // I32 [n_tokens] group slot of each token, or NULL
    struct ggml_tensor * inp_grp_cells; // I32 [grp_cells * grp_n] KV cells of each group, or NULL
    struct ggml_tensor * inp_grp_mask; // F32 [grp_cells, grp_len, 1, grp_n], or NULL
    struct ggml_tensor * inp_grp_mask_swa; // F32 [grp_cells, grp_len, 1, grp_n] within the window, or NULL
    struct ggml_tensor * t_embd; // F32 [n_embd, n_rows] final-norm hidden states, or NULL
    struct ggml_tensor * t_logits; // F32 [n_vocab, n_rows], or NULL
};

struct llama_context {
    uint32_t magic; // LLAMA_MAGIC_CONTEXT; LLAMA_MAGIC_DEAD once freed
    const struct llama_model * model; // not owned; not touched by llama_free
    struct llama_context_params params; // as resolved at init
    uint32_t n_ctx, n_batch, n_ubatch, n_seq_max;
    int32_t n_threads, n_threads_batch;
    bool flash_attn;
    bool causal_attn;
    bool embeddings;
    bool warmup;
    enum llama_pooling_type pooling;

    // RoPE as used (model values unless overridden by the context params)
    float rope_freq_base, rope_freq_scale;
    float yarn_ext_factor, yarn_attn_factor, yarn_beta_fast, yarn_beta_slow;
    uint32_t n_ctx_orig;

    struct llama_memory_i kv;

    // computation, reused across calls
    ggml_backend_t backend_cpu; // always (owned)
    ggml_backend_t backend_dev; // the model's offload device, or NULL (owned)
    ggml_backend_sched_t sched; // over [backend_dev,] backend_cpu (owned)
    int n_threads_max; // max(n_threads, n_threads_batch)
    ggml_abort_callback abort_cb;
    void * abort_data;
    void * inp_scratch[2]; // host staging for inputs of device tensors (two at once: masks)
    size_t inp_scratch_size[2];
    struct ggml_context * ctx_compute; // graph metadata arena, reset per graph
    size_t graph_size; // node capacity of a graph
    // The last decode graph, built and allocated, reused while its key repeats (context.c);
    // anything else that resets ctx_compute or allocates with the scheduler clears graph_reusable.
    struct llama_graph_result graph_res;
    struct llama_graph_key {
        int32_t n_tokens, n_outputs;
        uint32_t n_kv, n_kv_swa, n_seqs, enc_len, enc_grp, grp_n, grp_len, grp_cells;
        bool embd_input, all_rows, embeddings;
    } graph_key;
    bool graph_reusable;

    // per-decode scratch (grown, never shrunk)
    struct llama_batch_prep prep;
    uint32_t * cells; // [prep.cap] cells given to the batch's tokens
    uint32_t * cells_swa; // [prep.cap] their window cells (kv.swa; taken ubatch by ubatch)
    size_t cells_cap;
    llama_pos * seq_next; // [n_seq_max] scratch for batch validation
    llama_pos * seq_last; // [n_seq_max]
    int32_t * seq_count; // [n_seq_max]
    int32_t * enc_idx; // llama_encode's slot layout (encode.c)
    size_t enc_idx_cap;

    // results of the last decode
    float * logits; // [n_outputs][n_vocab]
    size_t logits_cap; // rows allocated
    float * embd; // [n_outputs][n_embd] (pooling NONE)
    size_t embd_cap;
    float * embd_seq; // [n_seq_max][n_embd] pooled (pooling != NONE)
    int32_t * embd_seq_n; // [n_seq_max] rows pooled into each (0: none)
    int32_t * output_ids; // [n_batch tokens] batch row -> output row, -1
    size_t output_ids_cap;
    int32_t n_outputs; // output rows of the last decode
    int32_t n_batch_tokens; // tokens of the last decode
    bool have_logits; // the last decode succeeded and computed logits
    bool have_embd; // ... and embeddings (NONE pooling)
    bool have_embd_seq; // ... and pooled embeddings

    // performance counters
    int64_t t_start_us;
    int64_t t_load_us;
    int64_t t_p_eval_us;
    int64_t t_eval_us;
    int32_t n_p_eval;
    int32_t n_eval;
    int32_t n_reused;

    // adapters (adapter-lora.c, adapter-cvec.c)
    struct llama_lora_slot * loras; // [n_loras] LoRA adapters and scales in use (owned array)
    int32_t n_loras;
    struct llama_lora_seq * lora_seq; // [n_lora_seq] adapters set on single sequences (owned array)
    int32_t n_lora_seq;
    float * lora_seq_scratch; // staging of their per-row scales (owned)
    llama_pos * alora_start; // [n_seq_max] aLoRAs on sequence s apply from position alora_start[s] (owned; NULL: all 0)
    size_t lora_seq_scratch_n;
    size_t graph_size_base; // graph_size without adapters (0 until adapters first grow it)
    struct ggml_context * cvec_ctx; // header of cvec (owned), or NULL
    ggml_backend_buffer_t cvec_buf; // its data (owned), or NULL
    struct ggml_tensor * cvec; // [n_embd, n_layer] control vector per layer, or NULL
    int32_t cvec_il_start, cvec_il_end; // the layers it applies to (inclusive)
};

// ctx if it is a live context, else NULL (logged as func's error).
struct llama_context * llama_context_checked(const struct llama_context * ctx, const char * func);

// Computes gf through the context's scheduler (CPU work on n_threads); GGML_STATUS_*.
enum ggml_status llama_context_compute(struct llama_context * ctx, struct ggml_cgraph * gf, int n_threads);
// Allocates gf (a new graph) through the scheduler; false (logged) on failure.
bool llama_context_alloc_graph(struct llama_context * ctx, struct ggml_cgraph * gf);
// Writes n bytes of host data into input t (wherever it lives), or does nothing if t got no memory.
void llama_context_set_input(struct llama_context * ctx, struct ggml_tensor * t, const void * data, size_t n);

// ---- attn-seq.c ----

// Sets ub's groups (grp_n, grp_len, grp_cells) when attention without flash attention is cheaper
// per sequence (each sequence's tokens over its own cells) than over the cells [0, n_kv) masked;
// else leaves them 0.
void llama_attn_seq_plan(const struct llama_context * ctx, struct llama_ubatch * ub);
// Fills the group inputs of res (token slots, rows, cells, masks) for ub; false (logged) when out of memory.
bool llama_attn_seq_set_inputs(struct llama_context * ctx, const struct llama_ubatch * ub, const struct llama_graph_result * res);
// Whether a cell at position pj is visible from a token at position p of the same sequence
// (causal: pj <= p), and in *in_window whether also within the sliding window of n_swa.
static inline bool llama_attn_visible(llama_pos pj, llama_pos p, bool causal, llama_pos n_swa, bool swa_sym, bool * in_window) {
    const bool vis = pj >= 0 && (!causal || pj <= p);
    // in 64 bits: positions may reach INT32_MAX and an empty cell holds -1
    const int64_t d = (int64_t) p - pj;
    *in_window = vis && (swa_sym ? d <= n_swa / 2 && -d <= n_swa / 2 : d < n_swa && -d < n_swa);
    return vis;
}

// ---- kv-cache.c ----

// Bytes of K and V data for n_ctx cells (the sliding-window layers' for n_ctx_swa cells; 0: n_ctx).
size_t llama_kv_cache_bytes(const struct llama_hparams * hp, uint32_t n_ctx, uint32_t n_ctx_swa, enum ggml_type type_k,
                            enum ggml_type type_v);
// Allocates and zeroes the cache, the sliding-window layers with n_ctx_swa window cells (0: n_ctx,
// no window cache); false (logged) on failure.
bool llama_kv_cache_init(struct llama_memory_i * kv, struct llama_context * lctx, const struct llama_model * model,
                         uint32_t n_ctx, uint32_t n_ctx_swa, uint32_t n_seq_max, enum ggml_type type_k, enum ggml_type type_v);
// Frees what init allocated; safe on a zeroed or half-initialised cache.
void llama_kv_cache_free(struct llama_memory_i * kv);
// Empty cells.
uint32_t llama_kv_cache_n_free(const struct llama_memory_i * kv);
// Cells per page: with several sequences, each takes its cells a page at a time, so that a page
// (and a flash-attention block, GGML_FA_BLOCK cells) holds one sequence and attention over one
// sequence's cells never walks another's. One sequence's cells stay lowest-first and contiguous.
#define LLAMA_KV_PAGE 64
// Picks n empty cells into cells, token i's in the page its first sequence (seq_id[i][0]; NULL:
// lowest first) is filling, else in an empty page, else the lowest empty cell; false if there
// are fewer than n. Changes only the pages remembered per sequence.
bool llama_kv_cache_find_slot(struct llama_memory_i * kv, uint32_t n, llama_seq_id * const * seq_id, uint32_t * cells);
// Gives an empty cell a position and sequences.
void llama_kv_cache_cell_set(struct llama_memory_i * kv, uint32_t cell, llama_pos pos, int32_t n_seq, llama_seq_id * const seq);
// Empties a cell.
void llama_kv_cache_cell_clear(struct llama_memory_i * kv, uint32_t cell);
// One past the highest non-empty cell, rounded up to a multiple of 32 (capped at size).
uint32_t llama_kv_cache_n_kv(const struct llama_memory_i * kv);
// True if cell holds seq s.
static inline bool llama_kv_cache_seq_has(const struct llama_memory_i * kv, uint32_t cell, llama_seq_id s) {
    return (kv->seq[(size_t) cell * kv->n_words + (uint32_t) s / 64] >> ((uint32_t) s % 64)) & 1u;
}

// ---- kv-cache-swa.c: the window cache ----

// Window cells for the sliding-window layers: PAD(min(n_ctx, n_swa * n_seq_max + n_ubatch), 256)
// as llama.cpp sizes them, or 0 when they keep n_ctx cells (swa_full, no causal sliding layers,
// a recurrent hybrid, or a window no smaller than the context).
uint32_t llama_kv_cache_swa_cells(const struct llama_model * model, bool swa_full, uint32_t n_ctx, uint32_t n_seq_max,
                                  uint32_t n_ubatch);
// Picks window cells for the n tokens of a ubatch (positions pos, sequences seq_id): empty cells,
// else cells out of the window of every sequence they hold (let go first, and with them each
// such sequence's older cells, so a sequence's window cells stay contiguous in position); false
// if there are not enough.
bool llama_kv_cache_swa_find_slot(struct llama_memory_i * swa, uint32_t n, const llama_pos * pos, llama_seq_id * const * seq_id,
                                  const int32_t * n_seq_id, uint32_t * cells);
// Whether removing [p0, p1) of seq_id (-1: all) from kv leaves every remaining sequence's window
// cells complete: each position the main cells hold within the window of the sequence's next
// position is also in kv->swa. False (logged) when it would not; true without a window cache.
bool llama_kv_cache_swa_seq_rm_ok(const struct llama_memory_i * kv, llama_seq_id seq_id, llama_pos p0, llama_pos p1);

// ---- memory-recurrent.c ----

// Creates the recurrent state of the model's recurrent layers (hp->recurrent_layers) for
// n_seq_max sequences, zeroed; NULL (logged) on failure.
struct llama_memory_recurrent * llama_memory_recurrent_init(const struct llama_model * model, uint32_t n_seq_max);
// Frees it (NULL-safe).
void llama_memory_recurrent_free(struct llama_memory_recurrent * rs);
// Bytes of state one sequence holds (all layers), whatever the context length.
size_t llama_memory_recurrent_seq_bytes(const struct llama_hparams * hp);
// llama_memory_* on the recurrent part: whether seq_rm can remove [p0, p1) of seq_id (-1: all)
// without cutting a state mid-way, and the removal itself.
bool llama_memory_recurrent_seq_rm_ok(const struct llama_memory_recurrent * rs, llama_seq_id seq_id, llama_pos p0, llama_pos p1);
void llama_memory_recurrent_seq_rm(struct llama_memory_recurrent * rs, llama_seq_id seq_id, llama_pos p0, llama_pos p1);
void llama_memory_recurrent_clear(struct llama_memory_recurrent * rs, bool data);
void llama_memory_recurrent_seq_cp(struct llama_memory_recurrent * rs, llama_seq_id src, llama_seq_id dst, llama_pos p0,
                                   llama_pos p1);
void llama_memory_recurrent_seq_keep(struct llama_memory_recurrent * rs, llama_seq_id seq_id);
// Moves the positions of seq_id's state by delta (d == 0) or divides them by d.
void llama_memory_recurrent_seq_move(struct llama_memory_recurrent * rs, llama_seq_id seq_id, llama_pos p0, llama_pos p1,
                                     llama_pos delta, int d);
// Checks the prepared batch against the states (one sequence per token, positions continuing
// each state) and plans its ubatches; 0 ok, -1 invalid (logged).
int32_t llama_memory_recurrent_batch_plan(struct llama_context * ctx);
// The next ubatch of the plan (at most n_ubatch tokens): n_seqs sequences of equal length;
// false when the batch is done. Its KV cells are set.
bool llama_memory_recurrent_next_ubatch(struct llama_context * ctx, struct llama_ubatch * ub);
// Before computing ub: zeroes the state of its sequences that start afresh.
void llama_memory_recurrent_ubatch_begin(struct llama_context * ctx, const struct llama_ubatch * ub);
// After computing ub: its sequences' states now end at its last positions.
void llama_memory_recurrent_ubatch_done(struct llama_context * ctx, const struct llama_ubatch * ub);
// After the whole batch: moves the output rows (logits, embeddings) from processing order to
// batch order; false (logged) when out of memory.
bool llama_memory_recurrent_outputs_to_batch_order(struct llama_context * ctx);

// ---- graph.c ----

// Builds the forward graph of ub in ctx->ctx_compute; false (logged) if it cannot be built.
bool llama_graph_build(struct llama_context * ctx, const struct llama_ubatch * ub, struct llama_graph_result * res);
// Builds the graph that rotates the keys of n cells by delta[i] positions (for seq_add / seq_div);
// *inp_cells (I32 [n]) and *inp_delta (I32 [n]) are filled by the caller after allocation. swa:
// the cells are window cells (kv.swa): only the sliding layers' rows; else the other layers' rows.
struct ggml_cgraph * llama_graph_build_k_shift(struct llama_context * ctx, uint32_t n, bool swa, struct ggml_tensor ** inp_cells,
                                               struct ggml_tensor ** inp_delta);

// ---- encode.c ----

// Marks every row of ctx->prep an output and checks it can be encoded (positions, no cached
// tokens in its sequences); false (logged) if not.
bool llama_encode_prepare(struct llama_context * ctx);
// Lays the rows of ctx->prep out for the encoder's attention: one group of *len slots per
// sequence (shorter ones padded) when that costs less attention than one group of all rows
// (a token sees the rows of its sequence); *len and *grp are set; false (logged) when out of memory.
bool llama_encode_layout(struct llama_context * ctx, uint32_t * len, uint32_t * grp);
// Fills the encode inputs of ub's graph: slot <-> token maps and the [len, len, 1, grp] masks.
void llama_encode_set_inputs(struct llama_context * ctx, const struct llama_ubatch * ub, const struct llama_graph_result * res);

// ---- pooling.c ----

// Clears the pooled sums before a decode.
void llama_pool_begin(struct llama_context * ctx);
// Pools the final hidden states rows [n_tokens, n_embd] of ub into their sequences.
void llama_pool_rows(struct llama_context * ctx, const struct llama_ubatch * ub, const float * rows);
// Completes the pooled embeddings (MEAN's averages, RANK's classifier head); false (logged) on failure.
bool llama_pool_finish(struct llama_context * ctx);
// Whether model can pool with pt (RANK needs a classifier head); false logged.
bool llama_pool_check(const struct llama_model * model, enum llama_pooling_type pt);

// ---- batch.c ----

// Validates batch and fills ctx->prep; 0 ok, -1 invalid (logged with the reason).
int32_t llama_batch_prepare(struct llama_context * ctx, const struct llama_batch * batch);

#ifdef __cplusplus
}
#endif

#endif // LLAMA_CONTEXT_H
