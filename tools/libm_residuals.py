#!/usr/bin/env python3
"""Checks the inputs where test_cuda_libm finds the CUDA engine's f64 math
different from glibc: for the ops computed correctly rounded (exp, log1p,
sin, cos, tan, asin, acos, atan, cbrt), is the CUDA value the correctly
rounded one (mpmath, 300 bits)? For Nx's formulas over exp (expm1 = exp(x) - 1,
sigmoid) and the ops that repeat glibc's (sinh, cosh, acosh, asinh, erf,
erfc), does glibc's exp or log
misround one of the formula's ingredients there (so glibc's own formula
over correctly rounded ingredients gives the CUDA value)?

usage: EMILY_TEST_LIBM_DUMP=1 build/tests/test_cuda_libm | tools/libm_residuals.py
needs: python3-mpmath"""
import ctypes
import math
import re
import struct
import sys
from collections import defaultdict

from mpmath import mp, mpf

mp.prec = 300
libm = ctypes.CDLL("libm.so.6")


def libm_fn(name):
    f = getattr(libm, name)
    f.restype, f.argtypes = ctypes.c_double, [ctypes.c_double]
    return f


gexp, glog = libm_fn("exp"), libm_fn("log")
H = float.fromhex
THIRD = 1.0 / 3.0
# the exact values of Nx's formulas (Nx's log1p is log(x + 1) with x + 1 rounded)
EXACT = {
    'exp': mp.exp, 'log': mp.log, 'log1p': lambda x: mp.log(mpf(float(x) + 1.0)), 'sin': mp.sin,
    'cos': mp.cos, 'tan': mp.tan, 'asin': mp.asin, 'acos': mp.acos, 'atan': mp.atan,
    'cbrt': lambda x: mp.power(x, mpf(THIRD)) if x >= 0 else -mp.power(-x, mpf(THIRD)),
}


def exp_misrounds(a):
    return gexp(a) != float(mp.exp(mpf(a)))


def log_misrounds(a):
    return glog(a) != float(mp.log(mpf(a)))


def high_part(a):
    return struct.unpack('<d', struct.pack('<Q', struct.unpack('<Q', struct.pack('<d', a))[0] & ~0xffffffff))[0]


# erfc's tail: exp(-z^2 - 0.5625) * exp((z - x)(z + x) + R/S), glibc's rational R/S in 1/x^2
NEAR_R = [H(v) for v in ("-0x1.43412600d6435p-7 -0x1.63416e4ba7360p-1 -0x1.51e0441b0e726p+3 -0x1.f300ae4cba38dp+5 "
                         "-0x1.44cb184282266p+7 -0x1.7135cebccabb2p+7 -0x1.4526557e4d2f2p+6 -0x1.3a0efc69ac25cp+3").split()]
NEAR_S = [1.0] + [H(v) for v in ("0x1.3a6b9bd707687p+4 0x1.1350c526ae721p+7 0x1.b290dd58a1a71p+8 0x1.42b1921ec2868p+9 "
                                 "0x1.ad02157700314p+8 0x1.b28a3ee48ae2cp+6 0x1.a47ef8e484a93p+2 -0x1.eeff2ee749a62p-5").split()]
FAR_R = [H(v) for v in ("-0x1.4341239e86f4ap-7 -0x1.993ba70c285dep-1 -0x1.1c209555f995ap+4 -0x1.4145d43c5ed98p+7 "
                        "-0x1.3ec881375f228p+9 -0x1.004616a2e5992p+10 -0x1.e384e9bdc383fp+8").split()]
FAR_S = [1.0] + [H(v) for v in ("0x1.e568b261d5190p+4 0x1.45cae221b9f0ap+8 0x1.802eb189d5118p+10 0x1.8ffb7688c246ap+11 "
                                "0x1.3f219cedf3be6p+11 0x1.da874e79fe763p+8 -0x1.670e242712d62p+4").split()]


def erfc_exp_args(x, near):
    s = 1.0 / (x * x)
    s2 = s * s
    s4 = s2 * s2
    s6 = s4 * s2
    r, q = (NEAR_R, NEAR_S) if near else (FAR_R, FAR_S)
    rr = (r[0] + s * r[1]) + s2 * (r[2] + s * r[3]) + s4 * (r[4] + s * r[5])
    qq = (q[0] + s * q[1]) + s2 * (q[2] + s * q[3]) + s4 * (q[4] + s * q[5]) + s6 * (q[6] + s * q[7])
    if near:
        rr += s6 * (r[6] + s * r[7])
        qq += (s4 * s4) * q[8]
    else:
        rr += s6 * r[6]
    z = high_part(x)
    return [-z * z - 0.5625, (z - x) * (z + x) + rr / qq]


def ingredient_misrounds(op, x):
    a = abs(x)
    if op == 'sigmoid':
        return exp_misrounds(-x)
    if op == 'expm1':
        return exp_misrounds(x)
    if op in ('sinh', 'cosh'):
        return exp_misrounds(a) or exp_misrounds(0.5 * a)
    if op == 'acosh':
        return log_misrounds(x if x >= 2**28 else 2.0 * x - 1.0 / (x + math.sqrt(x * x - 1.0)))
    if op == 'asinh':
        return log_misrounds(a if a > 2**28 else 2.0 * a + 1.0 / (math.sqrt(a * a + 1.0) + a))
    if op in ('erf', 'erfc'):
        near = a < (H('0x1.6db6dp+1') if op == 'erfc' else H('0x1.6db6ep+1'))
        return a >= 1.25 and any(exp_misrounds(v) for v in erfc_exp_args(a, near))
    return False


def main():
    seen, ours = defaultdict(int), defaultdict(int)
    for line in sys.stdin:
        m = re.match(r'\s*(\w+)\((\S+)\): cuda (\S+), glibc (\S+)', line)
        if not m:
            continue
        op, x, cuda = m.group(1), H(m.group(2)), H(m.group(3))
        seen[op] += 1
        if op in EXACT:
            ours[op] += cuda == float(EXACT[op](mpf(x)))
        else:
            ours[op] += ingredient_misrounds(op, x)
    for op in sorted(seen):
        what = 'CUDA correctly rounded, glibc not' if op in EXACT else "glibc's exp/log misrounds an ingredient"
        print(f"{op:8s} {seen[op]:4d} differences, {ours[op]:4d} where {what}")


if __name__ == '__main__':
    main()
