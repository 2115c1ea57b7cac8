/* The main job: a short tour of libemily on its default device, the CPU. */
#include <stdio.h>
#include "emily/emily.h"

int main(void) {
    printf("libemily %s, devices: cpu=%d cuda=%d\n", emily_version(),
           emily_device_count(EMILY_DEVICE_CPU), emily_device_count(EMILY_DEVICE_CUDA));
    int64_t shape[2] = {2, 3};
    float data[6] = {1, 2, 3, 4, 5, 6};
    emily_tensor *t;
    if (emily_from_binary(EMILY_CPU, EMILY_F32, 2, shape, data, sizeof data, &t)) {
        fprintf(stderr, "error: %s\n", emily_last_error());
        return 1;
    }
    printf("created an f32 tensor of shape {2, 3}\n");
    emily_tensor_release(t);
    return 0;
}
