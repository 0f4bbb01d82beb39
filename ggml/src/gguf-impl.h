// gguf-impl.h — internals shared by gguf.c (reader, accessors), gguf-write.c (setters,
// serialisation) and gguf-mmap.c (file mapping). Not installed; not part of the ABI.
#ifndef GGUF_IMPL_H
#define GGUF_IMPL_H

#include "gguf.h"
#include "ggml-impl.h"

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// One metadata value. Scalars are arrays of one element: elem_type == type, n == 1.
struct gguf_kv {
    char * key;               // NUL-terminated, non-empty, no embedded NUL
    enum gguf_type type;      // GGUF_TYPE_ARRAY for arrays
    enum gguf_type elem_type; // element type (never GGUF_TYPE_ARRAY)
    size_t n;                 // element count
    void * data;              // n elements, host byte order (non-string types; NULL for strings)
    char * strs;              // string types: the n strings back to back, each NUL-terminated
    size_t * str_offs;        // string types: n + 1 offsets into strs (string i has
                              // length str_offs[i+1] - str_offs[i] - 1; it may hold NULs)
};

// One tensor's description.
struct gguf_tensor_info {
    char name[GGML_MAX_NAME]; // NUL-terminated, non-empty
    int n_dims;               // 1..GGML_MAX_DIMS
    int64_t ne[GGML_MAX_DIMS];// unused dims are 1
    enum ggml_type type;
    size_t offset;            // bytes, relative to the data section, multiple of the alignment
    size_t size;              // bytes of data
    const void * data;        // writer: bytes written for this tensor (not owned), or NULL
};

struct gguf_context {
    uint32_t version;
    size_t alignment;          // power of two
    bool from_input;         // parsed from a file/buffer (data_offset is the input's)
    size_t data_offset;        // bytes from the file start to the data section (if from_input)
    size_t data_end;           // end of the furthest tensor, relative to the data section
    struct gguf_kv * kv;
    int64_t n_kv;
    int64_t cap_kv;
    struct gguf_tensor_info * ti;
    int64_t n_ti;
    int64_t cap_ti;
};

// Element size in bytes of a non-string, non-array value type; 0 otherwise.
size_t gguf_type_size(enum gguf_type type);
// Frees everything a kv owns and zeroes it.
void gguf_kv_clear(struct gguf_kv * kv);
// Bytes of data of a tensor of type with shape ne; false if the shape is invalid for the
// type (negative dims, ne[0] not a multiple of the block size) or the size overflows.
bool gguf_tensor_nbytes(enum ggml_type type, const int64_t ne[GGML_MAX_DIMS], size_t * out);
// Reassigns tensor offsets back to back (each padded to the alignment) and data_end.
void gguf_recompute_offsets(struct gguf_context * ctx);
// True for a nonzero power of two <= GGUF_MAX_ALIGNMENT.
bool gguf_alignment_is_valid(uint64_t a);
#define GGUF_MAX_ALIGNMENT ((size_t) 1 << 20)

// True if map is a real memory mapping (false for gguf_file_read_all's copy).
bool gguf_mmap_is_mapped(const struct gguf_mmap * map);

#ifdef __cplusplus
}
#endif

#endif // GGUF_IMPL_H
