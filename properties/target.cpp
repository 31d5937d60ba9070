#include "properties/target.hpp"

#include "core/error.hpp"
#include "reference/reference.hpp"

#ifdef MONOKDA_PROPERTIES_EMULATOR
#include "properties/target_emulator.hpp"
#endif

namespace monokda::props {

Target reference_target(const std::string& order) {
    ReductionOrder ord = ReductionOrder::parse(order);
    Target t;
    t.name = order == "sequential" ? "reference" : "reference[" + ord.str() + "]";
    t.run = [ord](const StepInputs& in) { return ref::run<float>(in, ord); };
    t.is_reference = order == "sequential";
    return t;
}

const std::vector<TargetEntry>& target_registry() {
    static const std::vector<TargetEntry> table = {
        {"reference", "the f32 original path (SPEC §3), sequential reduction order",
         [] { return reference_target(); }, ""},
#ifdef MONOKDA_PROPERTIES_EMULATOR
        {"emulator", "the kernel's CTA plan executed on CPU threads over modelled mailboxes",
         [] { return emulator_target(); }, ""},
#else
        {"emulator", "the kernel's CTA plan executed on CPU threads", {},
         "this build has no emulator library (emulator/ was not built)"},
#endif
        // The GPU seam: a build with a GPU backend adds its entry here the same way the emulator does.
        {"gpu", "the kda_pre kernel on the GPU", {},
         "this build has no GPU backend (configure with -DMONOKDA_CUDA=ON on a machine with a GPU and nvcc)"},
    };
    return table;
}

Target make_target(const std::string& name) {
    std::string known;
    for (const auto& e : target_registry()) {
        if (e.name == name) {
            if (!e.make) bad_input("target '" + name + "' is not available: " + e.missing);
            return e.make();
        }
        known += (known.empty() ? "" : ", ") + e.name;
    }
    bad_input("unknown target '" + name + "' (known: " + known + ")");
}

}  // namespace monokda::props
