/* Nx callbacks: shape family. */
#include "nx/callback.h"

const emily_callback_entry emily_callbacks_shape[] = {
    {NULL, NULL},
};
