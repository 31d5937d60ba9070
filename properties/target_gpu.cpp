// The kda_pre kernel as a target (properties/target_gpu.hpp): one serialised launch a step.
#include "properties/target_gpu.hpp"

#include <mutex>

#include "kernels/kda_pre.hpp"

namespace monokda::props {

std::string gpu_unavailable() {
    static const std::string why = [] {
        const gpu::DeviceInfo d = gpu::probe();
        return d.present ? std::string() : d.why;
    }();
    return why;
}

Target gpu_target() {
    Target t;
    t.name = "gpu";
    t.tensor_core_in_proj = !gpu::RunOptions{}.exact_in_proj;  // the kernel's in_proj on the matrix unit
    // The kernel's sums follow its plan, whose splits depend on the model dims only, so a row's
    // arithmetic does not depend on S, R or L: the shape-changing properties stay bit-exact.
    t.run = [](const StepInputs& in) {
        gpu::check_supported(in.cfg);  // BadInput before anything touches the device
        static std::mutex device;
        std::lock_guard<std::mutex> lock(device);
        try {
            gpu::RunOptions ro;
            ro.export_handoffs = true;
            gpu::KdaRunner runner(in, ro);
            runner.run();
            return runner.outputs();
        } catch (const gpu::GpuError& e) {
            throw TargetFailure(std::string("gpu: ") + e.what());
        } catch (const gpu::NoGpu& e) {
            throw TargetFailure(std::string("gpu: ") + e.what());
        }
    };
    return t;
}

}  // namespace monokda::props
