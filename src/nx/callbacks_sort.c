/* Nx callbacks: sort family. */
#include "nx/callback.h"

const emily_callback_entry emily_callbacks_sort[] = {
    {NULL, NULL},
};
