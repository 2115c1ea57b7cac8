/* Corpus lines through zlib, so .jsonl and .jsonl.gz read the same way. */
#include "corpus_file.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

struct corpus_file {
    gzFile gz;
};

corpus_file *corpus_file_open(const char *path) {
    corpus_file *f = malloc(sizeof *f);
    if (!f) return NULL;
    f->gz = gzopen(path, "rb");
    if (!f->gz) {
        free(f);
        return NULL;
    }
    gzbuffer(f->gz, 1 << 17);
    return f;
}

ssize_t corpus_file_line(corpus_file *f, char **buf, size_t *cap) {
    size_t len = 0;
    for (;;) {
        if (*cap - len < 2) {
            size_t ncap = *cap ? *cap * 2 : 1 << 16;
            char *nb = realloc(*buf, ncap);
            if (!nb) return -1;
            *buf = nb;
            *cap = ncap;
        }
        /* gzgets stops after a newline or when the buffer is full; a line
         * longer than the buffer continues on the next round. */
        int room = *cap - len > (size_t)1 << 30 ? 1 << 30 : (int)(*cap - len);
        if (!gzgets(f->gz, *buf + len, room)) {
            int err;
            gzerror(f->gz, &err);
            if (err != Z_OK && err != Z_BUF_ERROR) return -1;
            return (ssize_t)len;
        }
        len += strlen(*buf + len);
        if (len && (*buf)[len - 1] == '\n') return (ssize_t)len;
        if (gzeof(f->gz)) return (ssize_t)len;
    }
}

void corpus_file_close(corpus_file *f) {
    if (!f) return;
    gzclose(f->gz);
    free(f);
}
