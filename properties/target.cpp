// Targets found by name (properties/target.hpp): the registry, and the reference as a target.
#include "properties/target.hpp"

#include <atomic>

#include "core/error.hpp"
#include "reference/reference.hpp"

#include "properties/target_emulator.hpp"
#include "properties/target_exec.hpp"
#include "properties/target_gpu.hpp"

namespace monokda::props {

namespace {
std::atomic<bool> g_cancel{false};
static_assert(std::atomic<bool>::is_always_lock_free, "request_cancel is called from signal handlers");
}  // namespace

void request_cancel() noexcept { g_cancel.store(true); }
bool cancel_requested() noexcept { return g_cancel.load(std::memory_order_relaxed); }

Target reference_target(const std::string& order) {
    ReductionOrder ord = ReductionOrder::parse(order);
    Target t;
    t.name = order == "sequential" ? "reference" : "reference[" + ord.str() + "]";
    t.run = [ord](const StepInputs& in) { return ref::run<float>(in, ord); };
    t.declared_order = [ord](const StepInputs&) { return ord.str(); };
    t.is_reference = order == "sequential";
    return t;
}

const std::vector<TargetEntry>& target_registry() {
    auto available = [] { return std::string(); };
    static const std::vector<TargetEntry> table = {
        {"reference", "the f32 original path (SPEC §3), sequential reduction order", [] { return reference_target(); },
         available},
        {"emulator", "the kernel's CTA plan executed on the CPU over modelled mailboxes", emulator_target, available},
        {"gpu", "the kda_pre kernel on the GPU (production shape only)", gpu_target, gpu_unavailable},
        {"exec", "a program that reads a fixture and writes an output file: --cmd 'prog {fixture} {out}'",
         [] { return exec_target({}); }, available},
    };
    return table;
}

Target make_target(const std::string& name) {
    std::string known;
    for (const auto& e : target_registry()) {
        if (e.name == name) {
            const std::string why = e.unavailable();
            if (!why.empty()) bad_input("target '" + name + "' is not available: " + why);
            return e.make();
        }
        known += (known.empty() ? "" : ", ") + e.name;
    }
    bad_input("unknown target '" + name + "' (known: " + known + ")");
}

}  // namespace monokda::props
