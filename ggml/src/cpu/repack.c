// repack.c — load-time repacking of weight matrices for the CPU GEMM (layout in repack.h).
//
// The copy is made with the selected kernel set's panel packer (the same unpacking mul_mat
// would do on every call), then squeezed back to the stored size: levels to nibbles (q4_0,
// q4_1) and scales to fp16, which is exact since they came from fp16.
#include "repack.h"
#include "gemm.h"

#include <stdlib.h>
#include <string.h>

#define REPACK_MAGIC 0x4b435052u // "RPCK"
#define REPACK_HEADER 64

struct repack_header {
    uint32_t magic;
    int32_t  type;
    int64_t  ne0, ne1;
    uint64_t bytes;   // of the whole copy, header included
};

// Bytes of one repacked 32-element block of 16 rows (0: no repacked layout for the type).
static size_t repack_block_bytes(enum ggml_type type) {
    switch (type) {
        case GGML_TYPE_Q4_0: return 16*32/2 + 32;
        case GGML_TYPE_Q4_1: return 16*32/2 + 64;
        case GGML_TYPE_Q8_0: return 16*32 + 32;
        default:             return 0;
    }
}

static const struct ggml_gemm_traits * repack_traits(const struct ggml_tensor * t) {
    if (!t || repack_block_bytes(t->type) == 0) return NULL;
    if (t->ne[2] != 1 || t->ne[3] != 1 || t->ne[0] % 32 != 0 || t->ne[1] % GGML_GEMM_MR != 0 || t->ne[1] <= 0 ||
        t->nb[0] != ggml_type_size(t->type) || t->nb[1] < ggml_row_size(t->type, t->ne[0])) {
        return NULL;
    }
    const struct ggml_gemm_traits * gt = ggml_gemm_get_traits(t->type);
    if (!gt || !gt->accelerated || !gt->kernel_repacked || !gt->pack) return NULL;
    return gt;
}

size_t ggml_cpu_repack_size(const struct ggml_tensor * t) {
    if (!repack_traits(t)) return 0;
    return REPACK_HEADER + (size_t) (t->ne[1]/GGML_GEMM_MR)*(size_t) (t->ne[0]/32)*repack_block_bytes(t->type);
}

bool ggml_cpu_repack(struct ggml_tensor * t, void * buf) {
    const struct ggml_gemm_traits * gt = repack_traits(t);
    if (!gt || !buf || !t->data) return false;
    const int64_t K = t->ne[0], M = t->ne[1], nblk = K/32;
    const size_t pbb = ggml_gemm_panel_block_bytes(gt), rbb = repack_block_bytes(t->type);
    uint8_t * panel = malloc(ggml_gemm_panel_bytes(gt, K));
    if (!panel) {
        GGML_LOG_ERROR("ggml_cpu_repack: out of memory for a panel of '%s'\n", t->name);
        return false;
    }
    uint8_t * out = (uint8_t *) buf + REPACK_HEADER;
    for (int64_t p = 0; p < M/GGML_GEMM_MR; p++) {
        gt->pack(gt, (const char *) t->data + (size_t) p*GGML_GEMM_MR*t->nb[1], t->nb[1], GGML_GEMM_MR, K, panel);
        for (int64_t b = 0; b < nblk; b++) {
            const uint8_t * lv = panel + (size_t) b*pbb;
            uint8_t * o = out + (size_t) (p*nblk + b)*rbb;
            size_t lvb;
            if (t->type == GGML_TYPE_Q8_0) {
                lvb = 16*32;
                memcpy(o, lv, lvb);
            } else {
                // packed vector h: level vector h in the low nibbles, h + 4 in the high ones
                lvb = 16*32/2;
                for (size_t i = 0; i < lvb; i++) o[i] = (uint8_t) (lv[i] | (lv[i + lvb] << 4));
            }
            const float * d = (const float *) (lv + 32*GGML_GEMM_MR);
            for (int r = 0; r < GGML_GEMM_MR; r++) {
                const ggml_fp16_t h = GGML_FP32_TO_FP16(d[r]);
                memcpy(o + lvb + 2*r, &h, 2);
                if (gt->has_min) {
                    const ggml_fp16_t hm = GGML_FP32_TO_FP16(d[16 + r]);
                    memcpy(o + lvb + 32 + 2*r, &hm, 2);
                }
            }
        }
    }
    free(panel);
    struct repack_header h = { REPACK_MAGIC, (int32_t) t->type, K, M, (uint64_t) ggml_cpu_repack_size(t) };
    memcpy(buf, &h, sizeof(h));
    t->extra = buf;
    return true;
}

// t's copy if t->extra is one and describes t (extra may belong to someone else otherwise).
static const struct repack_header * repack_header_of(const struct ggml_tensor * t) {
    if (!t || !t->extra || repack_block_bytes(t->type) == 0) return NULL;
    const struct repack_header * h = (const struct repack_header *) t->extra;
    if (h->magic != REPACK_MAGIC || h->type != (int32_t) t->type || h->ne0 != t->ne[0] || h->ne1 != t->ne[1]) {
        return NULL;
    }
    return h;
}

void ggml_cpu_repack_clear(struct ggml_tensor * t) {
    if (repack_header_of(t)) t->extra = NULL;
}

const void * ggml_cpu_repack_panels(const struct ggml_tensor * t) {
    const struct repack_header * h = repack_header_of(t);
    if (!h || !repack_traits(t)) return NULL;
    return (const uint8_t *) h + REPACK_HEADER;
}
