/* Nx callbacks: binary family. */
#include "nx/callback.h"

const emily_callback_entry emily_callbacks_binary[] = {
    {NULL, NULL},
};
