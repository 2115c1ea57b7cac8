/* Fused element-wise programs on CUDA (src/graph/fuse_lower.c lowers a
 * compiled graph's group of element-wise calls, src/cuda/fused.c
 * generates its kernel and compiles it with NVRTC).
 *
 * Without a GPU: every element function a program can name (each unary
 * and binary kernel of every dtype, every as_type pair, select on every
 * real predicate type) compiles under NVRTC from the embedded headers.
 * On a GPU: graphs whose element-wise chains fuse (a bf16 GELU with f32
 * constants, a broadcast and strided f32 chain, predicates and selects
 * across types, integer wrap-around, a complex chain) give the bits of
 * the same graphs run unfused, call by call, in every run (the second
 * records a CUDA graph, later ones replay it). */
#include "cuda_compare.h"
#include "core/binary_kernels.h"
#include "core/unary_kernels.h"
#ifdef EMILY_WITH_CUDA
#include "cuda/fused.h"
#endif

#ifdef EMILY_WITH_CUDA
enum { ARCH = 90, MAXI = 160 };

typedef struct prog {
    emi_fused_program p;
    emi_fused_instr instr[MAXI];
    emily_tensor *held[EMI_FUSED_MAX_INPUTS + EMI_FUSED_MAX_EXITS];
    int nheld;
} prog;

static const int64_t N3[1] = {3};

static emily_tensor *spec(prog *q, emily_dtype dt) {
    emily_tensor *t = NULL;
    CHECK_OK(emily_empty(EMILY_CPU, dt, 1, N3, &t));
    q->held[q->nheld++] = t;
    return t;
}

static void prog_init(prog *q, emily_dtype in, int ninputs) {
    memset(q, 0, sizeof *q);
    q->p.rank = 1;
    q->p.shape = N3;
    q->p.ninputs = ninputs;
    for (int i = 0; i < ninputs; i++) q->p.inputs[i] = spec(q, in);
    q->p.instr = q->instr;
}

static void add(prog *q, emi_fused_kind kind, int op, emily_dtype in, emily_dtype out, emily_dtype pred, int32_t a,
                int32_t b, int32_t c) {
    if (q->p.ninstr < MAXI) q->instr[q->p.ninstr++] = (emi_fused_instr){kind, op, in, out, pred, a, b, c};
    else CHECK(!"too many instructions for the test's program");
}

/* The last instruction is the exit; every instruction is compiled. */
static void compile_ok(prog *q, const char *what) {
    if (!q->p.ninstr) return;
    q->p.nexits = 1;
    q->p.exit_slot[0] = q->p.ninputs + q->p.ninstr - 1;
    q->p.exits[0] = spec(q, q->instr[q->p.ninstr - 1].out);
    char *src = emi_cuda_fused_source(&q->p);
    CHECK(src != NULL);
    void *cubin = NULL;
    size_t size = 0;
    char *log = NULL;
    emily_status s = src ? emi_cuda_fused_compile(src, ARCH, &cubin, &size, &log) : EMILY_ERR_INTERNAL;
    if (s) fprintf(stderr, "  %s: %s\n%s\n", what, emily_last_error(), log ? log : "");
    CHECK(s == EMILY_OK && cubin && size > 0);
    free(log);
    free(cubin);
    free(src);
    for (int i = 0; i < q->nheld; i++) emily_tensor_release(q->held[i]);
    q->nheld = 0;
}

#define DT_ALL(E, s, T) EMILY_##E,
static const emily_dtype all_dtypes[] = {EMI_DTYPES(DT_ALL)};
#define NDT ((int)(sizeof all_dtypes / sizeof all_dtypes[0]))

/* unary kernels from dt, as-type pairs from dt and select on dt */
static void unary_program(emily_dtype dt) {
    prog q;
    prog_init(&q, dt, 1);
#define UK(NAME, ST, DT, SRC, DST, EXPR) \
    if (EMILY_##SRC == dt) add(&q, EMI_FUSED_UNARY, op, dt, EMILY_##DST, 0, 0, -1, -1);
#define UOP(ENUM, name, rule)                   \
    {                                           \
        int op = EMILY_##ENUM;                  \
        EMI_UNARY_KERNELS(rule)(UK, ENUM, name) \
    }
    EMILY_UNARY_OPS(UOP)
#undef UK
#undef UOP
    for (int j = 0; j < NDT; j++)
        if (all_dtypes[j] != dt) add(&q, EMI_FUSED_CONVERT, 0, dt, all_dtypes[j], 0, 0, -1, -1);
    if (!emily_dtype_is_complex(dt)) add(&q, EMI_FUSED_SELECT, 0, dt, dt, dt, 0, 0, 0);
    char what[64];
    snprintf(what, sizeof what, "unary, as_type and select from %s", emily_dtype_name(dt));
    compile_ok(&q, what);
}

static void binary_program(emily_dtype dt) {
    prog q;
    prog_init(&q, dt, 2);
#define BK(NAME, OP, DT, TS, TD, TC, LD, F, ST, LOOP) \
    if (EMILY_##DT == dt)                             \
        add(&q, EMI_FUSED_BINARY, EMILY_##OP, dt, emi_binary_kernel_output(EMILY_##OP, dt), 0, 0, 1, -1);
#define BOP(ENUM, name, rule) EMI_BINARY_KERNELS(rule)(BK, ENUM, name)
    EMILY_BINARY_OPS(BOP)
#undef BK
#undef BOP
    char what[64];
    snprintf(what, sizeof what, "binary on %s", emily_dtype_name(dt));
    compile_ok(&q, what);
}
#endif

TEST(every_element_function_compiles_with_nvrtc) {
#ifdef EMILY_WITH_CUDA
#if defined(__SANITIZE_ADDRESS__)
    /* NVRTC's own allocations live until exit (LeakSanitizer would count
     * them): the plain build's run checks this */
    puts("  SKIPPED under AddressSanitizer: NVRTC's compilations run in the plain build's test");
    return;
#endif
    for (int j = 0; j < NDT; j++) {
        unary_program(all_dtypes[j]);
        binary_program(all_dtypes[j]);
    }
#else
    puts("  SKIPPED: built without CUDA (no NVRTC)");
#endif
}

/* The packed form (16-byte loads along a contiguous innermost axis that
 * the pack width divides): a bf16 input, an f32 row broadcast down the
 * columns and an f32 scalar; the source reads packs and compiles. */
TEST(packed_programs_compile) {
#if defined(EMILY_WITH_CUDA) && !defined(__SANITIZE_ADDRESS__)
    static const int64_t S[2] = {4, 16}, COL[2] = {4, 1};
    prog q;
    memset(&q, 0, sizeof q);
    emily_tensor *x = NULL, *col = NULL, *one = NULL, *out = NULL;
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_BF16, 2, S, &x));
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_F32, 2, COL, &col));
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_F32, 0, NULL, &one));
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_F32, 2, S, &out));
    q.p.rank = 2;
    q.p.shape = S;
    q.p.ninputs = 3;
    q.p.inputs[0] = x;
    q.p.inputs[1] = col;
    q.p.inputs[2] = one;
    q.p.instr = q.instr;
    add(&q, EMI_FUSED_CONVERT, 0, EMILY_BF16, EMILY_F32, 0, 0, -1, -1);         /* 3 */
    add(&q, EMI_FUSED_BINARY, EMILY_ADD, EMILY_F32, EMILY_F32, 0, 3, 1, -1);    /* 4 */
    add(&q, EMI_FUSED_BINARY, EMILY_GREATER, EMILY_F32, EMILY_U8, 0, 4, 2, -1); /* 5 */
    add(&q, EMI_FUSED_SELECT, 0, EMILY_F32, EMILY_F32, EMILY_U8, 5, 4, 2);      /* 6 */
    q.p.nexits = 1;
    q.p.exit_slot[0] = 6;
    q.p.exits[0] = out;
    char *src = emi_cuda_fused_source(&q.p);
    CHECK(src && strstr(src, "struct __align__(8) pin0") && strstr(src, "struct __align__(16) pout0"));
    void *cubin = NULL;
    size_t size = 0;
    char *log = NULL;
    emily_status st = src ? emi_cuda_fused_compile(src, ARCH, &cubin, &size, &log) : EMILY_ERR_INTERNAL;
    if (st) fprintf(stderr, "  packed: %s\n%s\n%s\n", emily_last_error(), log ? log : "", src ? src : "");
    CHECK(st == EMILY_OK && cubin);
    free(cubin);
    free(log);
    free(src);
    emily_tensor_release(x);
    emily_tensor_release(col);
    emily_tensor_release(one);
    emily_tensor_release(out);
#else
    puts("  SKIPPED: no NVRTC here (a build without CUDA, or under AddressSanitizer)");
#endif
}

/* A program that names no element function (an as_type to a dtype that
 * is none) has no source; the engine then runs the calls one by one. */
TEST(bad_programs_have_no_source) {
#ifdef EMILY_WITH_CUDA
    prog q;
    prog_init(&q, EMILY_F32, 1);
    add(&q, EMI_FUSED_CONVERT, 0, EMILY_F32, (emily_dtype)EMILY_DTYPE_COUNT, 0, 0, -1, -1);
    q.p.nexits = 1;
    q.p.exit_slot[0] = 1;
    q.p.exits[0] = spec(&q, EMILY_F32);
    CHECK(emi_cuda_fused_source(&q.p) == NULL);
    q.instr[0] = (emi_fused_instr){EMI_FUSED_BINARY, EMILY_ADD, EMILY_F32, EMILY_U8, 0, 0, 0, -1};
    CHECK(emi_cuda_fused_source(&q.p) == NULL); /* add writes f32, not u8 */
    q.instr[0] = (emi_fused_instr){EMI_FUSED_SELECT, 0, EMILY_F32, EMILY_F32, EMILY_C64, 0, 0, 0};
    CHECK(emi_cuda_fused_source(&q.p) == NULL); /* a complex predicate */
    void *cubin = NULL;
    size_t size = 0;
    char *log = NULL;
#if !defined(__SANITIZE_ADDRESS__)
    CHECK(emi_cuda_fused_compile("this is not CUDA", ARCH, &cubin, &size, &log) == EMILY_ERR_DEVICE);
    CHECK(cubin == NULL && log && strstr(log, "error"));
#endif
    free(log);
    for (int i = 0; i < q.nheld; i++) emily_tensor_release(q.held[i]);
#else
    puts("  SKIPPED: built without CUDA");
#endif
}

/* Compiled kernels are kept on disk (src/cuda/fused_disk.c): the second
 * request reads the first one's cubin; a damaged file is compiled again
 * and replaced; EMILY_KERNEL_CACHE=off keeps nothing. */
TEST(compiled_kernels_are_kept_on_disk) {
#if defined(EMILY_WITH_CUDA) && !defined(__SANITIZE_ADDRESS__)
    char dir[] = "/tmp/emily-kernel-cache-XXXXXX", before[4096] = "";
    const char *was = getenv("EMILY_KERNEL_CACHE");
    if (was) snprintf(before, sizeof before, "%s", was);
    CHECK(mkdtemp(dir) != NULL);
    setenv("EMILY_KERNEL_CACHE", dir, 1);
    prog q;
    prog_init(&q, EMILY_F32, 1);
    add(&q, EMI_FUSED_UNARY, EMILY_EXP, EMILY_F32, EMILY_F32, 0, 0, -1, -1);
    q.p.nexits = 1;
    q.p.exit_slot[0] = 1;
    q.p.exits[0] = spec(&q, EMILY_F32);
    char *src = emi_cuda_fused_source(&q.p);
    void *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    bool disk = true;
    CHECK(src && emi_cuda_fused_cubin(src, ARCH, &a, &na, NULL, &disk) == EMILY_OK && !disk);
    CHECK(src && emi_cuda_fused_cubin(src, ARCH, &b, &nb, NULL, &disk) == EMILY_OK && disk);
    CHECK(a && b && na == nb && memcmp(a, b, na) == 0);
    free(b);
    b = NULL;
    /* damage the one file: cut it short */
    char cmd[256];
    snprintf(cmd, sizeof cmd, "for f in %s/*.cubin; do truncate -s 100 \"$f\"; done", dir);
    CHECK(system(cmd) == 0);
    CHECK(src && emi_cuda_fused_cubin(src, ARCH, &b, &nb, NULL, &disk) == EMILY_OK && !disk);
    CHECK(b && nb == na && memcmp(a, b, na) == 0);
    free(b);
    b = NULL;
    CHECK(src && emi_cuda_fused_cubin(src, ARCH, &b, &nb, NULL, &disk) == EMILY_OK && disk);
    free(b);
    b = NULL;
    /* off: compiled every time */
    setenv("EMILY_KERNEL_CACHE", "off", 1);
    CHECK(src && emi_cuda_fused_cubin(src, ARCH, &b, &nb, NULL, &disk) == EMILY_OK && !disk);
    if (was) setenv("EMILY_KERNEL_CACHE", before, 1); /* the caller's setting back */
    else unsetenv("EMILY_KERNEL_CACHE");
    free(a);
    free(b);
    free(src);
    for (int i = 0; i < q.nheld; i++) emily_tensor_release(q.held[i]);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
#else
    puts("  SKIPPED: no NVRTC here (a build without CUDA, or under AddressSanitizer)");
#endif
}

/* ---- on the GPU: fused graphs against the same graphs unfused ----------- */

enum { R = 48, C = 80, NOUT = 7 };
static const int64_t RC[2] = {R, C}, CR[2] = {C, R}, CC[1] = {C}, R1[2] = {R, 1};

static int32_t constant(emily_graph *g, emily_dtype dt, double v) {
    emily_tensor *t = NULL;
    CHECK_OK(emily_constant(EMILY_CPU, dt, 0, NULL, emily_scalar_float(v), &t));
    int32_t id = -1;
    CHECK_OK(emily_graph_add_const(g, t, &id));
    emily_tensor_release(t);
    return id;
}

/* Parameters: x bf16 {R,C}, bias bf16 {C}, y f32 {R,C}, m f32 {R,1},
 * yt f32 {C,R} (its transpose is a strided input), k s32 {R,C},
 * z c64 {R,C}. Outputs: a bf16 GELU, an f32 chain, a select across
 * types, integer wrap-around, a complex chain, a value leaving its group
 * and a broadcasting call alone. */
static emily_graph *chains(bool fused) {
    emily_graph *g = NULL;
    CHECK_OK(emily_graph_create(&g));
    if (!g) return NULL;
    int32_t x, bias, y, m, yt, k, z;
    CHECK_OK(emily_graph_add_param(g, EMILY_BF16, 2, RC, &x));
    CHECK_OK(emily_graph_add_param(g, EMILY_BF16, 1, CC, &bias));
    CHECK_OK(emily_graph_add_param(g, EMILY_F32, 2, RC, &y));
    CHECK_OK(emily_graph_add_param(g, EMILY_F32, 2, R1, &m));
    CHECK_OK(emily_graph_add_param(g, EMILY_F32, 2, CR, &yt));
    CHECK_OK(emily_graph_add_param(g, EMILY_S32, 2, RC, &k));
    CHECK_OK(emily_graph_add_param(g, EMILY_C64, 2, RC, &z));
    emily_value bf = v_tmpl(EMILY_BF16, 2, RC), f32 = v_tmpl(EMILY_F32, 2, RC), u8 = v_tmpl(EMILY_U8, 2, RC),
                f16 = v_tmpl(EMILY_F16, 2, RC), s32 = v_tmpl(EMILY_S32, 2, RC), c64 = v_tmpl(EMILY_C64, 2, RC);
    /* GELU of x + bias in bf16, Bumblebee's form: the constants are f32
     * scalars, the results bf16 (they fit: computed in f32, not f64) */
    int32_t h = GRAPH_CALL(g, "add", &bf, v_ref(x), v_ref(bias));
    int32_t half = GRAPH_CALL(g, "multiply", &bf, v_ref(h), v_ref(constant(g, EMILY_F32, 0.5)));
    int32_t d = GRAPH_CALL(g, "divide", &bf, v_ref(h), v_ref(constant(g, EMILY_F32, 1.4142135623730951)));
    int32_t e = GRAPH_CALL(g, "erf", &bf, v_ref(d));
    int32_t e1 = GRAPH_CALL(g, "add", &bf, v_ref(e), v_ref(constant(g, EMILY_F32, 1.0)));
    int32_t gelu = GRAPH_CALL(g, "multiply", &bf, v_ref(half), v_ref(e1));
    /* f32: exp(y - m) * transpose(yt) + pow(y, 3) */
    emily_value perm[2] = {v_int(1), v_int(0)};
    int32_t tr = GRAPH_CALL(g, "transpose", &f32, v_ref(yt), v_list(perm, 2));
    int32_t sub = GRAPH_CALL(g, "subtract", &f32, v_ref(y), v_ref(m));
    int32_t ex = GRAPH_CALL(g, "exp", &f32, v_ref(sub));
    int32_t mu = GRAPH_CALL(g, "multiply", &f32, v_ref(ex), v_ref(tr));
    int32_t pw = GRAPH_CALL(g, "pow", &f32, v_ref(y), v_ref(constant(g, EMILY_F32, 3.0)));
    int32_t chain = GRAPH_CALL(g, "add", &f32, v_ref(mu), v_ref(pw));
    /* across types: select(k > y, y, tanh(y)) as f16, negated */
    int32_t gt = GRAPH_CALL(g, "greater", &u8, v_ref(k), v_ref(y));
    int32_t th = GRAPH_CALL(g, "tanh", &f32, v_ref(y));
    int32_t se = GRAPH_CALL(g, "select", &f32, v_ref(gt), v_ref(y), v_ref(th));
    int32_t as = GRAPH_CALL(g, "as_type", &f16, v_ref(se));
    int32_t ng = GRAPH_CALL(g, "negate", &f16, v_ref(as));
    /* integers: k * k * 65537 wraps in s32; bitwise and with k */
    int32_t kk = GRAPH_CALL(g, "multiply", &s32, v_ref(k), v_ref(k));
    emily_tensor *big = SCALAR(EMILY_S32, int32_t, 65537);
    int32_t bigc = -1;
    CHECK_OK(emily_graph_add_const(g, big, &bigc));
    emily_tensor_release(big);
    int32_t kw = GRAPH_CALL(g, "multiply", &s32, v_ref(kk), v_ref(bigc));
    int32_t ka = GRAPH_CALL(g, "bitwise_and", &s32, v_ref(kw), v_ref(k));
    /* complex: exp(z) * z + conjugate(z) */
    int32_t ez = GRAPH_CALL(g, "exp", &c64, v_ref(z));
    int32_t zz = GRAPH_CALL(g, "multiply", &c64, v_ref(ez), v_ref(z));
    int32_t cj = GRAPH_CALL(g, "conjugate", &c64, v_ref(z));
    int32_t cz = GRAPH_CALL(g, "add", &c64, v_ref(zz), v_ref(cj));
    /* one call alone that broadcasts a column: a program of one call */
    int32_t lone = GRAPH_CALL(g, "multiply", &f32, v_ref(y), v_ref(m));
    /* h leaves its group too (an output of its own) */
    int32_t outs[NOUT] = {gelu, chain, ng, ka, cz, h, lone};
    CHECK_OK(emily_graph_set_outputs(g, NOUT, outs));
    emily_graph_options o = {.no_optimize = !fused};
    CHECK_OK(emily_graph_compile(g, tc_device, &o));
    return g;
}

TEST(gpu_fused_chains_give_the_calls_bits) {
    emily_graph *f = chains(true), *u = chains(false);
    emily_graph_stats st;
    CHECK_OK(emily_graph_get_stats(f, &st));
    if (tc_device.type == EMILY_DEVICE_CUDA) CHECK(st.fused_groups >= 5 && st.fused_calls >= 17);
    for (int run = 0; run < 4; run++) {
        emily_tensor *in[7] = {tc_on_device(tc_tensor(EMILY_BF16, 2, RC, TC_GENERAL)),
                               tc_on_device(tc_tensor(EMILY_BF16, 1, CC, TC_GENERAL)),
                               tc_on_device(tc_tensor(EMILY_F32, 2, RC, TC_GENERAL)),
                               tc_on_device(tc_tensor(EMILY_F32, 2, R1, TC_GENERAL)),
                               tc_on_device(tc_tensor(EMILY_F32, 2, CR, TC_GENERAL)),
                               tc_on_device(tc_tensor(EMILY_S32, 2, RC, TC_BITS)),
                               tc_on_device(tc_tensor(EMILY_C64, 2, RC, TC_NEAR_ONE))};
        emily_tensor *a[NOUT] = {NULL}, *b[NOUT] = {NULL};
        CHECK_OK(emily_graph_run(f, in, 7, a, NOUT));
        CHECK_OK(emily_graph_run(u, in, 7, b, NOUT));
        static const char *const names[NOUT] = {"bf16 gelu", "f32 chain",          "select as f16",  "s32 wrap",
                                                "c64 chain", "bf16 add (an exit)", "broadcast alone"};
        for (int i = 0; i < NOUT; i++) CHECK(a[i] && b[i] && tc_same(names[i], b[i], a[i]));
        for (int i = 0; i < NOUT; i++) {
            emily_tensor_release(a[i]);
            emily_tensor_release(b[i]);
        }
        for (int i = 0; i < 7; i++) emily_tensor_release(in[i]);
    }
    CHECK_OK(emily_graph_get_stats(f, &st));
    if (tc_device.type == EMILY_DEVICE_CUDA) CHECK(st.replays == 3); /* the second run records and replays */
    emily_graph_free(f);
    emily_graph_free(u);
}

int main(int argc, char **argv) {
    if (!harness_args(argc, argv)) return 2;
    static const harness_case always[] = {CASE(every_element_function_compiles_with_nvrtc),
                                          CASE(packed_programs_compile),
                                          CASE(bad_programs_have_no_source),
                                          CASE(compiled_kernels_are_kept_on_disk),
                                          {NULL, NULL}};
    static const harness_case gpu[] = {CASE(gpu_fused_chains_give_the_calls_bits), {NULL, NULL}};
    int rc = harness_run("cuda_fused (without a GPU too)", always);
    static const harness_gpu_cases g = {"cuda_fused", gpu,  gpu,  "cuda_fused (cpu against cpu)",
                                        &tc_device,   NULL, false};
    return harness_gpu_finish(rc, &g);
}
