/* Nx callbacks: index family. */
#include "nx/callback.h"

const emily_callback_entry emily_callbacks_index[] = {
    {NULL, NULL},
};
