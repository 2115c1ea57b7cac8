/* Nx callbacks: cumulative family. */
#include "nx/callback.h"

const emily_callback_entry emily_callbacks_cumulative[] = {
    {NULL, NULL},
};
