/* Nx callbacks: reduce family. */
#include "nx/callback.h"

const emily_callback_entry emily_callbacks_reduce[] = {
    {NULL, NULL},
};
