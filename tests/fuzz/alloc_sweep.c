/* Allocation-failure sweep over a fuzz target's inputs (issue 20): links
 * with one target's objects (its LLVMFuzzerTestOneInput, which checks the
 * target's own invariants: no leak, a message with every failure) and
 * with the allocator shim of tests/unit/fail_alloc.h, and runs each input
 * file once with nothing failing, then with allocation n failing for
 * n = 1, 2, ... until a run meets no failure. A crash, a sanitizer report
 * or a broken invariant ends the program; it prints the counts when every
 * run held. Usage: alloc_TARGET FILE_OR_DIR... */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "../unit/fail_alloc.h"
#include "fuzz_common.h"

#define MAX_ALLOCS 100000

static long inputs, runs, injected, most;

/* fuzz_common.h: lets the target's read-back checks fail under memory
 * pressure (the decoding itself must still fail cleanly, with a message,
 * and leak nothing) */
bool fuzz_alloc_failed(void) { return fail_alloc_fired(); }

static void sweep_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *data = malloc(size > 0 ? (size_t)size : 1);
    if (!data || (size > 0 && fread(data, 1, (size_t)size, f) != (size_t)size)) {
        fprintf(stderr, "alloc_sweep: cannot read %s\n", path);
        exit(1);
    }
    fclose(f);
    LLVMFuzzerTestOneInput(data, (size_t)size);
    long n = 1;
    for (; n <= MAX_ALLOCS; n++) {
        fail_alloc_after(n);
        LLVMFuzzerTestOneInput(data, (size_t)size);
        fail_alloc_after(0);
        runs++;
        if (!fail_alloc_fired()) break;
        injected++;
    }
    if (n > MAX_ALLOCS) {
        fprintf(stderr, "alloc_sweep: %s makes more than %d allocations\n", path, MAX_ALLOCS);
        exit(1);
    }
    if (n > most) most = n;
    inputs++;
    free(data);
}

static void sweep_path(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "alloc_sweep: no such file or folder: %s\n", path);
        exit(1);
    }
    if (!S_ISDIR(st.st_mode)) {
        sweep_file(path);
        return;
    }
    struct dirent **names;
    int k = scandir(path, &names, NULL, alphasort);
    for (int i = 0; i < k; i++) {
        if (names[i]->d_name[0] != '.') {
            char full[4096];
            snprintf(full, sizeof full, "%s/%s", path, names[i]->d_name);
            sweep_path(full);
        }
        free(names[i]);
    }
    free(names);
}

int main(int argc, char **argv) {
    LLVMFuzzerInitialize(&argc, &argv);
    for (int i = 1; i < argc; i++) sweep_path(argv[i]);
    printf("alloc_sweep: %ld inputs, %ld runs, %ld failures injected, at most %ld allocations an input\n", inputs, runs,
           injected, most);
    return inputs > 0 ? 0 : 1;
}
