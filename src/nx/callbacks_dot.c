/* Nx callbacks: dot family. */
#include "nx/callback.h"

const emily_callback_entry emily_callbacks_dot[] = {
    {NULL, NULL},
};
