/* Host stand-ins for the NVVM intrinsics (and the few inline PTX
 * instructions, see rewrite_ll.py) that libdevice's f64 math functions
 * use, so that those functions, compiled for the host, compute what the
 * GPU computes. Exact operations are exact here too (fma, the rounded
 * adds and products, conversions, 128-bit integer steps). The
 * approximations (rcp.approx.ftz.f64, rsqrt.approx.ftz.f64, ex2/lg2
 * .approx.ftz.f32) only seed Newton iterations that libdevice refines to
 * full precision; here they are the exact value cut to the 32 high bits
 * (f64) or libm's f32 function, which may differ from the hardware's in
 * their last bits: an input where that changes the refined result would
 * be misreported, none is known. Checked against an H200: Nx's eight f64
 * doctest failures of tan, atan, atanh, asinh and erfc come out as on the
 * GPU, digit for digit. */
#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    uint64_t lo, hi;
} u128;

static uint64_t bits(double x) {
    uint64_t u;
    memcpy(&u, &x, 8);
    return u;
}
static double from_bits(uint64_t u) {
    double x;
    memcpy(&x, &u, 8);
    return x;
}
static double high32(double x) { return from_bits(bits(x) & 0xffffffff00000000ull); }

/* __nvvm_reflect: sm_90, no flush to zero. */
int emu_reflect(const char *what) { return strcmp(what, "__CUDA_ARCH") == 0 ? 900 : 0; }

double emu_fma_rn_d(double a, double b, double c) { return fma(a, b, c); }
double emu_add_rn_d(double a, double b) { return a + b; }
double emu_mul_rn_d(double a, double b) { return a * b; }
double emu_fabs_d(double a) { return fabs(a); }
float emu_fabs_f(float a) { return fabsf(a); }
float emu_fabs_ftz_f(float a) { return fabsf(a); }
double emu_sqrt_rn_d(double a) { return sqrt(a); }
double emu_trunc_d(double a) { return trunc(a); }
float emu_round_f(float a) { return roundf(a); }
int emu_d2i_hi(double a) { return (int)(bits(a) >> 32); }
int emu_d2i_lo(double a) { return (int)(uint32_t)bits(a); }
double emu_lohi_i2d(int lo, int hi) { return from_bits(((uint64_t)(uint32_t)hi << 32) | (uint32_t)lo); }
int emu_d2i_rn(double a) { return (int)lrint(a); }
int emu_f2i_rn(float a) { return (int)lrintf(a); }
int emu_f2i_rn_ftz(float a) { return (int)lrintf(a); }

double emu_rcp_approx_ftz_d(double a) {
    double t = high32(a);
    if (fabs(t) < 0x1p-1022) return copysign(INFINITY, a);
    return high32(1.0 / t);
}
double emu_rsqrt_approx_ftz_d(double a) { return high32(1.0 / sqrt(high32(a))); }
float emu_ex2_approx_ftz_f(float a) { return exp2f(a); }
float emu_lg2_approx_ftz_f(float a) { return log2f(a); }

/* setp.equ + selp: c where a == b or either is NaN, else d. */
double emu_sel_equ(double a, double b, double c, double d) { return (a == b || a != a || b != b) ? c : d; }

/* The 128-bit integer steps of the huge-argument trig reduction. */
u128 emu_umad128(uint64_t a, uint64_t b, uint64_t c) {
    unsigned __int128 r = (unsigned __int128)a * b + c;
    return (u128){(uint64_t)r, (uint64_t)(r >> 64)};
}
u128 emu_mul128(uint64_t a, uint64_t b) {
    unsigned __int128 r = (unsigned __int128)a * b;
    return (u128){(uint64_t)r, (uint64_t)(r >> 64)};
}
u128 emu_add128(uint64_t alo, uint64_t ahi, uint64_t blo, uint64_t bhi) {
    unsigned __int128 r = (((unsigned __int128)ahi << 64) | alo) + (((unsigned __int128)bhi << 64) | blo);
    return (u128){(uint64_t)r, (uint64_t)(r >> 64)};
}
u128 emu_sub128(uint64_t alo, uint64_t ahi, uint64_t blo, uint64_t bhi) {
    unsigned __int128 r = (((unsigned __int128)ahi << 64) | alo) - (((unsigned __int128)bhi << 64) | blo);
    return (u128){(uint64_t)r, (uint64_t)(r >> 64)};
}
