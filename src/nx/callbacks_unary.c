/* Nx callbacks: unary family. */
#include "nx/callback.h"

const emily_callback_entry emily_callbacks_unary[] = {
    {NULL, NULL},
};
