// Where KdaArgs' memories sit in kda_pre's first parameter, as nvcc lays the struct out: one
// monokda_layout_<field> global a field, read from this file's PTX by the ordering check
// (kernels/ordering/ordering.hpp, Layout). Never linked into anything; compiled with --ptx only.
#include <cstddef>

#include "core/plan.hpp"
#include "kernels/kda_args.hpp"

using monokda::gpu::KdaArgs;

#define MONOKDA_LAYOUT(field) extern "C" __device__ unsigned long long monokda_layout_##field = offsetof(KdaArgs, field);
// the memories a hand-off goes through
MONOKDA_LAYOUT(flags)
MONOKDA_LAYOUT(tagged)
MONOKDA_LAYOUT(error)
MONOKDA_LAYOUT(arrivals)
MONOKDA_LAYOUT(trace)
// the tensors a flag guards: the plan's HandOff list, which the check asks for by name
MONOKDA_LAYOUT(x)
MONOKDA_LAYOUT(proj)
MONOKDA_LAYOUT(qkv)
MONOKDA_LAYOUT(g1)
static_assert(int(monokda::HandOff::count) == 4, "a hand-off the plan added needs its MONOKDA_LAYOUT line here");
