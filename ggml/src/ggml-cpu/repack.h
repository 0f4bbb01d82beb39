// repack.h — weights laid out once, at load time, for the CPU GEMM of gemm.h.
//
// mul_mat otherwise unpacks every 16-row panel of a quantized weight matrix each time it runs
// (cheap for a prompt, where a panel meets hundreds of columns, but most of the work when one
// token is generated). A repacked copy holds the panels ready: per 32-element block the 16 rows'
// levels interleaved as the micro-kernel loads them (q4_0 / q4_1 as nibbles, q8_0 as bytes)
// and their fp16 scales (and minimums) after them: exactly as many bytes as the GGUF layout
// (the K-quants and iq4_xs keep a header of decoded scales per superblock; q2_K, q3_K, iq4_nl
// and iq4_xs are written straight from the rows, gemm.h: GGML_GEMM_RP_*).
// Results are bit for bit those of the unpacked path.
//
// Usage (model loader, per 2D weight that mul_mat uses as its first operand):
//
//   size_t n = ggml_cpu_repack_size(t);        // 0: this type/shape/CPU has no packed layout
//   if (n) {
//       void * buf = aligned_alloc(64, n);     // owned by the caller
//       ggml_cpu_repack(t, buf);               // writes the copy; t->extra = buf from now on
//   }
//   ...                                        // mul_mat now reads only the copy (even with
//                                              // the GEMM switched off): t's stored pages may
//                                              // be given back (madvise) unless another op
//                                              // reads them (get_rows of tied embeddings)
//   ggml_cpu_repack_clear(t); free(buf);       // before t or buf goes away
//
// Or, for a whole model:
//
//   void * rp = ggml_cpu_repack_all(weights, n, n_threads);  // NULL: nothing repacked
//   ...
//   ggml_cpu_repack_free(weights, n, rp);
//
// A copy can also be made of several weights stacked (ggml_cpu_repack_parts: Q, K and V of a
// layer as one matrix), so that one matmul does the work of several; the loader gives the fused
// tensor a header of its own and ggml_cpu_repack_all_cb the parts it is made of.
//
// The buffer starts with a header that names the layout; mul_mat uses the copy only when the
// header matches t's type and shape and the selected kernel set (GGML_CPU_VARIANT) has the
// kernel, and falls back to t->data otherwise.
#ifndef GGML_CPU_REPACK_H
#define GGML_CPU_REPACK_H

#include "../ggml-impl.h"

#ifdef __cplusplus
extern "C" {
#endif

// Bytes of the repacked copy of t (header included), or 0 if t cannot be repacked here (type,
// shape, kernel set, or GGML_CPU_GEMM=0).
size_t ggml_cpu_repack_size(const struct ggml_tensor * t);
// Writes the repacked copy of t into buf (ggml_cpu_repack_size(t) bytes, 64-byte aligned) and
// sets t->extra = buf. Returns false (t unchanged) if t cannot be repacked.
bool ggml_cpu_repack(struct ggml_tensor * t, void * buf);
// Writes into buf the repacked copy of t made of the rows of parts[0..n_parts) one after the other
// (same type and row length as t, each a whole number of 16-row panels, rows adding up to t's):
// one matmul then does the work of n_parts (e.g. Q, K and V), bit for bit. t->data is not read.
bool ggml_cpu_repack_parts(struct ggml_tensor * t, struct ggml_tensor * const * parts, int n_parts, void * buf);
// Detaches the copy from t (t->extra = NULL if it pointed at one).
void ggml_cpu_repack_clear(struct ggml_tensor * t);
// The panels of t's repacked copy, or NULL if t has none usable by the selected kernels. Experts
// stacked in dim 2 (mul_mat_id: [K, M, n_as], M a multiple of 16, contiguous) use the copy of the
// [K, M * n_as] matrix of all their rows (a header viewing t's data), handed over by setting
// t->extra to that copy: expert e's panels start at panel e * M / 16.
const void * ggml_cpu_repack_panels(const struct ggml_tensor * t);
// Bytes of one 16-row panel of a repacked copy of t (0 if t's type has no repacked layout).
size_t ggml_cpu_repack_panel_bytes(const struct ggml_tensor * t);

// Repacks every tensor of ts[0..n) that can be (ggml_cpu_repack_size > 0; NULL entries and
// repeats are skipped) into one buffer it allocates, on n_threads threads. Returns the buffer,
// owned by the caller (ggml_cpu_repack_free), or NULL if nothing was repacked.
void * ggml_cpu_repack_all(struct ggml_tensor * const * ts, int n, int n_threads);
// Called from a worker thread for each tensor before its copy is written (done false: a loader
// can fault its stored pages in at once) and after (done true: it can let them go, so that the
// peak memory stays near one copy of the model). A tensor of more than a few MiB is handed over
// chunk by chunk instead: each call gets a tensor describing some of its rows.
typedef void (*ggml_cpu_repack_done_t)(struct ggml_tensor * t, bool done, void * data);
// The tensors a fused weight is made of (n_parts 0: the tensor stands for itself).
struct ggml_cpu_repack_fused {
    struct ggml_tensor * parts[4];
    int n_parts;
};
// ggml_cpu_repack_all, with ts[i] made of fused[i]'s parts where fused (may be NULL) says so,
// calling done(s, false/true, done_data) around the repacking for each tensor s whose stored
// rows are read (ts[i] itself, or its parts).
void * ggml_cpu_repack_all_cb(struct ggml_tensor * const * ts, int n, int n_threads, const struct ggml_cpu_repack_fused * fused,
                              ggml_cpu_repack_done_t done, void * done_data);
// Detaches the copies made by ggml_cpu_repack_all from ts[0..n) and frees buf (NULL-safe).
void ggml_cpu_repack_free(struct ggml_tensor * const * ts, int n, void * buf);

#ifdef __cplusplus
}
#endif

#endif // GGML_CPU_REPACK_H
