# libemily build. `make` builds the library (static and shared), the demo,
# the conformance runner and the unit tests into $(BUILD).
#   make SAN=1          AddressSanitizer + UndefinedBehaviorSanitizer build (build-san/, CPU engine only)
#   make CUDA=0         CPU-only even where nvcc is present
#   make TSAN=1         ThreadSanitizer build (build-tsan/, clang, CPU engine only);
#                       `make TSAN=1 check` runs the unit tests that use threads
#   make CC=clang       the same build with clang (warning-free, like gcc's)
#   make EXPORT_ALL=1   every global exported from libemily.so, programs linked
#                       against it (build-export/, for bench/gpu's packs)
CC ?= gcc
SAN ?= 0
NVCC ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
# Sanitizer builds check the host code: they leave the CUDA engine out (its
# device code is compiled, and tested on a GPU, by the normal build).
ifeq ($(SAN),1)
CUDA ?= 0
endif

# ---- tooling: ThreadSanitizer build (TSAN=1) --------------------------------
# clang only: OpenMP under TSan needs a runtime whose synchronisation TSan
# can see. GCC's libgomp is not instrumented (every parallel region would
# be reported); clang's libomp reports its barriers, tasks and locks
# through OMPT, and LLVM's Archer tool (libarcher.so, beside libomp)
# turns those into TSan annotations. `make TSAN=1 check` loads it with
# OMP_TOOL_LIBRARIES. The CUDA engine is left out as under SAN=1.
TSAN ?= 0
ifeq ($(TSAN),1)
ifeq ($(SAN),1)
$(error SAN=1 and TSAN=1 do not combine: build them separately)
endif
ifeq ($(origin CC),default)
CC := clang
endif
CUDA ?= 0
endif
# ---- end tooling ----------------------------------------------------------
CUDA ?= $(if $(and $(NVCC),$(wildcard src/cuda/*.cu)),1,0)
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))

ifeq ($(SAN),1)
BUILD ?= build-san
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
OPT := -O1 -g
else ifeq ($(TSAN),1)
BUILD ?= build-tsan
SANFLAGS := -fsanitize=thread -fno-omit-frame-pointer
OPT := -O1 -g
else
# -falign-loops=32: at -O2 GCC aligns loops to 8 bytes only, so whether a
# kernel's inner loop crosses a 32/64-byte fetch window depends on what
# else the file holds; on the AMD EPYC dev host the f64 add's 26-byte SSE
# loop went from 1040 to 1270 ns per 3000 elements when an unrelated
# change moved it across one (bench/compare_builds; aligned: 1075 ns).
OPT := -O2 -g -falign-loops=32
endif
ifeq ($(EXPORT_ALL),1)
BUILD ?= build-export
endif
BUILD ?= build

# -ffp-contract=off: no fused multiply-add unless a kernel asks for one;
# the reference's answers (Elixir's double arithmetic) round every product.
# (-std=c11 implies it on GCC; stated so that an -std=gnu11 or clang build
# keeps it.)
CFLAGS := -std=c11 -D_GNU_SOURCE $(OPT) -ffp-contract=off -Wall -Wextra -Werror -Wno-unknown-pragmas \
          -fPIC -fvisibility=hidden -fopenmp -Iinclude -Isrc $(SANFLAGS)
LDLIBS := -llapacke -lopenblas -lsleef -ljansson -lm -lpthread
LDFLAGS := -fopenmp $(SANFLAGS)

# clang: `#pragma GCC target` is GCC's alone, so the files that use it
# for their instruction set (reached only after a runtime CPU check) get
# the same set from flags; a `#pragma omp simd` loop clang cannot
# vectorize is a hint not taken, not an error.
CC_IS_CLANG := $(shell $(CC) --version 2>/dev/null | grep -qi clang && echo 1)
ifeq ($(CC_IS_CLANG),1)
CFLAGS += -Wno-pass-failed
$(BUILD)/obj/src/cpu/unary_avx2.o: CFLAGS += -mavx2 -mfma -mf16c
$(BUILD)/obj/src/cpu/unary_avx512.o: CFLAGS += -mavx512f -mavx512dq -mavx2 -mfma -mf16c
$(BUILD)/obj/src/cpu/sort/avx512.o: CFLAGS += -mavx512f -mavx512dq -mavx512bw -mavx512vl -mpopcnt -mbmi2
endif

# src/cpu keeps families with several files in folders of their own
# (src/cpu/reduce, src/cpu/sort, src/cpu/linalg and its nx07 folder).
LIB_SRC := $(wildcard src/core/*.c src/ops/*.c src/cpu/*.c src/cpu/*/*.c src/cpu/*/*/*.c src/nx/*.c src/graph/*.c src/io/*.c)
# CUDA engine (src/cuda): .cu kernels compiled by nvcc for sm_90 plus PTX,
# the engine's runtime (allocator, streams, transfers) in src/cuda/*.c.
# The library still runs CPU work where no GPU or driver is present.
# --fmad=false: no contraction into FMAs, so kernels round like the CPU's C.
ifeq ($(CUDA),1)
LIB_SRC := $(filter-out src/core/no_cuda.c,$(LIB_SRC))
CU_SRC := $(wildcard src/cuda/*.cu)
CU_C_SRC := $(wildcard src/cuda/*.c)
LIB_SRC += $(CU_C_SRC)
NVFLAGS := -std=c++20 -O3 -lineinfo --fmad=false -Xcompiler -fPIC,-fvisibility=hidden -Iinclude -Isrc \
           -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
           -Werror all-warnings -MMD -MP
CU_OBJ := $(CU_SRC:%.cu=$(BUILD)/obj/%.o)
# The headers the fused kernels are compiled from at run time (NVRTC,
# src/cuda/fused.c), embedded in the library: the closure of what
# cuda/unary_fns.cuh, cuda/binary_fns.cuh and core/convert_rules.h include
# (a missing one fails tests/unit/test_cuda_fused's compilations).
FUSED_HEADERS := $(wildcard include/emily/*.h) src/core/binary_kernels.h src/core/convert_rules.h \
    src/core/dtype_list.h src/core/host_device.h src/core/op_rules.h src/core/scalar_binary.h \
    src/core/scalar_complex.h src/core/scalar_convert.h src/core/scalar_unary.h src/core/unary_kernels.h \
    src/cuda/binary_fns.cuh src/cuda/correctly_rounded.cuh src/cuda/correctly_rounded_trig.cuh \
    src/cuda/element_fn.cuh src/cuda/unary_f64.cuh src/cuda/unary_fns.cuh
CU_OBJ += $(BUILD)/obj/gen/fused_headers.o
LDLIBS += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcusolver -lcudnn -lcufft -lcublasLt -lcublas -lnvrtc -lcudart -lstdc++
CFLAGS += -DEMILY_WITH_CUDA -I$(CUDA_HOME)/include
ifneq ($(wildcard src/cuda/dot.cu),)
CFLAGS += -DEMILY_CUDA_HAVE_DOT
endif
endif

LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o) $(CU_OBJ)

# ---- EXPORT_ALL=1: one shared engine for the GPU packs ---------------------
# Tests and benchmarks call internal emi_ functions, so they link the
# engine statically; with the CUDA engine each then carries its own copy
# of the kernels (~30 MB of fatbin), too much to send to the GPU machine.
# EXPORT_ALL=1 builds the engine with default visibility (every global
# exported) into build-export/ and links the programs against that one
# libemily.so (found beside them, in ../ or in ../lib). The library's own
# calls still bind inside it (-fno-semantic-interposition,
# -Bsymbolic-functions), as in the release build, whose libemily.so keeps
# -fvisibility=hidden.
ENGINE_LIB := $(BUILD)/libemily.a
ifeq ($(EXPORT_ALL),1)
CFLAGS := $(filter-out -fvisibility=hidden,$(CFLAGS)) -fno-semantic-interposition
NVFLAGS := $(subst -fvisibility=hidden,-fvisibility=default,$(NVFLAGS))
SO_LDFLAGS := -Wl,-Bsymbolic-functions
ENGINE_LIB := $(BUILD)/libemily.so
PROGRAM_RPATH := -Wl,-rpath,'$$ORIGIN:$$ORIGIN/..:$$ORIGIN/../lib'
$(BUILD)/emily_demo $(BUILD)/emily_run $(BUILD)/conformance: private LDFLAGS += $(PROGRAM_RPATH)
$(BUILD)/tests/%: private LDFLAGS += $(PROGRAM_RPATH)
endif
TEST_SRC := $(wildcard tests/unit/test_*.c)
TESTS := $(TEST_SRC:tests/unit/%.c=$(BUILD)/tests/%)
# ---- tooling: what `make TSAN=1 check` runs --------------------------------
# The unit tests whose cases run code on several threads: the caller-runs
# pool (src/cpu/unary_map.c: unary, binary, convert, graph runs; the fused
# norms' rows), the OpenMP regions (reduce, sort, dot, the blocked linear
# algebra), streams and ops on their own threads (cuda's CPU cases,
# unary's concurrent callers). Archer must be loaded for OpenMP's synchronisation to count;
# ignore_noninstrumented_modules: OpenBLAS and libomp's own accesses are
# not ours to check; die_after_fork=0: unary's fork test starts the pool
# again in a child of a threaded parent (pool_after_fork_child), which
# TSan refuses by default; allocator_may_return_null=1: tests ask for
# impossible sizes and expect a clean error, as under SAN=1. The whole
# run fails on the first report.
ifeq ($(TSAN),1)
ifneq ($(CC_IS_CLANG),1)
$(error TSAN=1 needs clang (CC=clang): see the ThreadSanitizer block above)
endif
ARCHER := $(abspath $(shell $(CC) -print-resource-dir)/../../libarcher.so)
ifeq ($(wildcard $(ARCHER)),)
$(error TSAN=1: $(ARCHER) not found (Debian: apt-get install libomp-dev))
endif
# Function multiversioning (target_clones) makes ifunc resolvers, which the
# dynamic loader runs before TSan's runtime is up; clang 14 instruments
# their entry (__tsan_func_entry) and the program dies at load. The files
# that use it are built without function entry/exit hooks: their memory
# accesses are still checked, only their own frames are missing from the
# stacks of a report.
TSAN_NO_ENTRY := $(shell grep -l target_clones $(LIB_SRC) 2>/dev/null)
ifneq ($(TSAN_NO_ENTRY),)
$(TSAN_NO_ENTRY:%.c=$(BUILD)/obj/%.o): CFLAGS += -mllvm -tsan-instrument-func-entry-exit=0
endif
TSAN_TESTS := unary binary convert graph reduce sort dot linalg_blocked cuda fast_norm
TESTS := $(TSAN_TESTS:%=$(BUILD)/tests/test_%)
CHECK_ENV := OMP_TOOL_LIBRARIES=$(ARCHER) TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ignore_noninstrumented_modules=1 die_after_fork=0 allocator_may_return_null=1 $(TSAN_OPTIONS)"
endif
# ---- end tooling ----------------------------------------------------------

all: $(BUILD)/libemily.a $(BUILD)/libemily.so $(BUILD)/emily_demo $(BUILD)/emily_embed $(BUILD)/emily_generate $(BUILD)/emily_run $(BUILD)/conformance $(TESTS)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/obj/%.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) -c $< -o $@

$(BUILD)/gen/fused_headers.c: $(FUSED_HEADERS) tools/embed_headers.sh
	@mkdir -p $(dir $@)
	sh tools/embed_headers.sh $(FUSED_HEADERS) > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/gen/fused_headers.o: $(BUILD)/gen/fused_headers.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# The fast FFT's cuFFT store callbacks (src/cuda/lto): LTO-IR that cuFFT
# links into its own kernels at plan time, embedded in the library as a
# C array (fft_cufft.cu includes it).
ifeq ($(CUDA),1)
$(BUILD)/gen/fft_store.fatbin: src/cuda/lto/fft_store.cu src/cuda/lto/fft_store_params.h
	@mkdir -p $(dir $@)
	$(NVCC) -std=c++20 --fmad=false -Iinclude -Isrc -Werror all-warnings -dc -fatbin \
	    -gencode arch=compute_90,code=lto_90 $< -o $@
$(BUILD)/gen/fft_store_lto.h: $(BUILD)/gen/fft_store.fatbin
	$(CUDA_HOME)/bin/bin2c -c -n emi_fft_store_lto $< > $@.tmp && mv $@.tmp $@
$(BUILD)/obj/src/cuda/fft_cufft.o: $(BUILD)/gen/fft_store_lto.h
$(BUILD)/obj/src/cuda/fft_cufft.o: NVFLAGS += -I$(BUILD)/gen
endif

$(BUILD)/libemily.a: $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libemily.so: $(LIB_OBJ)
	$(CC) -shared $(LDFLAGS) $(SO_LDFLAGS) -Wl,-soname,libemily.so -o $@ $^ $(LDLIBS)

$(BUILD)/emily_demo: $(BUILD)/obj/demo/demo.o $(ENGINE_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# examples/embed: sentence embeddings with all-MiniLM-L6-v2 from C (the
# README's first command); test_embed links the same pieces.
# examples/common: what every model example shares (the mapped safetensors
# reader, chains of engine calls, Unicode tables).
EXAMPLES_COMMON_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard examples/common/*.c))
$(BUILD)/obj/examples/%.o: CFLAGS += -Iexamples/common
EMBED_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(filter-out examples/embed/main.c,$(wildcard examples/embed/*.c))) \
             $(EXAMPLES_COMMON_OBJ)
$(BUILD)/emily_embed: $(BUILD)/obj/examples/embed/main.o $(EMBED_OBJ) $(ENGINE_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(BUILD)/obj/tests/unit/test_embed.o $(BUILD)/obj/tests/unit/embed_synthetic.o: CFLAGS += -Iexamples/embed -Iexamples/common
$(BUILD)/tests/test_embed: $(BUILD)/obj/tests/unit/test_embed.o $(BUILD)/obj/tests/unit/embed_synthetic.o \
                           $(BUILD)/obj/tests/unit/harness.o $(EMBED_OBJ) $(ENGINE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# examples/generate: text generation with SmolLM2-135M-Instruct (GGUF)
# from C; test_generate links the same pieces.
GENERATE_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(filter-out examples/generate/main.c,$(wildcard examples/generate/*.c))) \
                $(EXAMPLES_COMMON_OBJ)
$(BUILD)/emily_generate: $(BUILD)/obj/examples/generate/main.o $(GENERATE_OBJ) $(ENGINE_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/obj/tests/unit/test_generate.o: CFLAGS += -Iexamples/generate -Iexamples/common
$(BUILD)/tests/test_generate: $(BUILD)/obj/tests/unit/test_generate.o $(BUILD)/obj/tests/unit/harness.o \
                              $(GENERATE_OBJ) $(ENGINE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# test_gguf writes its GGUF files with its own writer (tests/unit/gguf_writer.c).
$(BUILD)/tests/test_gguf: $(BUILD)/obj/tests/unit/test_gguf.o $(BUILD)/obj/tests/unit/gguf_writer.o \
                          $(BUILD)/obj/tests/unit/harness.o $(ENGINE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# test_bpe: the example's byte-level BPE tokenizer (bpe_*.c), with small
# GGUF files written by tests/unit/gguf_writer.c.
$(BUILD)/obj/tests/unit/test_bpe.o: CFLAGS += -Iexamples/generate -Iexamples/common
$(BUILD)/tests/test_bpe: $(BUILD)/obj/tests/unit/test_bpe.o $(BUILD)/obj/tests/unit/harness.o \
                         $(BUILD)/obj/tests/unit/gguf_writer.o $(GENERATE_OBJ) $(ENGINE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# bench/fast_norm.c: the fused norms against their composed eager ops (not
# part of `all`; bench/fast_norm.c says how to run it).
$(BUILD)/bench_fast_norm: $(BUILD)/obj/bench/fast_norm.o $(ENGINE_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
# bench/sdpa.c: the fused attention against its composed eager ops (the
# same: not part of `all`, bench/sdpa.c says how to run it).
$(BUILD)/bench_sdpa: $(BUILD)/obj/bench/sdpa.o $(ENGINE_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# bench/quant.c: the fused quantized matmul against the f32 dot (not part
# of `all`; bench/quant.c says how to run it).
$(BUILD)/bench_quant: $(BUILD)/obj/bench/quant.o $(ENGINE_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/emily_run: $(BUILD)/obj/tools/emily_run.o $(ENGINE_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/conformance: $(BUILD)/obj/tests/conformance/runner.o $(BUILD)/obj/tests/conformance/accumulation.o $(BUILD)/obj/tests/conformance/json_values.o $(BUILD)/obj/tests/conformance/compare.o $(BUILD)/obj/tests/conformance/properties.o $(BUILD)/obj/tests/conformance/properties_exact.o $(BUILD)/obj/tests/conformance/property_math.o $(BUILD)/obj/tests/conformance/corpus_file.o $(ENGINE_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) -lz

$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(BUILD)/obj/tests/unit/harness.o $(ENGINE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Runs every unit test binary; fails on the first failure.
check: all
	@for t in $(TESTS); do echo "== $$t"; $(CHECK_ENV) $$t || exit 1; done

clean:
	rm -rf build build-san build-tsan

.PHONY: all check clean
# Object files reached only through pattern rules (the tests') are
# intermediates to make, which deletes them after each build and so
# rebuilds them every time: keep them.
.SECONDARY:
-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# test_alloc_failure makes the N-th allocation fail: the linker's --wrap
# sends every malloc, calloc, realloc and aligned_alloc of the test and
# of the library (linked statically) through tests/unit/fail_alloc.c.
ALLOC_WRAP := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=aligned_alloc
$(BUILD)/tests/test_alloc_failure: $(BUILD)/obj/tests/unit/test_alloc_failure.o \
                                   $(BUILD)/obj/tests/unit/fail_alloc.o \
                                   $(BUILD)/obj/tests/unit/harness.o $(BUILD)/libemily.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(ALLOC_WRAP) -o $@ $^ $(LDLIBS)
# test_alloc_corpus: the same injection over a slice of the conformance
# corpus, decoded by the runner's own JSON decoder.
$(BUILD)/tests/test_alloc_corpus: $(BUILD)/obj/tests/unit/test_alloc_corpus.o \
                                  $(BUILD)/obj/tests/unit/fail_alloc.o $(BUILD)/obj/tests/unit/harness.o \
                                  $(BUILD)/obj/tests/conformance/json_values.o \
                                  $(BUILD)/obj/tests/conformance/corpus_file.o $(BUILD)/libemily.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(ALLOC_WRAP) -o $@ $^ $(LDLIBS) -lz

# test_cuda_libm runs the CUDA engine's f64 math (host+device headers,
# tests/unit/cuda_libm_host.cu) on the host against glibc: nvcc compiles
# it where the CUDA engine is built, the C++ compiler elsewhere (the
# headers are plain C++ without nvcc). No contraction into FMAs on the
# host either: the functions' bits depend on it.
LIBM_HOST_OBJ := $(BUILD)/obj/tests/unit/cuda_libm_host.o
$(BUILD)/tests/test_cuda_libm: $(BUILD)/obj/tests/unit/test_cuda_libm.o $(LIBM_HOST_OBJ) \
                               $(BUILD)/obj/tests/unit/harness.o $(ENGINE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
ifeq ($(CUDA),1)
$(LIBM_HOST_OBJ): NVFLAGS += -Xcompiler -ffp-contract=off
else
CXX ?= g++
$(LIBM_HOST_OBJ): tests/unit/cuda_libm_host.cu
	@mkdir -p $(dir $@)
	$(CXX) -std=c++20 -x c++ $(OPT) -ffp-contract=off -Wall -Wextra -Werror -fPIC -Iinclude -Isrc $(SANFLAGS) -MMD -MP -c $< -o $@
endif
