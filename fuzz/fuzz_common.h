// fuzz_common.h — shared setup of the libFuzzer targets: a quiet log, an abort hook that turns
// any internal assertion reached from fuzzed input into a crash report, and a byte reader.
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include "ggml.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Logging stays on (the formatting code runs) but nothing is printed: fuzzing runs millions of
// inputs, and an error log line is the expected answer to most of them.
static inline void fuzz_log_quiet(enum ggml_log_level level, const char * text, void * user_data) {
    (void) level;
    (void) text;
    (void) user_data;
}

// An internal invariant broken by input the caller controls is exactly what the fuzzers hunt.
static inline void fuzz_abort_hook(const char * file, int line, const char * message) {
    fprintf(stderr, "fuzz: internal assertion reached from input: %s:%d: %s\n", file, line, message);
    abort();
}

static inline void fuzz_quiet_library(void) {
    ggml_log_set(getenv("FUZZ_VERBOSE") ? NULL : fuzz_log_quiet, NULL);
    ggml_set_abort_hook(fuzz_abort_hook);
}

// Consumes fuzz input front to back; reads past the end yield zeros.
struct fuzz_reader {
    const uint8_t * p;
    size_t n;
};

static inline uint8_t fuzz_u8(struct fuzz_reader * r) {
    if (r->n == 0) return 0;
    r->n--;
    return *r->p++;
}

static inline uint16_t fuzz_u16(struct fuzz_reader * r) {
    uint16_t lo = fuzz_u8(r);
    return (uint16_t) (lo | (uint16_t) fuzz_u8(r) << 8);
}

static inline uint32_t fuzz_u32(struct fuzz_reader * r) {
    uint32_t lo = fuzz_u16(r);
    return lo | (uint32_t) fuzz_u16(r) << 16;
}

// A 32-bit integer drawn mostly from the valid range [lo, hi), often from its first invalid
// neighbours (lo - 1, hi) and sometimes from the edges of int32 or anywhere.
static inline int32_t fuzz_i32_near(struct fuzz_reader * r, int32_t lo, int32_t hi) {
    const uint8_t sel = fuzz_u8(r);
    switch (sel & 7) {
        case 0: return (int32_t) fuzz_u32(r);
        case 1: return sel & 8 ? INT32_MAX : INT32_MIN;
        case 2: return sel & 8 ? hi : lo - 1;
        default: {
            const int64_t span = (int64_t) hi - lo;
            return (int32_t) (lo + (int64_t) (fuzz_u16(r) % (uint64_t) (span > 0 ? span : 1)));
        }
    }
}

#endif // FUZZ_COMMON_H
