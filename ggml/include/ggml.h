// ggml.h — the tensor core of llama_py: an arena context, strided tensors, views,
// op constructors that record a computation DAG. Computing a graph on the CPU: ggml-cpu.h.
//
// Usage:
//
//   struct ggml_init_params p = { 16*1024*1024, NULL, false };
//   struct ggml_context * ctx = ggml_init(p);
//   struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3); // K=4, M=3
//   struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 2); // K=4, N=2
//   ... fill a->data, b->data ...
//   struct ggml_tensor * c = ggml_mul_mat(ctx, a, b);                   // [M=3, N=2]
//   struct ggml_cgraph * gf = ggml_new_graph(ctx);
//   ggml_build_forward_expand(gf, c);
//   ggml_graph_compute_with_ctx(ctx, gf, 2);
//   ggml_free(ctx);
//
// Conventions: ne[0] is the innermost (fastest varying) dimension; nb[i] is the stride of
// dimension i in bytes. Constructors return NULL and log the reason on bad shapes or types.
#ifndef GGML_H
#define GGML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32) && !defined(__MINGW32__)
#ifdef GGML_BUILD
#define GGML_API __declspec(dllexport) extern
#else
#define GGML_API __declspec(dllimport) extern
#endif
#else
#define GGML_API __attribute__((visibility("default"))) extern
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define GGML_ABI_VERSION        2
#define GGML_MAX_DIMS           4
#define GGML_MAX_SRC            10
#define GGML_MAX_OP_PARAMS      64
#define GGML_MAX_NAME           64
#define GGML_MEM_ALIGN          64
#define GGML_DEFAULT_GRAPH_SIZE 2048

// x rounded up to a multiple of n (any n > 0).
#define GGML_PAD(x, n) (((x) + (n) - 1) / (n) * (n))
// Marks a parameter or variable as deliberately unused.
#define GGML_UNUSED(x) (void) (x)
// Reports a broken internal invariant through the abort hook (never for caller input).
#define GGML_ASSERT(x)                                \
    do {                                              \
        if (!(x)) ggml_abort(__FILE__, __LINE__, #x); \
    } while (0)

// Half-precision storage types.
typedef uint16_t ggml_fp16_t;
typedef struct {
    uint16_t bits;
} ggml_bf16_t;

// Element / block types; the numbers are the GGUF on-disk type ids.
enum ggml_type {
    GGML_TYPE_F32 = 0,
    GGML_TYPE_F16 = 1,
    GGML_TYPE_Q4_0 = 2,
    GGML_TYPE_Q4_1 = 3,
    // 4 and 5 (Q4_2, Q4_3) were removed from the format
    GGML_TYPE_Q5_0 = 6,
    GGML_TYPE_Q5_1 = 7,
    GGML_TYPE_Q8_0 = 8,
    GGML_TYPE_Q8_1 = 9,
    GGML_TYPE_Q2_K = 10,
    GGML_TYPE_Q3_K = 11,
    GGML_TYPE_Q4_K = 12,
    GGML_TYPE_Q5_K = 13,
    GGML_TYPE_Q6_K = 14,
    GGML_TYPE_Q8_K = 15,
    GGML_TYPE_IQ2_XXS = 16,
    GGML_TYPE_IQ2_XS = 17,
    GGML_TYPE_IQ3_XXS = 18,
    GGML_TYPE_IQ1_S = 19,
    GGML_TYPE_IQ4_NL = 20,
    GGML_TYPE_IQ3_S = 21,
    GGML_TYPE_IQ2_S = 22,
    GGML_TYPE_IQ4_XS = 23,
    GGML_TYPE_I8 = 24,
    GGML_TYPE_I16 = 25,
    GGML_TYPE_I32 = 26,
    GGML_TYPE_I64 = 27,
    GGML_TYPE_F64 = 28,
    GGML_TYPE_IQ1_M = 29,
    GGML_TYPE_BF16 = 30,
    // 31..33 (Q4_0_4_4, Q4_0_4_8, Q4_0_8_8) were removed from the format
    GGML_TYPE_TQ1_0 = 34,
    GGML_TYPE_TQ2_0 = 35,
    // 36..38 (IQ4_NL_4_4, IQ4_NL_4_8, IQ4_NL_8_8) were removed from the format
    GGML_TYPE_MXFP4 = 39,
    GGML_TYPE_COUNT = 40,
};

// The operation that produced a tensor.
enum ggml_op {
    GGML_OP_NONE = 0,
    GGML_OP_DUP,
    GGML_OP_ADD,
    GGML_OP_SUB,
    GGML_OP_MUL,
    GGML_OP_DIV,
    GGML_OP_SCALE,
    GGML_OP_RMS_NORM,
    GGML_OP_NORM,
    GGML_OP_SILU,
    GGML_OP_GELU,
    GGML_OP_SWIGLU,
    GGML_OP_MUL_MAT,
    GGML_OP_SOFT_MAX,
    GGML_OP_ROPE,
    GGML_OP_DIAG_MASK_INF,
    GGML_OP_GET_ROWS,
    GGML_OP_SET_ROWS,
    GGML_OP_SUM_ROWS,
    GGML_OP_ARGMAX,
    GGML_OP_CONCAT,
    GGML_OP_CPY,
    GGML_OP_CONT,
    GGML_OP_RESHAPE,
    GGML_OP_VIEW,
    GGML_OP_PERMUTE,
    GGML_OP_TRANSPOSE,
    GGML_OP_FLASH_ATTN_EXT,
    GGML_OP_TANH,
    GGML_OP_MUL_MAT_ID,
    GGML_OP_ARGSORT,
    GGML_OP_TOP_K,
    GGML_OP_SIGMOID,
    GGML_OP_SOFTPLUS,
    GGML_OP_L2_NORM,
    GGML_OP_SSM_CONV,
    GGML_OP_GATED_DELTA_NET,
    GGML_OP_CLAMP,
    GGML_OP_LORA_ADD,
    GGML_OP_COUNT,
};

// Result of a graph computation.
enum ggml_status {
    GGML_STATUS_ALLOC_FAILED = -2,
    GGML_STATUS_FAILED = -1,
    GGML_STATUS_SUCCESS = 0,
    GGML_STATUS_ABORTED = 1,
};

// Severity passed to the log callback.
enum ggml_log_level {
    GGML_LOG_LEVEL_NONE = 0,
    GGML_LOG_LEVEL_DEBUG = 1,
    GGML_LOG_LEVEL_INFO = 2,
    GGML_LOG_LEVEL_WARN = 3,
    GGML_LOG_LEVEL_ERROR = 4,
    GGML_LOG_LEVEL_CONT = 5,
};

// RoPE modes: NORMAL rotates adjacent pairs (x0,x1); NEOX rotates (x[i], x[i + n_dims/2]).
#define GGML_ROPE_TYPE_NORMAL 0
#define GGML_ROPE_TYPE_NEOX   2

// Tensor flags.
enum ggml_tensor_flag {
    GGML_TENSOR_FLAG_INPUT = 1,
    GGML_TENSOR_FLAG_OUTPUT = 2,
    GGML_TENSOR_FLAG_PARAM = 4,
};

// Called with each log line; text ends with a newline.
typedef void (*ggml_log_callback)(enum ggml_log_level level, const char * text, void * user_data);
// Called when an internal invariant fails; the default prints and aborts.
typedef void (*ggml_abort_hook)(const char * file, int line, const char * message);
// Polled between graph nodes; returning true stops the computation (GGML_STATUS_ABORTED).
typedef bool (*ggml_abort_callback)(void * data);

// Arena parameters: mem_buffer NULL means the context allocates (and frees) mem_size bytes.
struct ggml_init_params {
    size_t mem_size;   // bytes
    void * mem_buffer; // caller-owned buffer or NULL
    bool no_alloc;   // true: tensors get no data (data == NULL), only metadata
};

// An n-dimensional strided tensor; a view shares its view_src's data.
struct ggml_tensor {
    enum ggml_type type;
    struct ggml_backend_buffer * buffer; // the buffer holding data, or NULL (a plain context's memory)
    int64_t ne[GGML_MAX_DIMS];  // number of elements per dimension
    size_t nb[GGML_MAX_DIMS];  // stride in bytes per dimension
    enum ggml_op op;
    int32_t op_params[GGML_MAX_OP_PARAMS / sizeof(int32_t)];
    int32_t flags;              // enum ggml_tensor_flag bits
    struct ggml_tensor * src[GGML_MAX_SRC];
    struct ggml_tensor * view_src;  // tensor whose data this one views, or NULL
    size_t view_offs;               // byte offset into view_src's data
    void * data;
    char name[GGML_MAX_NAME];
    void * extra;                   // backend-specific, owned by the backend
    char padding[8];
};

struct ggml_context;
struct ggml_cgraph;
struct ggml_threadpool;

// Converts a value to/from a row of a type; k is the element count.
typedef void (*ggml_to_float_t)(const void * x, float * y, int64_t k);
typedef void (*ggml_from_float_t)(const float * x, void * y, int64_t k);

// Static description of a type; to_float / from_float_ref are NULL where unsupported.
struct ggml_type_traits {
    const char * type_name;
    int64_t blck_size;          // elements per block
    size_t type_size;          // bytes per block
    bool is_quantized;
    ggml_to_float_t to_float;
    ggml_from_float_t from_float_ref;  // reference (bit-exact with GGUF tools) quantizer
};

// ---- logging, abort hook, ABI ----

// Sets the log callback (NULL restores the default: warnings and errors to stderr).
GGML_API void ggml_log_set(ggml_log_callback callback, void * user_data);
// The current log callback (the default one if none is set) and its user data; either may be NULL.
GGML_API void ggml_log_get(ggml_log_callback * callback, void ** user_data);
// Formats a message and hands it to the current log callback (ggml_log_set), with a newline
// appended when the text does not end in one: the one logging path of ggml and the llama layer.
GGML_API void ggml_log_internal(enum ggml_log_level level, const char * fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;
// Replaces the hook called on internal invariant failures (NULL restores the default).
GGML_API void ggml_set_abort_hook(ggml_abort_hook hook);
// Calls the abort hook with file, line and the failed invariant, then aborts (GGML_ASSERT's target).
GGML_API void ggml_abort(const char * file, int line, const char * message);
// ABI version of this library (GGML_ABI_VERSION at build time).
GGML_API int ggml_abi_version(void);
// sizeof a public struct by name ("ggml_tensor", "ggml_init_params", ...); 0 if unknown.
GGML_API size_t ggml_abi_struct_size(const char * struct_name);
// offsetof a field of a public struct; (size_t)-1 if unknown.
GGML_API size_t ggml_abi_field_offset(const char * struct_name, const char * field_name);

// ---- types ----

// Traits of a type; NULL for an unknown or unsupported id.
GGML_API const struct ggml_type_traits * ggml_get_type_traits(enum ggml_type type);
// Quantizes nrows rows of n_per_row floats of src into dst as type, from element start (a row
// boundary; dst advances by whole rows); imatrix (n_per_row column weights, or NULL) guides the
// quantizers that use importance (IQ4_NL, IQ4_XS), the others ignore it. Returns the bytes
// written, 0 (logged) if the type has no quantizer or start is not at a row.
GGML_API size_t ggml_quantize_chunk(enum ggml_type type, const float * src, void * dst, int64_t start, int64_t nrows,
                                    int64_t n_per_row, const float * imatrix);
// True for the types whose quantizers need an importance matrix (the IQ3 / IQ2 / IQ1 codebooks).
GGML_API bool ggml_quantize_requires_imatrix(enum ggml_type type);
// "f32", "q4_0", ...; "NONE" for unknown ids.
GGML_API const char * ggml_type_name(enum ggml_type type);
// Bytes per block (per element for non-block types).
GGML_API size_t ggml_type_size(enum ggml_type type);
// Elements per block (1 for non-block types).
GGML_API int64_t ggml_blck_size(enum ggml_type type);
// Bytes of a row of ne elements (ne must be a multiple of the block size).
GGML_API size_t ggml_row_size(enum ggml_type type, int64_t ne);
// True for block-quantized types.
GGML_API bool ggml_is_quantized(enum ggml_type type);
// "ADD", "MUL_MAT", ...
GGML_API const char * ggml_op_name(enum ggml_op op);

// ---- fp16 / bf16 ----

// Exact IEEE half -> float.
GGML_API float ggml_fp16_to_fp32(ggml_fp16_t x);
// float -> IEEE half, round to nearest even.
GGML_API ggml_fp16_t ggml_fp32_to_fp16(float x);
// Converts n halves to floats.
GGML_API void ggml_fp16_to_fp32_row(const ggml_fp16_t * x, float * y, int64_t n);
// Converts n floats to halves.
GGML_API void ggml_fp32_to_fp16_row(const float * x, ggml_fp16_t * y, int64_t n);
// bf16 -> float.
GGML_API float ggml_bf16_to_fp32(ggml_bf16_t x);
// float -> bf16, round to nearest even (NaN stays NaN).
GGML_API ggml_bf16_t ggml_fp32_to_bf16(float x);
// Converts n bf16 to floats.
GGML_API void ggml_bf16_to_fp32_row(const ggml_bf16_t * x, float * y, int64_t n);
// Converts n floats to bf16.
GGML_API void ggml_fp32_to_bf16_row(const float * x, ggml_bf16_t * y, int64_t n);

// ---- context ----

// Creates an arena; NULL (logged) if the buffer cannot be allocated. Free with ggml_free.
GGML_API struct ggml_context * ggml_init(struct ggml_init_params params);
// Frees the arena and everything in it; NULL-safe.
GGML_API void ggml_free(struct ggml_context * ctx);
// Forgets every object in the arena (memory is reused).
GGML_API void ggml_reset(struct ggml_context * ctx);
// Bytes of the arena in use.
GGML_API size_t ggml_used_mem(const struct ggml_context * ctx);
// Bytes of arena needed per tensor object (excluding data).
GGML_API size_t ggml_tensor_overhead(void);
// Bytes of arena needed by a graph of the default size.
GGML_API size_t ggml_graph_overhead(void);
// Bytes of arena needed by a graph of `size` nodes.
GGML_API size_t ggml_graph_overhead_custom(size_t size, bool grads);
// Whether new tensors get data.
GGML_API bool ggml_get_no_alloc(struct ggml_context * ctx);
// Changes whether new tensors get data.
GGML_API void ggml_set_no_alloc(struct ggml_context * ctx, bool no_alloc);
// First tensor of the context (iteration order = creation order), or NULL.
GGML_API struct ggml_tensor * ggml_get_first_tensor(const struct ggml_context * ctx);
// Next tensor after `tensor` in the same context, or NULL.
GGML_API struct ggml_tensor * ggml_get_next_tensor(const struct ggml_context * ctx, struct ggml_tensor * tensor);
// Tensor named `name` in ctx, or NULL.
GGML_API struct ggml_tensor * ggml_get_tensor(struct ggml_context * ctx, const char * name);

// ---- tensors ----

// New tensor with n_dims dims of sizes ne[0..n_dims-1]; NULL on bad args or full arena.
GGML_API struct ggml_tensor * ggml_new_tensor(struct ggml_context * ctx, enum ggml_type type, int n_dims, const int64_t * ne);
// 1-D tensor.
GGML_API struct ggml_tensor * ggml_new_tensor_1d(struct ggml_context * ctx, enum ggml_type type, int64_t ne0);
// 2-D tensor.
GGML_API struct ggml_tensor * ggml_new_tensor_2d(struct ggml_context * ctx, enum ggml_type type, int64_t ne0, int64_t ne1);
// 3-D tensor.
GGML_API struct ggml_tensor * ggml_new_tensor_3d(struct ggml_context * ctx, enum ggml_type type, int64_t ne0, int64_t ne1,
                                                 int64_t ne2);
// 4-D tensor.
GGML_API struct ggml_tensor * ggml_new_tensor_4d(struct ggml_context * ctx, enum ggml_type type, int64_t ne0, int64_t ne1,
                                                 int64_t ne2, int64_t ne3);
// 1-element F32 tensor holding value.
GGML_API struct ggml_tensor * ggml_new_f32(struct ggml_context * ctx, float value);
// 1-element I32 tensor holding value.
GGML_API struct ggml_tensor * ggml_new_i32(struct ggml_context * ctx, int32_t value);
// Tensor with the same type and shape as src (new data).
GGML_API struct ggml_tensor * ggml_dup_tensor(struct ggml_context * ctx, const struct ggml_tensor * src);
// Tensor viewing all of src's data with the same shape.
GGML_API struct ggml_tensor * ggml_view_tensor(struct ggml_context * ctx, struct ggml_tensor * src);

// Sets the name (truncated to GGML_MAX_NAME-1); returns tensor.
GGML_API struct ggml_tensor * ggml_set_name(struct ggml_tensor * tensor, const char * name);
// printf-style ggml_set_name.
GGML_API struct ggml_tensor * ggml_format_name(struct ggml_tensor * tensor, const char * fmt, ...);
// The tensor's name.
GGML_API const char * ggml_get_name(const struct ggml_tensor * tensor);
// Marks a graph input (its data is never reused by the allocator).
GGML_API void ggml_set_input(struct ggml_tensor * tensor);
// Marks a graph output (its data is never reused by the allocator).
GGML_API void ggml_set_output(struct ggml_tensor * tensor);

// Bytes spanned by the tensor's data.
GGML_API size_t ggml_nbytes(const struct ggml_tensor * tensor);
// Element count.
GGML_API int64_t ggml_nelements(const struct ggml_tensor * tensor);
// Rows = ne[1]*ne[2]*ne[3].
GGML_API int64_t ggml_nrows(const struct ggml_tensor * tensor);
// Number of dims (trailing dims of size 1 do not count; at least 1).
GGML_API int ggml_n_dims(const struct ggml_tensor * tensor);
// True if rows are packed with no gaps, in order.
GGML_API bool ggml_is_contiguous(const struct ggml_tensor * tensor);
// True if dims 1..3 were swapped/permuted.
GGML_API bool ggml_is_permuted(const struct ggml_tensor * tensor);
// True if dims 0 and 1 are swapped.
GGML_API bool ggml_is_transposed(const struct ggml_tensor * tensor);
// True if ne equal.
GGML_API bool ggml_are_same_shape(const struct ggml_tensor * a, const struct ggml_tensor * b);
// True if b can be broadcast onto a (each a->ne[i] is a multiple of b->ne[i]).
GGML_API bool ggml_can_repeat(const struct ggml_tensor * b, const struct ggml_tensor * a);
// Pointer to the data (NULL for no_alloc tensors not yet allocated).
GGML_API void * ggml_get_data(const struct ggml_tensor * tensor);
// Data as float* (tensor must be F32).
GGML_API float * ggml_get_data_f32(const struct ggml_tensor * tensor);
// Element i of a contiguous tensor as float (any non-quantized type).
GGML_API float ggml_get_f32_1d(const struct ggml_tensor * tensor, int64_t i);
// Sets element i of a contiguous tensor.
GGML_API void ggml_set_f32_1d(struct ggml_tensor * tensor, int64_t i, float value);
// Sets every element of a contiguous tensor; returns tensor.
GGML_API struct ggml_tensor * ggml_set_f32(struct ggml_tensor * tensor, float value);

// ---- views (never copy) ----

// 1-D view of ne0 elements at byte offset.
GGML_API struct ggml_tensor * ggml_view_1d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, size_t offset);
// 2-D view; nb1 is the row stride in bytes.
GGML_API struct ggml_tensor * ggml_view_2d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, int64_t ne1,
                                           size_t nb1, size_t offset);
// 3-D view.
GGML_API struct ggml_tensor * ggml_view_3d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, int64_t ne1,
                                           int64_t ne2, size_t nb1, size_t nb2, size_t offset);
// 4-D view.
GGML_API struct ggml_tensor * ggml_view_4d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, int64_t ne1,
                                           int64_t ne2, int64_t ne3, size_t nb1, size_t nb2, size_t nb3, size_t offset);
// Reshape of a contiguous tensor (same element count).
GGML_API struct ggml_tensor * ggml_reshape(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b);
GGML_API struct ggml_tensor * ggml_reshape_1d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0);
GGML_API struct ggml_tensor * ggml_reshape_2d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, int64_t ne1);
GGML_API struct ggml_tensor * ggml_reshape_3d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, int64_t ne1,
                                              int64_t ne2);
GGML_API struct ggml_tensor * ggml_reshape_4d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, int64_t ne1,
                                              int64_t ne2, int64_t ne3);
// Moves dim i of a to position axis_i of the result.
GGML_API struct ggml_tensor * ggml_permute(struct ggml_context * ctx, struct ggml_tensor * a, int axis0, int axis1, int axis2,
                                           int axis3);
// Swaps dims 0 and 1.
GGML_API struct ggml_tensor * ggml_transpose(struct ggml_context * ctx, struct ggml_tensor * a);

// ---- ops (each returns a new node, or NULL with a logged reason) ----

// Copy of a into a new contiguous tensor of a's type.
GGML_API struct ggml_tensor * ggml_dup(struct ggml_context * ctx, struct ggml_tensor * a);
// Contiguous copy of a (same type).
GGML_API struct ggml_tensor * ggml_cont(struct ggml_context * ctx, struct ggml_tensor * a);
// Copies a into b (converting type); returns a view of b. Same element count.
GGML_API struct ggml_tensor * ggml_cpy(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b);
// a + b, b broadcast over a; a, b F32/F16/BF16, result of a's type.
GGML_API struct ggml_tensor * ggml_add(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b);
GGML_API struct ggml_tensor * ggml_add_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b);
// a - b, b broadcast over a; a, b F32/F16/BF16, result of a's type.
GGML_API struct ggml_tensor * ggml_sub(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b);
GGML_API struct ggml_tensor * ggml_sub_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b);
// a * b elementwise, b broadcast over a; a, b F32/F16/BF16, result of a's type.
GGML_API struct ggml_tensor * ggml_mul(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b);
GGML_API struct ggml_tensor * ggml_mul_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b);
// a / b elementwise, b broadcast over a; a, b F32/F16/BF16, result of a's type.
GGML_API struct ggml_tensor * ggml_div(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b);
GGML_API struct ggml_tensor * ggml_div_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b);
// a * s; a F32/F16/BF16, result of a's type.
GGML_API struct ggml_tensor * ggml_scale(struct ggml_context * ctx, struct ggml_tensor * a, float s);
GGML_API struct ggml_tensor * ggml_scale_inplace(struct ggml_context * ctx, struct ggml_tensor * a, float s);
// x / sqrt(mean(x^2) + eps) per row; a F32/F16/BF16, result of a's type.
GGML_API struct ggml_tensor * ggml_rms_norm(struct ggml_context * ctx, struct ggml_tensor * a, float eps);
GGML_API struct ggml_tensor * ggml_rms_norm_inplace(struct ggml_context * ctx, struct ggml_tensor * a, float eps);
// (x - mean) / sqrt(var + eps) per row; a F32/F16/BF16, result of a's type.
GGML_API struct ggml_tensor * ggml_norm(struct ggml_context * ctx, struct ggml_tensor * a, float eps);
// x * sigmoid(x); a F32/F16/BF16, result of a's type.
GGML_API struct ggml_tensor * ggml_silu(struct ggml_context * ctx, struct ggml_tensor * a);
GGML_API struct ggml_tensor * ggml_silu_inplace(struct ggml_context * ctx, struct ggml_tensor * a);
// GELU, tanh approximation; a F32/F16/BF16, result of a's type.
GGML_API struct ggml_tensor * ggml_gelu(struct ggml_context * ctx, struct ggml_tensor * a);
GGML_API struct ggml_tensor * ggml_gelu_inplace(struct ggml_context * ctx, struct ggml_tensor * a);
// GELU, exact: x/2 (1 + erf(x/sqrt 2)) (BERT's); a F32/F16/BF16, result of a's type.
GGML_API struct ggml_tensor * ggml_gelu_erf(struct ggml_context * ctx, struct ggml_tensor * a);
// tanh(x) (soft-capping: c * tanh(x / c)); a F32/F16/BF16, result of a's type.
GGML_API struct ggml_tensor * ggml_tanh(struct ggml_context * ctx, struct ggml_tensor * a);
GGML_API struct ggml_tensor * ggml_tanh_inplace(struct ggml_context * ctx, struct ggml_tensor * a);
// 1 / (1 + exp(-x)); a F32/F16/BF16, result of a's type.
GGML_API struct ggml_tensor * ggml_sigmoid(struct ggml_context * ctx, struct ggml_tensor * a);
// min(max(a, lo), hi) elementwise (NaN stays NaN); -INFINITY / INFINITY leave a side open.
GGML_API struct ggml_tensor * ggml_clamp(struct ggml_context * ctx, struct ggml_tensor * a, float lo, float hi);
GGML_API struct ggml_tensor * ggml_sigmoid_inplace(struct ggml_context * ctx, struct ggml_tensor * a);
// log(1 + exp(x)) (x itself above 20, as torch's softplus); a F32/F16/BF16, result of a's type.
GGML_API struct ggml_tensor * ggml_softplus(struct ggml_context * ctx, struct ggml_tensor * a);
GGML_API struct ggml_tensor * ggml_softplus_inplace(struct ggml_context * ctx, struct ggml_tensor * a);
// x / max(sqrt(sum(x^2)), eps) per row; a F32/F16/BF16, result of a's type.
GGML_API struct ggml_tensor * ggml_l2_norm(struct ggml_context * ctx, struct ggml_tensor * a, float eps);
GGML_API struct ggml_tensor * ggml_l2_norm_inplace(struct ggml_context * ctx, struct ggml_tensor * a, float eps);
// Causal depthwise convolution: sx [d_conv - 1 + n_t, d_inner, n_s] F32 (each channel's state,
// the last d_conv - 1 inputs, then its n_t new inputs, along dim 0), c [d_conv, d_inner] F32 ->
// [d_inner, n_t, n_s] F32: y[ch, t, s] = sum_j c[j, ch] * sx[t + j, ch, s]; sx F32, c F32 or F16.
GGML_API struct ggml_tensor * ggml_ssm_conv(struct ggml_context * ctx, struct ggml_tensor * sx, struct ggml_tensor * c);
// Gated delta rule, token by token per (head, sequence), all F32: q, k [S, H_k, n_t, n_s],
// v [S, H, n_t, n_s] (H % H_k == 0; value head h reads q/k head h % H_k), g [1 or S, H, n_t, n_s]
// (log decay), beta [1, H, n_t, n_s], state [S, S, H, n_s] (element (i, j) = M[k-index i][v-index j]
// stored at j*S + i). Per token: M *= exp(g); M += k (beta (v - M^T k))^T; o = M^T q / sqrt(S).
// -> [S*H, n_t*n_s + K*S*n_s] F32: the outputs [S, H, n_t, n_s], then K state snapshots
// [S, S, H, n_s] each, the most recent first (K = 1: the final state).
GGML_API struct ggml_tensor * ggml_gated_delta_net(struct ggml_context * ctx, struct ggml_tensor * q, struct ggml_tensor * k,
                                                   struct ggml_tensor * v, struct ggml_tensor * g, struct ggml_tensor * beta,
                                                   struct ggml_tensor * state, int64_t K);
// ggml_gated_delta_net with K = 1 computed chunk by chunk (chunk tokens at a time, 1..256; the
// WY form of the chunked algorithm): equal to the token-by-token result to float rounding.
// Backends without the chunked form (and a per-key-dim g) compute it token by token.
GGML_API struct ggml_tensor * ggml_gated_delta_net_chunked(struct ggml_context * ctx, struct ggml_tensor * q,
                                                           struct ggml_tensor * k, struct ggml_tensor * v, struct ggml_tensor * g,
                                                           struct ggml_tensor * beta, struct ggml_tensor * state, int64_t chunk);
// silu(a) * b (fused SwiGLU); same shapes, F32/F16/BF16, result of a's type.
GGML_API struct ggml_tensor * ggml_swiglu_split(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b);
// SwiGLU over the two halves of dim 0: silu(a[:n/2]) * a[n/2:]; result of a's type.
GGML_API struct ggml_tensor * ggml_swiglu(struct ggml_context * ctx, struct ggml_tensor * a);
// Low-rank update of a product y = W x (a LoRA adapter's term, fused): y + s_j B (A x_j) for each
// column j, s_j = scale * rs[j] (scale alone when rs is NULL). a [K, r] holds A's r rows; bt
// [64, r, ceil(M/64)] holds B transposed in panels of 64 outputs (element (i, k, p) is B[64 p + i][k],
// zero past M), so the update reads it as one sequential stream; a and bt both F32 or both F16.
// x [K, N] and y [M, N] F32 with contiguous rows (any column stride: views of a fused product
// work), rs F32 [1, N] or NULL. A column whose s_j is 0 is y's exactly. -> [M, N] F32.
#define GGML_LORA_PANEL 64 // outputs per panel of ggml_lora_add's bt
GGML_API struct ggml_tensor * ggml_lora_add(struct ggml_context * ctx, struct ggml_tensor * y, struct ggml_tensor * x,
                                            struct ggml_tensor * a, struct ggml_tensor * bt, struct ggml_tensor * rs,
                                            float scale);
// a [K, M, A2, A3] (F32, F16, BF16 or quantized), b [K, N, B2, B3] (F32) -> [M, N, B2, B3] F32;
// B2 % A2 == 0 and B3 % A3 == 0 (a is broadcast, as grouped-query attention needs).
GGML_API struct ggml_tensor * ggml_mul_mat(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b);
// Precision a MUL_MAT node asks of its backend (ggml's values). GGML_PREC_F32 on the CPU: Q8_0
// weights meet activations rounded to 16 bits per 32-block instead of Q8_0's 8 (the lm head
// asks this: its result goes straight to the logits); other weight types are unaffected.
enum ggml_prec {
    GGML_PREC_DEFAULT = 0,
    GGML_PREC_F32 = 10
};
// Sets the precision of MUL_MAT node a (op_params[0]); other nodes are left alone.
GGML_API void ggml_mul_mat_set_prec(struct ggml_tensor * a, enum ggml_prec prec);
// Softmax over each row; a F32/F16/BF16, result of a's type.
GGML_API struct ggml_tensor * ggml_soft_max(struct ggml_context * ctx, struct ggml_tensor * a);
GGML_API struct ggml_tensor * ggml_soft_max_inplace(struct ggml_context * ctx, struct ggml_tensor * a);
// softmax(a*scale + mask) per row, result of a's type (F32/F16/BF16); mask (F32 or F16,
// [ne0, >=ne1], broadcast over dims 2-3) may be NULL; max_bias > 0 enables ALiBi slopes.
GGML_API struct ggml_tensor * ggml_soft_max_ext(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * mask,
                                                float scale, float max_bias);
// Attention sinks on a SOFT_MAX node: sinks (F32 [a->ne[2]]) holds one logit per head (dim 2 of a)
// that joins each row's softmax denominator without an output of its own (gpt-oss); returns
// soft_max itself, or NULL (logged) when it is not a SOFT_MAX or sinks' shape differs.
GGML_API struct ggml_tensor * ggml_soft_max_add_sinks(struct ggml_tensor * soft_max, struct ggml_tensor * sinks);
// Rotary embedding of a [head_dim, n_head, n_tokens, 1] at positions b (I32, n_tokens);
// c (F32, n_dims/2 frequency divisors) may be NULL; mode GGML_ROPE_TYPE_NORMAL or _NEOX.
GGML_API struct ggml_tensor * ggml_rope_ext(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                            struct ggml_tensor * c, int n_dims, int mode, int n_ctx_orig, float freq_base,
                                            float freq_scale, float ext_factor, float attn_factor, float beta_fast,
                                            float beta_slow);
GGML_API struct ggml_tensor * ggml_rope_ext_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                                    struct ggml_tensor * c, int n_dims, int mode, int n_ctx_orig, float freq_base,
                                                    float freq_scale, float ext_factor, float attn_factor, float beta_fast,
                                                    float beta_slow);
// Plain rope: ggml_rope_ext with freq_base 10000, scale 1, no YaRN.
GGML_API struct ggml_tensor * ggml_rope(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b, int n_dims,
                                        int mode);
// Sets a[i, j] = -inf where i > n_past + j (causal mask); a F32/F16/BF16, result of a's type.
GGML_API struct ggml_tensor * ggml_diag_mask_inf(struct ggml_context * ctx, struct ggml_tensor * a, int n_past);
GGML_API struct ggml_tensor * ggml_diag_mask_inf_inplace(struct ggml_context * ctx, struct ggml_tensor * a, int n_past);
// Rows b (I32 indices, [n, B2, B3]) of a ([ne0, rows, B2, B3], any type) as F32 [ne0, n, B2, B3].
GGML_API struct ggml_tensor * ggml_get_rows(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b);
// Writes rows of b (F32, [ne0, n, ...]) into a at row indices c (I32 or I64, [n, ...]),
// converting to a's type; returns a view of a.
GGML_API struct ggml_tensor * ggml_set_rows(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                            struct ggml_tensor * c);
// Sum of each row -> [1, ne1, ne2, ne3] of a's type (F32/F16/BF16).
GGML_API struct ggml_tensor * ggml_sum_rows(struct ggml_context * ctx, struct ggml_tensor * a);
// Index of the max of each row of a 2-D F32/F16/BF16 tensor -> I32 [ne1].
GGML_API struct ggml_tensor * ggml_argmax(struct ggml_context * ctx, struct ggml_tensor * a);
// Row sort orders (ggml's values).
enum ggml_sort_order {
    GGML_SORT_ORDER_ASC = 0,
    GGML_SORT_ORDER_DESC = 1
};
// Indices that sort each row of a (F32/F16/BF16) -> I32 of a's shape; equal values keep their order.
GGML_API struct ggml_tensor * ggml_argsort(struct ggml_context * ctx, struct ggml_tensor * a, enum ggml_sort_order order);
// Indices of the k largest values of each row of a (F32/F16/BF16) -> I32 [k, ne1, ne2, ne3],
// largest first, equal values by lower index first (a view of argsort's first k columns).
GGML_API struct ggml_tensor * ggml_argsort_top_k(struct ggml_context * ctx, struct ggml_tensor * a, int k);
// Indices of the k largest values of each row -> I32 [k, ne1, ne2, ne3]: largest first, equal
// values by lower index first (ggml promises no order; this one is argsort_top_k's).
GGML_API struct ggml_tensor * ggml_top_k(struct ggml_context * ctx, struct ggml_tensor * a, int k);
// Indirect matmul (mixture of experts): as [K, M, n_as] (experts stacked in dim 2; F32, F16,
// BF16 or quantized), b [K, n_b, n_t] F32 with n_b 1 or ids->ne[0], ids I32 [n_used, n_t] ->
// F32 [M, n_used, n_t]: column (j, t) = as[:, :, ids[j, t]] . b[:, j % n_b, t]. An id outside
// [0, n_as) fails the computation (logged), never reads outside as.
GGML_API struct ggml_tensor * ggml_mul_mat_id(struct ggml_context * ctx, struct ggml_tensor * as, struct ggml_tensor * b,
                                              struct ggml_tensor * ids);
// Concatenation of a and b (same non-quantized type) along dim; result of that type.
GGML_API struct ggml_tensor * ggml_concat(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b, int dim);
// Attention: q [D, n_q, H, 1] F32, k [D, n_kv, H_kv, 1], v [Dv, n_kv, H_kv, 1] (F32/F16),
// mask F16/F32 [n_kv, >=n_q] or NULL -> [Dv, H, n_q, 1] F32 (note the permuted result).
GGML_API struct ggml_tensor * ggml_flash_attn_ext(struct ggml_context * ctx, struct ggml_tensor * q, struct ggml_tensor * k,
                                                  struct ggml_tensor * v, struct ggml_tensor * mask, float scale, float max_bias,
                                                  float logit_softcap);

// Attention sinks on a FLASH_ATTN_EXT node: sinks (F32 [q->ne[2]]) holds one logit per head that
// joins each row's softmax denominator without a value of its own (gpt-oss), as
// ggml_soft_max_add_sinks does; returns fa itself, or NULL (logged) when it is not a
// FLASH_ATTN_EXT or sinks' shape differs.
GGML_API struct ggml_tensor * ggml_flash_attn_ext_add_sinks(struct ggml_tensor * fa, struct ggml_tensor * sinks);

// ---- graphs ----

// Graph with room for GGML_DEFAULT_GRAPH_SIZE nodes, in ctx's arena; NULL if full.
GGML_API struct ggml_cgraph * ggml_new_graph(struct ggml_context * ctx);
// Graph with room for `size` nodes (grads are not supported and must be false).
GGML_API struct ggml_cgraph * ggml_new_graph_custom(struct ggml_context * ctx, size_t size, bool grads);
// Adds tensor and every node it depends on (each once, sources first).
GGML_API void ggml_build_forward_expand(struct ggml_cgraph * cgraph, struct ggml_tensor * tensor);
// Number of compute nodes.
GGML_API int ggml_graph_n_nodes(const struct ggml_cgraph * cgraph);
// Node i in execution order (negative i counts from the end); NULL if out of range.
GGML_API struct ggml_tensor * ggml_graph_node(struct ggml_cgraph * cgraph, int i);
// Number of leaves (tensors the graph reads but does not compute).
GGML_API int ggml_graph_n_leafs(const struct ggml_cgraph * cgraph);
// Node named `name`, or NULL.
GGML_API struct ggml_tensor * ggml_graph_get_tensor(const struct ggml_cgraph * cgraph, const char * name);
// Resets per-computation state (gradients are not supported, so this is cheap).
GGML_API void ggml_graph_reset(struct ggml_cgraph * cgraph);
// Empties the graph so it can be rebuilt.
GGML_API void ggml_graph_clear(struct ggml_cgraph * cgraph);

// ---- environment ----

// The environment switches and their values ("GGML_CPU_VARIANT=auto GGML_CPU_GEMM=1 ..."; README lists them).
GGML_API const char * ggml_env_summary(void);

#ifdef __cplusplus
}
#endif

#endif // GGML_H
