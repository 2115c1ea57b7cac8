/* Nx callbacks: dot family.
 *
 * dot(out, left, contract_axes1, batch_axes1, right, contract_axes2,
 *     batch_axes2): the output type is Nx.Type.merge of the inputs, which
 * Nx decides from the inputs alone; the template's type is passed in RUN
 * mode (call_out_type) and inferred in INFER mode. */
#include "nx/callback.h"

static emily_status cb_dot(emily_call *c) {
    emily_status s = call_arity(c, 6, 6);
    if (s) return s;
    emily_tensor *a, *b;
    int *ca, *ba, *cb, *bb, nca, nba, ncb, nbb;
    if ((s = call_tensor(c, 0, &a))) return s;
    if ((s = value_axes(c, call_arg(c, 1), "contract_axes1", &ca, &nca))) return s;
    if ((s = value_axes(c, call_arg(c, 2), "batch_axes1", &ba, &nba))) return s;
    if ((s = call_tensor(c, 3, &b))) return s;
    if ((s = value_axes(c, call_arg(c, 4), "contract_axes2", &cb, &ncb))) return s;
    if ((s = value_axes(c, call_arg(c, 5), "batch_axes2", &bb, &nbb))) return s;
    /* nil axes lists mean "none" */
    if (nca < 0) nca = 0;
    if (nba < 0) nba = 0;
    if (ncb < 0) ncb = 0;
    if (nbb < 0) nbb = 0;
    emily_tensor *out;
    s = emily_dot(a, nca, ca, nba, ba, b, ncb, cb, nbb, bb, call_out_type(c), &out);
    if (s) return s;
    return call_return(c, out);
}

const emily_callback_entry emily_callbacks_dot[] = {
    {"dot", cb_dot},
    {NULL, NULL},
};
