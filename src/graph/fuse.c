/* Engine graphs: fusion of elementwise chains. (Planned; no group is
 * formed yet, so every call runs on its own.) */
#include "graph/graph_impl.h"

struct fused_group {
    int32_t *inputs;
    int ninputs;
};

emily_status graph_fuse(emily_graph *g) {
    (void)g;
    return EMILY_OK;
}

emily_status fused_group_run(emily_graph *g, const fused_group *fg, emily_tensor **vals) {
    (void)g;
    (void)fg;
    (void)vals;
    return emily_error(EMILY_ERR_INTERNAL, "graph: no fused groups exist");
}

void fused_group_free(fused_group *fg) { (void)fg; }

int fused_group_inputs(const fused_group *fg, const int32_t **values) {
    if (!fg) return 0;
    *values = fg->inputs;
    return fg->ninputs;
}
