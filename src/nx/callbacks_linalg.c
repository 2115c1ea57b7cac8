/* Nx callbacks: linalg family. */
#include "nx/callback.h"

const emily_callback_entry emily_callbacks_linalg[] = {
    {NULL, NULL},
};
