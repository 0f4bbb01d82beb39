// gguf-mmap.c — read-only file mappings (POSIX mmap, Win32 MapViewOfFile) and the
// read-into-memory alternative, behind one handle type.
#include "gguf-impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _WIN32
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
#else
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

struct gguf_mmap {
    void * addr;   // NULL for an empty file
    size_t size;
    bool mapped; // true: unmap on close; false: free on close
};

#ifdef _WIN32

static void gguf_log_win32_error(const char * what, const char * fname) {
    char msg[256];
    DWORD err = GetLastError();
    if (!FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL, err, 0, msg, sizeof(msg), NULL)) {
        snprintf(msg, sizeof(msg), "error %lu", (unsigned long) err);
    }
    GGML_LOG_ERROR("gguf: %s '%s': %s\n", what, fname, msg);
}

// Opens fname for reading and returns its size; INVALID_HANDLE_VALUE (logged) on failure.
static HANDLE gguf_open_win32(const char * fname, size_t * size) {
    HANDLE h = CreateFileA(fname, GENERIC_READ, FILE_SHARE_READ, NULL, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, NULL);
    if (h == INVALID_HANDLE_VALUE) {
        gguf_log_win32_error("cannot open", fname);
        return h;
    }
    LARGE_INTEGER li;
    if (!GetFileSizeEx(h, &li)) {
        gguf_log_win32_error("cannot get the size of", fname);
        CloseHandle(h);
        return INVALID_HANDLE_VALUE;
    }
    if ((unsigned long long) li.QuadPart > (unsigned long long) SIZE_MAX) {
        GGML_LOG_ERROR("gguf: '%s' is too large for this address space\n", fname);
        CloseHandle(h);
        return INVALID_HANDLE_VALUE;
    }
    *size = (size_t) li.QuadPart;
    return h;
}

struct gguf_mmap * gguf_mmap_open(const char * fname) {
    if (fname == NULL) {
        GGML_LOG_ERROR("gguf_mmap_open: fname is NULL\n");
        return NULL;
    }
    size_t size = 0;
    HANDLE h = gguf_open_win32(fname, &size);
    if (h == INVALID_HANDLE_VALUE) {
        return NULL;
    }
    struct gguf_mmap * m = GGML_CALLOC(1, sizeof(*m));
    if (m == NULL) {
        GGML_LOG_ERROR("gguf_mmap_open: out of memory\n");
        CloseHandle(h);
        return NULL;
    }
    m->mapped = true;
    m->size = size;
    if (size > 0) { // a zero-length mapping is an error on Windows
        HANDLE hm = CreateFileMappingA(h, NULL, PAGE_READONLY, 0, 0, NULL);
        if (hm == NULL) {
            gguf_log_win32_error("CreateFileMapping failed for", fname);
            CloseHandle(h);
            free(m);
            return NULL;
        }
        m->addr = MapViewOfFile(hm, FILE_MAP_READ, 0, 0, 0);
        CloseHandle(hm); // the view keeps the mapping alive
        if (m->addr == NULL) {
            gguf_log_win32_error("MapViewOfFile failed for", fname);
            CloseHandle(h);
            free(m);
            return NULL;
        }
    }
    CloseHandle(h);
    return m;
}

struct gguf_mmap * gguf_file_read_all(const char * fname) {
    if (fname == NULL) {
        GGML_LOG_ERROR("gguf_file_read_all: fname is NULL\n");
        return NULL;
    }
    size_t size = 0;
    HANDLE h = gguf_open_win32(fname, &size);
    if (h == INVALID_HANDLE_VALUE) {
        return NULL;
    }
    struct gguf_mmap * m = GGML_CALLOC(1, sizeof(*m));
    void * buf = size > 0 ? GGML_MALLOC(size) : NULL;
    if (m == NULL || (size > 0 && buf == NULL)) {
        GGML_LOG_ERROR("gguf_file_read_all: cannot allocate %zu bytes for '%s'\n", size, fname);
        free(m);
        free(buf);
        CloseHandle(h);
        return NULL;
    }
    size_t done = 0;
    while (done < size) {
        DWORD chunk = (DWORD) GGML_MIN(size - done, (size_t) 1 << 30);
        DWORD got = 0;
        if (!ReadFile(h, (char *) buf + done, chunk, &got, NULL) || got == 0) {
            gguf_log_win32_error("read failed for", fname);
            free(m);
            free(buf);
            CloseHandle(h);
            return NULL;
        }
        done += got;
    }
    CloseHandle(h);
    m->addr = buf;
    m->size = size;
    m->mapped = false;
    return m;
}

void gguf_mmap_close(struct gguf_mmap * map) {
    if (map == NULL) {
        return;
    }
    if (map->mapped) {
        if (map->addr != NULL) {
            UnmapViewOfFile(map->addr);
        }
    } else {
        free(map->addr);
    }
    free(map);
}

#else // POSIX

// Opens fname read-only and returns its size; -1 (logged) on failure.
static int gguf_open_posix(const char * fname, size_t * size) {
    int fd = open(fname, O_RDONLY);
    if (fd < 0) {
        GGML_LOG_ERROR("gguf: cannot open '%s': %s\n", fname, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        GGML_LOG_ERROR("gguf: cannot stat '%s': %s\n", fname, strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        GGML_LOG_ERROR("gguf: '%s' is not a regular file\n", fname);
        close(fd);
        return -1;
    }
    if (st.st_size < 0 || (unsigned long long) st.st_size > (unsigned long long) SIZE_MAX) {
        GGML_LOG_ERROR("gguf: '%s' is too large for this address space\n", fname);
        close(fd);
        return -1;
    }
    *size = (size_t) st.st_size;
    return fd;
}

struct gguf_mmap * gguf_mmap_open(const char * fname) {
    if (fname == NULL) {
        GGML_LOG_ERROR("gguf_mmap_open: fname is NULL\n");
        return NULL;
    }
    size_t size = 0;
    int fd = gguf_open_posix(fname, &size);
    if (fd < 0) {
        return NULL;
    }
    struct gguf_mmap * m = GGML_CALLOC(1, sizeof(*m));
    if (m == NULL) {
        GGML_LOG_ERROR("gguf_mmap_open: out of memory\n");
        close(fd);
        return NULL;
    }
    m->mapped = true;
    m->size = size;
    if (size > 0) { // mmap of length 0 fails with EINVAL; an empty file maps to (NULL, 0)
        // No MAP_POPULATE and no read-ahead advice: pages are read only when touched,
        // so opening a large model costs nothing until its tensors are used.
        void * addr = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
        if (addr == MAP_FAILED) {
            GGML_LOG_ERROR("gguf: mmap of '%s' (%zu bytes) failed: %s\n", fname, size, strerror(errno));
            close(fd);
            free(m);
            return NULL;
        }
        m->addr = addr;
    }
    close(fd); // the mapping stays valid after the descriptor is closed
    return m;
}

struct gguf_mmap * gguf_file_read_all(const char * fname) {
    if (fname == NULL) {
        GGML_LOG_ERROR("gguf_file_read_all: fname is NULL\n");
        return NULL;
    }
    size_t size = 0;
    int fd = gguf_open_posix(fname, &size);
    if (fd < 0) {
        return NULL;
    }
    struct gguf_mmap * m = GGML_CALLOC(1, sizeof(*m));
    void * buf = size > 0 ? GGML_MALLOC(size) : NULL;
    if (m == NULL || (size > 0 && buf == NULL)) {
        GGML_LOG_ERROR("gguf_file_read_all: cannot allocate %zu bytes for '%s'\n", size, fname);
        free(m);
        free(buf);
        close(fd);
        return NULL;
    }
    size_t done = 0;
    while (done < size) {
        size_t chunk = GGML_MIN(size - done, (size_t) 1 << 30);
        ssize_t got = read(fd, (char *) buf + done, chunk);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            GGML_LOG_ERROR("gguf: read of '%s' failed after %zu of %zu bytes: %s\n", fname, done, size,
                           got == 0 ? "unexpected end of file" : strerror(errno));
            free(m);
            free(buf);
            close(fd);
            return NULL;
        }
        done += (size_t) got;
    }
    close(fd);
    m->addr = buf;
    m->size = size;
    m->mapped = false;
    return m;
}

void gguf_mmap_close(struct gguf_mmap * map) {
    if (map == NULL) {
        return;
    }
    if (map->mapped) {
        if (map->addr != NULL) {
            munmap(map->addr, map->size);
        }
    } else {
        free(map->addr);
    }
    free(map);
}

#endif // _WIN32

const void * gguf_mmap_addr(const struct gguf_mmap * map) { return map != NULL ? map->addr : NULL; }

size_t gguf_mmap_size(const struct gguf_mmap * map) { return map != NULL ? map->size : 0; }

bool gguf_mmap_is_mapped(const struct gguf_mmap * map) { return map != NULL && map->mapped; }
