/* Nx callbacks: creation family. */
#include "nx/callback.h"

const emily_callback_entry emily_callbacks_creation[] = {
    {NULL, NULL},
};
