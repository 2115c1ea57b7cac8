/* Nx callbacks: window family. */
#include "nx/callback.h"

const emily_callback_entry emily_callbacks_window[] = {
    {NULL, NULL},
};
