/* The conformance runner: runs corpus cases through emily_dispatch and
 * compares with what Nx.BinaryBackend answered. See scripts/conformance. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "accumulation.h"
#include "compare.h"
#include "corpus_file.h"
#include "json_values.h"
#include "properties.h"

typedef struct op_stats {
    char name[48];
    long passed, failed, skipped, weak;
    char skip_reason[160];
} op_stats;

static op_stats stats[512];
static int nstats;
static int verbose;

static op_stats *stats_for(const char *op) {
    for (int i = 0; i < nstats; i++)
        if (strcmp(stats[i].name, op) == 0) return &stats[i];
    if (nstats == 512) return &stats[511];
    snprintf(stats[nstats].name, sizeof stats[nstats].name, "%s", op);
    return &stats[nstats++];
}

static bool op_selected(const char *ops, const char *op) {
    if (!ops) return true;
    size_t n = strlen(op);
    for (const char *p = ops; *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == n && strncmp(p, op, n) == 0) return true;
        if (!comma) break;
        p = comma + 1;
    }
    return false;
}

static int ntemplates(const emily_value *out) { return out->kind == EMILY_V_TEMPLATE ? 1 : (int)out->n; }
static const emily_value *template_at(const emily_value *out, int k) {
    return out->kind == EMILY_V_TEMPLATE ? out : &out->items[k];
}

static bool same_spec(const emily_tensor *t, const emily_value *tmpl) {
    if (emily_tensor_dtype(t) != tmpl->dtype || emily_tensor_rank(t) != tmpl->rank) return false;
    for (int i = 0; i < tmpl->rank; i++)
        if (emily_tensor_shape(t)[i] != tmpl->shape[i]) return false;
    return true;
}

/* Compares the run's outputs with the recorded result(s). */
/* --dot-precision fast: dot and conv run at FAST and are held to the
 * accumulation rule (accumulation.c) instead of a few ULP. */
static bool dot_fast;

/* The call, for the accumulation rule. */
typedef struct call_ctx {
    emily_device dev;
    const emily_value *out, *args;
    size_t nargs;
} call_ctx;

static bool check_result(const char *op, const json_t *result, const emily_dispatch_result *got, const call_ctx *call,
                         char *msg, size_t ms) {
    size_t n = json_is_array(result) ? json_array_size(result) : 1;
    if ((size_t)got->n != n) {
        snprintf(msg, ms, "%d outputs, want %zu", got->n, n);
        return false;
    }
    for (size_t k = 0; k < n; k++) {
        const json_t *r = json_is_array(result) ? json_array_get(result, k) : result;
        emily_dtype dt = emily_dtype_from_name(json_string_value(json_object_get(r, "type")));
        const emily_tensor *t = got->tensors[k];
        if (emily_tensor_dtype(t) != dt) {
            snprintf(msg, ms, "output %zu has type %s, want %s", k, emily_dtype_name(emily_tensor_dtype(t)),
                     emily_dtype_name(dt));
            return false;
        }
        size_t wn;
        unsigned char *want = b64_decode(json_string_value(json_object_get(r, "data")), &wn);
        size_t gn = emily_dtype_binary_size(emily_tensor_dtype(t), emily_tensor_size(t));
        unsigned char *gotb = malloc(gn ? gn : 1);
        bool ok = want && gotb && gn == wn && !emily_to_binary(t, gotb, gn);
        if (!ok) snprintf(msg, ms, "output %zu has %zu bytes, want %zu", k, gn, wn);
        else {
            char sub[200];
            size_t ne = (size_t)emily_tensor_size(t);
            if (dot_fast && accumulation_rule_op(op) && n == 1 &&
                (emily_dtype_is_float(dt) || emily_dtype_is_complex(dt)))
                ok = accumulation_close(op, call->dev, call->out, call->args, call->nargs, dt, gotb, want, ne, true,
                                        sub, sizeof sub);
            else {
                ok = compare_data(op, dt, gotb, want, ne, sub, sizeof sub);
                /* f64/c128 sums: the reference's own error bound (the
                 * corpus README), where a few ULP do not hold */
                if (!ok && n == 1 && (dt == EMILY_F64 || dt == EMILY_C128) && f64_sum_rule_op(op))
                    ok = accumulation_close(op, call->dev, call->out, call->args, call->nargs, dt, gotb, want, ne,
                                            false, sub, sizeof sub);
            }
            if (!ok) snprintf(msg, ms, "output %zu: %s", k, sub);
        }
        free(want);
        free(gotb);
        if (!ok) return false;
    }
    return true;
}

/* True when every output has the recorded type and exactly the recorded
 * bytes: the reference's own answer. Decompositions whose factors are not
 * unique are accepted this way first (the strictest rule there is) and
 * otherwise checked by their defining properties: Nx's iterations leave
 * rounding noise where the exact factors have zeros (R below the
 * diagonal) and stop short of full accuracy (eigh's Jacobi at eps
 * 1.0e-4), so the reference's answer itself can miss the property
 * checks' bounds, which are made for a fully accurate answer. */
static bool identical_result(const json_t *result, const emily_dispatch_result *got) {
    size_t n = json_is_array(result) ? json_array_size(result) : 1;
    if ((size_t)got->n != n) return false;
    bool same = true;
    for (size_t k = 0; same && k < n; k++) {
        const json_t *r = json_is_array(result) ? json_array_get(result, k) : result;
        const emily_tensor *t = got->tensors[k];
        if (emily_tensor_dtype(t) != emily_dtype_from_name(json_string_value(json_object_get(r, "type")))) return false;
        size_t wn, gn = emily_dtype_binary_size(emily_tensor_dtype(t), emily_tensor_size(t));
        unsigned char *want = b64_decode(json_string_value(json_object_get(r, "data")), &wn);
        unsigned char *gotb = malloc(gn ? gn : 1);
        same = want && gotb && gn == wn && !emily_to_binary(t, gotb, gn) && memcmp(gotb, want, gn) == 0;
        free(want);
        free(gotb);
    }
    return same;
}

/* Nx types a number operand by its value (Nx.Type.merge_number) before
 * calling the backend, which then sees a rank-0 s32/f32/c64 tensor. An
 * inference that matches only when such a scalar is typed that way is
 * the weak-scalar rule (docs/semantics.md). Returns true on a match. */
static bool infer_with_weak_scalars(const char *op, emily_device dev, const emily_value *out, emily_value *args,
                                    size_t nargs) {
    const emily_tensor *other = NULL;
    for (size_t i = 0; i < nargs; i++)
        if (args[i].kind == EMILY_V_TENSOR && emily_tensor_rank(args[i].tensor) > 0) other = args[i].tensor;
    for (size_t i = 0; i < nargs; i++) {
        if (args[i].kind != EMILY_V_TENSOR) continue;
        emily_tensor *s = args[i].tensor;
        emily_dtype st = emily_tensor_dtype(s);
        if (emily_tensor_rank(s) != 0 || (st != EMILY_S32 && st != EMILY_F32 && st != EMILY_C64)) continue;
        emily_dtype base = EMILY_DTYPE_AUTO;
        for (size_t j = 0; j < nargs; j++)
            if (j != i && args[j].kind == EMILY_V_TENSOR) {
                base = emily_tensor_dtype(args[j].tensor);
                break;
            }
        if (other && base == EMILY_DTYPE_AUTO) base = emily_tensor_dtype(other);
        if (base == EMILY_DTYPE_AUTO) continue;
        emily_dtype weak;
        if (st == EMILY_S32) {
            int32_t v;
            if (emily_to_binary(s, &v, 4)) continue;
            weak = emily_type_merge_int(base, v);
        } else if (st == EMILY_F32) weak = emily_type_merge_float(base);
        else weak = emily_dtype_is_complex(base) ? base : emily_type_to_complex(base);
        emily_tensor *retyped;
        if (emily_as_type(s, weak, &retyped)) continue;
        args[i].tensor = retyped;
        emily_dispatch_result r = {0};
        bool match = false;
        if (!emily_dispatch(op, dev, out, args, nargs, EMILY_DISPATCH_INFER, &r)) {
            match = r.n == ntemplates(out);
            for (int k = 0; match && k < r.n; k++) match = same_spec(r.tensors[k], template_at(out, k));
        }
        emily_dispatch_result_release(&r);
        args[i].tensor = s;
        emily_tensor_release(retyped);
        if (match) return true;
    }
    return false;
}

typedef enum { CASE_PASS, CASE_PASS_WEAK, CASE_FAIL, CASE_SKIP } case_outcome;

/* lu, cholesky, triangular_solve, solve and determinant are the
 * reference's bits on the CPU (Nx's own algorithms); on other devices
 * (cuSOLVER in the input's own precision) they are checked by their
 * defining properties, as qr, svd and eigh are everywhere.
 * --linalg-properties checks all eight by their properties on any device,
 * even answers that are the reference's bits (a self-check of the
 * property checks: Nx's own answers must pass them). */
static bool exact_by_properties, force_properties;

static bool by_properties(const char *op) {
    return property_checked_op(op) || (exact_by_properties && property_exact_op(op));
}

/* --linalg reference: qr, svd and eigh run Nx's own algorithms (the
 * :linalg option, emily_linalg_method) and must give the corpus's bits. */
static bool linalg_reference;

/* The call's arguments with linalg: :reference added to its options (the
 * final keyword list, or a new one). Points into *x, which the caller
 * frees with free_with_method. */
typedef struct with_method {
    emily_value *args, *opt_items;
    const char **opt_keys;
} with_method;

static size_t add_reference_method(emily_value *argv, size_t argc, with_method *x) {
    bool has_opts = argc > 0 && argv[argc - 1].kind == EMILY_V_OPTS;
    size_t nargs = has_opts ? argc : argc + 1;
    const emily_value *old = has_opts ? &argv[argc - 1] : NULL;
    size_t nopts = (old ? old->n : 0) + 1;
    x->args = calloc(nargs, sizeof *x->args);
    x->opt_items = calloc(nopts, sizeof *x->opt_items);
    x->opt_keys = calloc(nopts, sizeof *x->opt_keys);
    if (!x->args || !x->opt_items || !x->opt_keys) return 0;
    memcpy(x->args, argv, argc * sizeof *argv);
    for (size_t i = 0; old && i < old->n; i++) {
        x->opt_items[i] = old->items[i];
        x->opt_keys[i] = old->keys[i];
    }
    x->opt_keys[nopts - 1] = "linalg";
    x->opt_items[nopts - 1] = (emily_value){.kind = EMILY_V_ATOM, .str = "reference", .len = 9};
    x->args[nargs - 1] = (emily_value){.kind = EMILY_V_OPTS, .items = x->opt_items, .keys = x->opt_keys, .n = nopts};
    return nargs;
}

static void free_with_method(with_method *x) {
    free(x->args);
    free(x->opt_items);
    free(x->opt_keys);
}

static case_outcome run_case(const char *op, json_t *line, emily_device dev, json_t *emit_obj, char *msg, size_t ms) {
    if (!emily_dispatch_supports(op)) {
        snprintf(msg, ms, "callback not implemented");
        return CASE_SKIP;
    }
    jv_tree out = {0}, args = {0};
    with_method wm = {0};
    case_outcome outcome = CASE_FAIL;
    if (jv_decode(&out, json_object_get(line, "out"), dev, true, msg, ms) ||
        jv_decode(&args, json_object_get(line, "args"), dev, false, msg, ms)) {
        if (emit_obj) json_object_set_new(emit_obj, "error", json_string(msg));
        goto done;
    }
    emily_dispatch_result res = {0};
    emily_value *argv = args.root->items;
    size_t argc = args.root->n;
    bool reference = linalg_reference && property_checked_op(op);
    if (reference) {
        argc = add_reference_method(argv, argc, &wm);
        argv = wm.args;
        if (!argc) {
            snprintf(msg, ms, "out of memory");
            goto done;
        }
    }
    emily_status st = emily_dispatch(op, dev, out.root, argv, argc, EMILY_DISPATCH_RUN, &res);
    if (st == EMILY_ERR_UNSUPPORTED) {
        /* the callback exists but this device has no kernel for it yet */
        snprintf(msg, ms, "%s", emily_last_error());
        if (emit_obj) json_object_set_new(emit_obj, "error", json_string(emily_last_error()));
        outcome = CASE_SKIP;
        goto done;
    }
    if (st) {
        snprintf(msg, ms, "error: %s", emily_last_error());
        if (emit_obj) json_object_set_new(emit_obj, "error", json_string(emily_last_error()));
        goto done;
    }
    if (emit_obj) {
        json_t *enc = res.n == 1 ? jv_encode_tensor(res.tensors[0]) : json_array();
        for (int k = 0; res.n > 1 && k < res.n; k++) json_array_append_new(enc, jv_encode_tensor(res.tensors[k]));
        json_object_set_new(emit_obj, "result", enc);
    }
    const json_t *want = json_object_get(line, "result");
    bool ok = reference           ? identical_result(want, &res)
              : by_properties(op) ? (!force_properties && identical_result(want, &res)) ||
                                        property_check_expected(op, argv, argc, &res, want, msg, ms)
                                  : check_result(op, want, &res, &(call_ctx){dev, out.root, argv, argc}, msg, ms);
    if (!ok && reference) snprintf(msg, ms, "not the reference's bits (--linalg reference)");
    emily_dispatch_result_release(&res);
    if (!ok) goto done;
    /* The typed path must infer Nx's template from inputs and options. */
    emily_dispatch_result inf = {0};
    if (emily_dispatch(op, dev, out.root, argv, argc, EMILY_DISPATCH_INFER, &inf)) {
        snprintf(msg, ms, "inference failed: %s", emily_last_error());
        goto done;
    }
    bool match = inf.n == ntemplates(out.root);
    for (int k = 0; match && k < inf.n; k++) match = same_spec(inf.tensors[k], template_at(out.root, k));
    if (!match && inf.n > 0) {
        const emily_tensor *t = inf.tensors[0];
        snprintf(msg, ms, "inferred output 0 as %s rank %d, template says %s rank %d",
                 emily_dtype_name(emily_tensor_dtype(t)), emily_tensor_rank(t),
                 emily_dtype_name(template_at(out.root, 0)->dtype), template_at(out.root, 0)->rank);
    }
    emily_dispatch_result_release(&inf);
    if (match) outcome = CASE_PASS;
    else if (infer_with_weak_scalars(op, dev, out.root, argv, argc)) outcome = CASE_PASS_WEAK;
done:
    free_with_method(&wm);
    jv_free(&out);
    jv_free(&args);
    return outcome;
}

static void usage(void) {
    fprintf(
        stderr,
        "usage: conformance [--device cpu|cuda[:N]] [--ops a,b,...] [--emit FILE] [--linalg lapack|reference] [--linalg-properties] [--dot-precision highest|fast] [--shard K/N] [-v] CORPUS.jsonl[.gz]...\n");
}

/* The value m of a two-valued option: `on` sets *flag, `off` leaves it;
 * anything else prints the usage and gives false. */
static bool pick_mode(const char *m, const char *on, const char *off, bool *flag) {
    if (strcmp(m, on) == 0) *flag = true;
    else if (strcmp(m, off) != 0) {
        usage();
        return false;
    }
    return true;
}

int main(int argc, char **argv) {
    emily_device dev = EMILY_CPU;
    const char *ops = NULL, *emit_path = NULL;
    /* --shard K/N runs the cases whose index is K modulo N, so N processes
     * share a corpus (compute-sanitizer makes one process too slow) */
    long shard = 0, nshards = 1;
    int nfiles = 0;
    char **files = calloc((size_t)argc, sizeof *files);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
            if (emily_device_parse(argv[++i], &dev)) {
                fprintf(stderr, "%s\n", emily_last_error());
                return 2;
            }
        } else if (strcmp(argv[i], "--ops") == 0 && i + 1 < argc) ops = argv[++i];
        else if (strcmp(argv[i], "--emit") == 0 && i + 1 < argc) emit_path = argv[++i];
        else if (strcmp(argv[i], "--shard") == 0 && i + 1 < argc) {
            char end;
            if (sscanf(argv[++i], "%ld/%ld%c", &shard, &nshards, &end) != 2 || nshards < 1 || shard < 0 ||
                shard >= nshards) {
                fprintf(stderr, "conformance: --shard wants K/N with 0 <= K < N, not %s\n", argv[i]);
                return 2;
            }
        } else if (strcmp(argv[i], "-v") == 0) verbose++;
        else if (strcmp(argv[i], "--linalg") == 0 && i + 1 < argc) {
            if (!pick_mode(argv[++i], "reference", "lapack", &linalg_reference)) return 2;
        } else if (strcmp(argv[i], "--linalg-properties") == 0) exact_by_properties = force_properties = true;
        else if (strcmp(argv[i], "--dot-precision") == 0 && i + 1 < argc) {
            if (!pick_mode(argv[++i], "fast", "highest", &dot_fast)) return 2;
        } else if (argv[i][0] == '-') {
            usage();
            return 2;
        } else files[nfiles++] = argv[i];
    }
    if (!nfiles) {
        usage();
        return 2;
    }
    /* The corpus is the reference's bits: dot and conv run at HIGHEST
     * unless --dot-precision fast asks for the default precision. */
    emily_dot_set_precision(dot_fast ? EMILY_DOT_PRECISION_FAST : EMILY_DOT_PRECISION_HIGHEST);
    if (dev.type != EMILY_DEVICE_CPU) exact_by_properties = true;
    if (emily_device_check(dev)) {
        fprintf(stderr, "conformance: %s\n", emily_last_error());
        return 2;
    }
    FILE *emit = NULL;
    if (emit_path && !(emit = fopen(emit_path, "w"))) {
        perror(emit_path);
        return 2;
    }
    long passed = 0, failed = 0, skipped = 0, weak = 0, index = 0;
    size_t cap = 1 << 16;
    char *buf = malloc(cap);
    for (int f = 0; f < nfiles; f++) {
        corpus_file *in = corpus_file_open(files[f]);
        if (!in) {
            perror(files[f]);
            return 2;
        }
        ssize_t len;
        while ((len = corpus_file_line(in, &buf, &cap)) > 0) {
            json_error_t jerr;
            json_t *line = json_loadb(buf, (size_t)len, 0, &jerr);
            if (!line) {
                fprintf(stderr, "%s: bad JSON: %s\n", files[f], jerr.text);
                return 2;
            }
            const char *op = json_string_value(json_object_get(line, "op"));
            if (!op || !op_selected(ops, op)) {
                json_decref(line);
                continue;
            }
            if (index % nshards != shard) {
                json_decref(line);
                index++;
                continue;
            }
            json_t *emit_obj = emit ? json_pack("{s:I, s:s}", "index", (json_int_t)index, "op", op) : NULL;
            char msg[1024] = "";
            case_outcome o = run_case(op, line, dev, emit_obj, msg, sizeof msg);
            op_stats *st = stats_for(op);
            switch (o) {
            case CASE_PASS_WEAK: st->weak++; weak++; /* fall through */
            case CASE_PASS:
                st->passed++;
                passed++;
                break;
            case CASE_SKIP:
                st->skipped++;
                skipped++;
                if (!st->skip_reason[0]) snprintf(st->skip_reason, sizeof st->skip_reason, "%.150s", msg);
                break;
            case CASE_FAIL:
                st->failed++;
                failed++;
                if (verbose || st->failed <= 3)
                    fprintf(stderr, "FAIL %s #%ld (%s): %s\n", op, index,
                            json_string_value(json_object_get(line, "tag")), msg);
                break;
            }
            if (emit_obj) {
                if (o == CASE_SKIP) json_object_set_new(emit_obj, "error", json_string(msg));
                char *txt = json_dumps(emit_obj, JSON_COMPACT | JSON_PRESERVE_ORDER);
                fprintf(emit, "%s\n", txt);
                free(txt);
                json_decref(emit_obj);
            }
            json_decref(line);
            index++;
        }
        if (len < 0) {
            fprintf(stderr, "%s: read error\n", files[f]);
            return 2;
        }
        corpus_file_close(in);
    }
    free(buf);
    free(files);
    if (emit) fclose(emit);
    char dname[32];
    emily_device_format(dev, dname, sizeof dname);
    printf("%-24s %8s %8s %8s\n", "op", "passed", "failed", "skipped");
    for (int i = 0; i < nstats; i++)
        printf("%-24s %8ld %8ld %8ld%s\n", stats[i].name, stats[i].passed, stats[i].failed, stats[i].skipped,
               stats[i].weak ? "  (some by the weak-scalar rule)" : "");
    bool any_prop = false;
    for (int i = 0; i < nstats; i++)
        if (by_properties(stats[i].name)) {
            if (linalg_reference && property_checked_op(stats[i].name)) {
                if (!any_prop) printf("run with linalg: :reference (Nx's own algorithms), checked bit for bit:");
                any_prop = true;
                printf(" %s", stats[i].name);
                continue;
            }
            if (!any_prop) printf("the reference's bits, or else these defining properties:\n");
            any_prop = true;
            printf("  %s: %s\n", stats[i].name, property_description(stats[i].name));
        }
    if (linalg_reference && any_prop) printf("\n");
    if (skipped) {
        printf("skipped (callback not implemented, or no kernel on %s):", dname);
        for (int i = 0; i < nstats; i++)
            if (stats[i].skipped) printf(" %s", stats[i].name);
        printf("\n");
        for (int i = 0; i < nstats; i++)
            if (stats[i].skipped && stats[i].skip_reason[0]) printf("  %s: %s\n", stats[i].name, stats[i].skip_reason);
    }
    if (weak) printf("%ld passes inferred the output type with the weak-scalar rule (docs/semantics.md)\n", weak);
    printf("device %s: %ld passed, %ld failed, %ld skipped\n", dname, passed, failed, skipped);
    return failed ? 1 : 0;
}
