// gguf.h — read and write GGUF files (versions 2 and 3, little-endian).
//
// File format:
//   magic "GGUF" | u32 version | u64 n_tensors | u64 n_kv
//   n_kv x (string key | u32 value type | value)            string = u64 length + bytes
//   n_tensors x (string name | u32 n_dims | u64 ne[n_dims] | u32 ggml_type | u64 offset)
//   padding to general.alignment (default 32) | tensor data (offsets relative to here)
//
// Usage:
//   struct ggml_context * meta = NULL;
//   struct gguf_init_params p = { .no_alloc = true, .ctx = &meta };
//   struct gguf_context * g = gguf_init_from_file("model.gguf", p);   // NULL + log if invalid
//   int64_t k = gguf_find_key(g, "general.architecture");
//   const char * arch = gguf_get_val_str(g, k);
//   ... meta holds one tensor per GGUF tensor (data NULL with no_alloc, else loaded) ...
//   gguf_free(g); ggml_free(meta);
#ifndef GGUF_H
#define GGUF_H

#include "ggml.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GGUF_MAGIC                 "GGUF"
#define GGUF_VERSION               3
#define GGUF_DEFAULT_ALIGNMENT     32
#define GGUF_KEY_GENERAL_ALIGNMENT "general.alignment"

// Value types of metadata.
enum gguf_type {
    GGUF_TYPE_UINT8 = 0,
    GGUF_TYPE_INT8 = 1,
    GGUF_TYPE_UINT16 = 2,
    GGUF_TYPE_INT16 = 3,
    GGUF_TYPE_UINT32 = 4,
    GGUF_TYPE_INT32 = 5,
    GGUF_TYPE_FLOAT32 = 6,
    GGUF_TYPE_BOOL = 7,
    GGUF_TYPE_STRING = 8,
    GGUF_TYPE_ARRAY = 9,
    GGUF_TYPE_UINT64 = 10,
    GGUF_TYPE_INT64 = 11,
    GGUF_TYPE_FLOAT64 = 12,
    GGUF_TYPE_COUNT,
};

struct gguf_context;

// Reading options: with ctx non-NULL, *ctx receives a new ggml context holding one tensor
// per GGUF tensor (metadata only when no_alloc; otherwise data read into the context).
struct gguf_init_params {
    bool no_alloc;
    struct ggml_context ** ctx;
};

// Empty context for writing. Free with gguf_free.
GGML_API struct gguf_context * gguf_init_empty(void);
// Parses a file; NULL (and a logged reason naming the bad field) if it is not a valid GGUF.
GGML_API struct gguf_context * gguf_init_from_file(const char * fname, struct gguf_init_params params);
// Parses a GGUF held in memory (size bytes); same checks as gguf_init_from_file.
GGML_API struct gguf_context * gguf_init_from_buffer(const void * data, size_t size, struct gguf_init_params params);
// Frees the context; NULL-safe.
GGML_API void gguf_free(struct gguf_context * ctx);

// Name of a value type ("u32", "str", ...).
GGML_API const char * gguf_type_name(enum gguf_type type);

// File version (2 or 3).
GGML_API uint32_t gguf_get_version(const struct gguf_context * ctx);
// Alignment of tensor data in bytes.
GGML_API size_t gguf_get_alignment(const struct gguf_context * ctx);
// Byte offset of the tensor data section in the file.
GGML_API size_t gguf_get_data_offset(const struct gguf_context * ctx);

// Number of metadata key/value pairs.
GGML_API int64_t gguf_get_n_kv(const struct gguf_context * ctx);
// Index of key, or -1.
GGML_API int64_t gguf_find_key(const struct gguf_context * ctx, const char * key);
// Key at index (NULL if out of range).
GGML_API const char * gguf_get_key(const struct gguf_context * ctx, int64_t key_id);
// Value type at index (GGUF_TYPE_COUNT if out of range).
GGML_API enum gguf_type gguf_get_kv_type(const struct gguf_context * ctx, int64_t key_id);
// Element type of an array value.
GGML_API enum gguf_type gguf_get_arr_type(const struct gguf_context * ctx, int64_t key_id);

// Scalar getters: return 0 / false / NULL (logged) on a wrong type or index.
GGML_API uint8_t gguf_get_val_u8(const struct gguf_context * ctx, int64_t key_id);
GGML_API int8_t gguf_get_val_i8(const struct gguf_context * ctx, int64_t key_id);
GGML_API uint16_t gguf_get_val_u16(const struct gguf_context * ctx, int64_t key_id);
GGML_API int16_t gguf_get_val_i16(const struct gguf_context * ctx, int64_t key_id);
GGML_API uint32_t gguf_get_val_u32(const struct gguf_context * ctx, int64_t key_id);
GGML_API int32_t gguf_get_val_i32(const struct gguf_context * ctx, int64_t key_id);
GGML_API float gguf_get_val_f32(const struct gguf_context * ctx, int64_t key_id);
GGML_API uint64_t gguf_get_val_u64(const struct gguf_context * ctx, int64_t key_id);
GGML_API int64_t gguf_get_val_i64(const struct gguf_context * ctx, int64_t key_id);
GGML_API double gguf_get_val_f64(const struct gguf_context * ctx, int64_t key_id);
GGML_API bool gguf_get_val_bool(const struct gguf_context * ctx, int64_t key_id);
GGML_API const char * gguf_get_val_str(const struct gguf_context * ctx, int64_t key_id);
// Pointer to a non-array scalar value's bytes (NULL for strings/arrays).
GGML_API const void * gguf_get_val_data(const struct gguf_context * ctx, int64_t key_id);
// Element count of an array value (0 if not an array).
GGML_API size_t gguf_get_arr_n(const struct gguf_context * ctx, int64_t key_id);
// Raw elements of a non-string array (NULL for string arrays).
GGML_API const void * gguf_get_arr_data(const struct gguf_context * ctx, int64_t key_id);
// Element i of a string array (NULL if not a string array or out of range).
GGML_API const char * gguf_get_arr_str(const struct gguf_context * ctx, int64_t key_id, size_t i);
// Length in bytes of element i of a string array (or of a string value with i = 0); strings
// may hold NUL bytes, which gguf_get_arr_str cannot show. 0 if not a string.
GGML_API size_t gguf_get_arr_str_len(const struct gguf_context * ctx, int64_t key_id, size_t i);

// Number of tensors.
GGML_API int64_t gguf_get_n_tensors(const struct gguf_context * ctx);
// Index of tensor name, or -1.
GGML_API int64_t gguf_find_tensor(const struct gguf_context * ctx, const char * name);
// Offset of the tensor's data relative to the data section.
GGML_API size_t gguf_get_tensor_offset(const struct gguf_context * ctx, int64_t tensor_id);
// Tensor name.
GGML_API const char * gguf_get_tensor_name(const struct gguf_context * ctx, int64_t tensor_id);
// Tensor type.
GGML_API enum ggml_type gguf_get_tensor_type(const struct gguf_context * ctx, int64_t tensor_id);
// Tensor data size in bytes.
GGML_API size_t gguf_get_tensor_size(const struct gguf_context * ctx, int64_t tensor_id);
// Number of dims of the tensor (1..4).
GGML_API int gguf_get_tensor_n_dims(const struct gguf_context * ctx, int64_t tensor_id);
// Size of dim i of the tensor.
GGML_API int64_t gguf_get_tensor_ne(const struct gguf_context * ctx, int64_t tensor_id, int i);

// Removes key if present; returns its former index or -1.
GGML_API int64_t gguf_remove_key(struct gguf_context * ctx, const char * key);
// Setters: add the key or overwrite its value (and type).
GGML_API void gguf_set_val_u8(struct gguf_context * ctx, const char * key, uint8_t val);
GGML_API void gguf_set_val_i8(struct gguf_context * ctx, const char * key, int8_t val);
GGML_API void gguf_set_val_u16(struct gguf_context * ctx, const char * key, uint16_t val);
GGML_API void gguf_set_val_i16(struct gguf_context * ctx, const char * key, int16_t val);
GGML_API void gguf_set_val_u32(struct gguf_context * ctx, const char * key, uint32_t val);
GGML_API void gguf_set_val_i32(struct gguf_context * ctx, const char * key, int32_t val);
GGML_API void gguf_set_val_f32(struct gguf_context * ctx, const char * key, float val);
GGML_API void gguf_set_val_u64(struct gguf_context * ctx, const char * key, uint64_t val);
GGML_API void gguf_set_val_i64(struct gguf_context * ctx, const char * key, int64_t val);
GGML_API void gguf_set_val_f64(struct gguf_context * ctx, const char * key, double val);
GGML_API void gguf_set_val_bool(struct gguf_context * ctx, const char * key, bool val);
GGML_API void gguf_set_val_str(struct gguf_context * ctx, const char * key, const char * val);
// Array of n elements of a scalar type (copied).
GGML_API void gguf_set_arr_data(struct gguf_context * ctx, const char * key, enum gguf_type type, const void * data, size_t n);
// Array of n strings (copied).
GGML_API void gguf_set_arr_str(struct gguf_context * ctx, const char * key, const char ** data, size_t n);
// Copies every key/value of src into ctx.
GGML_API void gguf_set_kv(struct gguf_context * ctx, const struct gguf_context * src);

// Adds a tensor (name, type, shape taken from tensor; data pointer kept, not copied).
GGML_API void gguf_add_tensor(struct gguf_context * ctx, const struct ggml_tensor * tensor);
// Changes a tensor's type (offsets of following tensors are recomputed).
GGML_API void gguf_set_tensor_type(struct gguf_context * ctx, const char * name, enum ggml_type type);
// Sets the data pointer written for a tensor (kept, not copied).
GGML_API void gguf_set_tensor_data(struct gguf_context * ctx, const char * name, const void * data);

// Writes the whole file (only_meta: header, kv and tensor infos, no data). false on I/O error.
GGML_API bool gguf_write_to_file(const struct gguf_context * ctx, const char * fname, bool only_meta);
// Bytes of the metadata section including padding to the data section.
GGML_API size_t gguf_get_meta_size(const struct gguf_context * ctx);
// Writes the metadata section into data (gguf_get_meta_size bytes).
GGML_API void gguf_get_meta_data(const struct gguf_context * ctx, void * data);
// Serialises the whole file into a malloc'ed buffer (*size bytes); caller frees with gguf_buf_free.
GGML_API void * gguf_write_to_buf(const struct gguf_context * ctx, size_t * size, bool only_meta);
// Frees a buffer from gguf_write_to_buf; NULL-safe.
GGML_API void gguf_buf_free(void * buf);

// A model loader reads tensor data through a mapping or a whole-file copy:
//   struct gguf_mmap * m = use_mmap ? gguf_mmap_open(path) : gguf_file_read_all(path);
//   const uint8_t * base = gguf_mmap_addr(m);           // whole file, read-only
//   ... tensor i's bytes: base + gguf_get_data_offset(g) + gguf_get_tensor_offset(g, i) ...
//   gguf_mmap_close(m);                                  // works for both kinds
// gguf_init_from_file has already checked that every tensor lies inside the file, but the
// loader must compare gguf_mmap_size(m) with the offsets again if it opened the file
// separately (the file may have changed in between).

// A read-only memory map of a file (POSIX mmap / Win32 MapViewOfFile).
struct gguf_mmap;
// Maps the whole file; NULL (logged) on failure.
GGML_API struct gguf_mmap * gguf_mmap_open(const char * fname);
// Unmaps; NULL-safe.
GGML_API void gguf_mmap_close(struct gguf_mmap * map);
// Start of the mapped bytes.
GGML_API const void * gguf_mmap_addr(const struct gguf_mmap * map);
// Size of the mapping in bytes.
GGML_API size_t gguf_mmap_size(const struct gguf_mmap * map);
// Reads the whole file into memory instead of mapping it (a loader's use_mmap = false); the
// result works with gguf_mmap_addr / gguf_mmap_size / gguf_mmap_close. NULL (logged) on failure.
GGML_API struct gguf_mmap * gguf_file_read_all(const char * fname);

#ifdef __cplusplus
}
#endif

#endif // GGUF_H
