/* Nx callbacks: fft family. */
#include "nx/callback.h"

const emily_callback_entry emily_callbacks_fft[] = {
    {NULL, NULL},
};
