/* The signs Nx's Householder QR gives R's diagonal, from a LAPACK-style
 * geqrf's R and tau: written once for the CPU's LAPACK path
 * (src/cpu/linalg/lapack.c) and the GPU's cuSOLVER one
 * (src/cuda/linalg_qr.cu). Valid C11 and CUDA C++ (core/host_device.h).
 *
 * Nx reflects column i unless the part below the diagonal is (nearly)
 * zero or i is the last row (m - 1: nothing below it), and its reflector
 * leaves a positive diagonal entry; an unreflected entry keeps its sign.
 * LAPACK reflects where that part is nonzero (tau[i] != 0) and leaves a
 * negative entry for a positive one. So: reflected entries are made
 * positive, other entries keep LAPACK's sign, except row m - 1 of a
 * square or wide matrix, whose sign follows from det(Q): Nx's Q is a
 * product of its reflectors, det = (-1)^(Nx's reflections), and on the
 * first k columns it is LAPACK's Q (det (-1)^(LAPACK's reflections))
 * times the sign flips, so the flips multiply to (-1)^(both counts). */
#ifndef EMILY_CORE_QR_SIGNS_H
#define EMILY_CORE_QR_SIGNS_H

#include <stdbool.h>
#include <stdint.h>
#include "core/host_device.h"

typedef struct emi_qr_signs {
    int64_t lapack_refl, nx_refl;
    int flips;
} emi_qr_signs;

EMILY_HD emi_qr_signs emi_qr_signs_start(void) {
    emi_qr_signs s = {0, 0, 1};
    return s;
}

/* The flip (+1 or -1) of row i of R (and column i of Q), in order
 * i = 0, 1, ...: `reflected` is tau[i] != 0, `negative` whether LAPACK's
 * R[i][i] < 0; R is m x n. */
EMILY_HD int emi_qr_sign_step(emi_qr_signs *s, int64_t i, int64_t m, int64_t n, bool reflected, bool negative) {
    s->lapack_refl += reflected;
    bool nx_reflects = reflected && i < m - 1;
    s->nx_refl += nx_reflects;
    int flip = 1;
    if (nx_reflects) flip = negative ? -1 : 1;
    else if (i == m - 1 && m <= n) flip = ((s->lapack_refl + s->nx_refl) % 2 ? -1 : 1) * s->flips;
    s->flips *= flip;
    return flip;
}

#endif
