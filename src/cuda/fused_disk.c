/* CUDA: the fused kernels' compiled code kept on disk, so that a
 * program NVRTC compiled once (about half a second each; a model has tens)
 * is not compiled again by the next process.
 *
 * Where: $EMILY_KERNEL_CACHE, else $XDG_CACHE_HOME/emily/kernels, else
 * $HOME/.cache/emily/kernels; EMILY_KERNEL_CACHE=off turns it off. A file
 * is named by a hash of the source, the architecture and NVRTC's version,
 * and holds those too (a magic line, the key text, the cubin): a file
 * whose key text is not the program's is ignored, as is one that cannot
 * be read whole. Files are written to a temporary name and renamed, so a
 * reader never sees half of one. Any failure only costs a compilation. */
#include <errno.h>
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cuda/fused.h"

#define MAGIC "emily fused kernel 1\n"

/* The cache directory (made if missing), or false when there is none. */
static bool cache_dir(char *dir, size_t n) {
    const char *env = getenv("EMILY_KERNEL_CACHE"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int w;
    if (env && strcmp(env, "off") == 0) return false;
    if (env && env[0]) w = snprintf(dir, n, "%s", env);
    else if (xdg && xdg[0]) w = snprintf(dir, n, "%s/emily/kernels", xdg);
    else if (home && home[0]) w = snprintf(dir, n, "%s/.cache/emily/kernels", home);
    else return false;
    if (w < 0 || (size_t)w >= n) return false;
    /* each level, as mkdir -p */
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        bool ok = mkdir(dir, 0755) == 0 || errno == EEXIST;
        *p = '/';
        if (!ok) return false;
    }
    return mkdir(dir, 0755) == 0 || errno == EEXIST;
}

/* The key: what the cubin depends on. Caller frees. */
static char *key_text(const char *source, int arch) {
    int major = 0, minor = 0;
    if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return NULL;
    size_t n = strlen(source) + 64;
    char *k = malloc(n);
    if (k) snprintf(k, n, "sm_%d nvrtc %d.%d\n%s", arch, major, minor, source);
    return k;
}

static uint64_t hash(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* The cubin stored for key in path, or NULL. Caller frees. */
static void *read_entry(const char *path, const char *key, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t klen = strlen(key), mlen = strlen(MAGIC);
    char *head = malloc(mlen + klen + 1);
    void *cubin = NULL;
    uint64_t n = 0;
    if (head && fread(head, 1, mlen + klen, f) == mlen + klen && memcmp(head, MAGIC, mlen) == 0 &&
        memcmp(head + mlen, key, klen) == 0 && fread(&n, sizeof n, 1, f) == 1 && n > 0 && n < ((uint64_t)1 << 30) &&
        (cubin = malloc((size_t)n)) && fread(cubin, 1, (size_t)n, f) == (size_t)n && fgetc(f) == EOF) {
        *size = (size_t)n;
    } else {
        free(cubin);
        cubin = NULL;
    }
    free(head);
    fclose(f);
    return cubin;
}

static void write_entry(const char *path, const char *key, const void *cubin, size_t size) {
    char tmp[4200];
    if (snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid()) >= (int)sizeof tmp) return;
    FILE *f = fopen(tmp, "wb");
    if (!f) return;
    uint64_t n = size;
    bool ok = fputs(MAGIC, f) >= 0 && fputs(key, f) >= 0 && fwrite(&n, sizeof n, 1, f) == 1 &&
              fwrite(cubin, 1, size, f) == size;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) remove(tmp);
}

emily_status emi_cuda_fused_cubin(const char *source, int arch, void **cubin, size_t *size, char **log,
                                  bool *from_disk) {
    *from_disk = false;
    char dir[4096], path[4200];
    char *key = cache_dir(dir, sizeof dir) ? key_text(source, arch) : NULL;
    if (key) {
        snprintf(path, sizeof path, "%s/%016llx.cubin", dir, (unsigned long long)hash(key));
        if ((*cubin = read_entry(path, key, size))) {
            *from_disk = true;
            free(key);
            if (log) *log = NULL;
            return EMILY_OK;
        }
    }
    emily_status s = emi_cuda_fused_compile(source, arch, cubin, size, log);
    if (!s && key) write_entry(path, key, *cubin, *size);
    free(key);
    return s;
}
