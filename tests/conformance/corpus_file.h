/* Reading corpus files line by line, plain or gzip-compressed (the corpus
 * ships in the repository as tests/corpus as gzip files). zlib's gzopen reads
 * an uncompressed file transparently, so callers need not care which. */
#ifndef EMILY_CONFORMANCE_CORPUS_FILE_H
#define EMILY_CONFORMANCE_CORPUS_FILE_H

#include <stddef.h>
#include <sys/types.h>

typedef struct corpus_file corpus_file;

/* NULL on failure, with errno set where the C library set it. */
corpus_file *corpus_file_open(const char *path);

/* Reads the next line (with its newline, if any) into *buf, growing it as
 * needed. Returns the line's length, 0 at the end, -1 on a read error. */
ssize_t corpus_file_line(corpus_file *f, char **buf, size_t *cap);

void corpus_file_close(corpus_file *f);

#endif
