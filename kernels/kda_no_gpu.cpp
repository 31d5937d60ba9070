// The device entry points of a build without a GPU backend (MONOKDA_CUDA and MONOKDA_HIP off):
// probe() says so, everything that would touch a device throws NoGpu with the same words.
#include "kernels/kda_pre.hpp"

namespace monokda::gpu {

namespace {
const char* const kWhy =
    "this monokda was built without a GPU backend (configure with -DMONOKDA_CUDA=ON for NVIDIA sm_90a)";
}

bool kernel_has_stress_mode() { return false; }

DeviceInfo probe() {
    DeviceInfo d;
    d.why = kWhy;
    return d;
}

struct KdaLauncher::Impl {};
KdaLauncher::KdaLauncher(const Plan&, const LaunchOptions&) { throw NoGpu(kWhy); }
KdaLauncher::~KdaLauncher() = default;
void KdaLauncher::launch(const KdaTensors&, void*) { throw NoGpu(kWhy); }
void KdaLauncher::check(void*) { throw NoGpu(kWhy); }
uint32_t KdaLauncher::device_epoch() const { throw NoGpu(kWhy); }
const Plan& KdaLauncher::plan() const { throw NoGpu(kWhy); }

struct KdaRunner::Impl {};
KdaRunner::KdaRunner(const StepInputs&, const RunOptions&) { throw NoGpu(kWhy); }
KdaRunner::~KdaRunner() = default;
void KdaRunner::launch() { throw NoGpu(kWhy); }
void KdaRunner::check() { throw NoGpu(kWhy); }
void KdaRunner::restore_states() { throw NoGpu(kWhy); }
void KdaRunner::set_activations(const StepInputs&) { throw NoGpu(kWhy); }
void KdaRunner::capture_graph() { throw NoGpu(kWhy); }
void KdaRunner::replay_graph() { throw NoGpu(kWhy); }
StepOutputs<float> KdaRunner::outputs() const { throw NoGpu(kWhy); }
std::vector<uint8_t> KdaRunner::output_bytes() const { throw NoGpu(kWhy); }
void KdaRunner::plant_state_index(int, int, int32_t) { throw NoGpu(kWhy); }
void KdaRunner::plant_num_accepted(int, int32_t) { throw NoGpu(kWhy); }
float KdaRunner::last_ms() const { throw NoGpu(kWhy); }
KdaLauncher& KdaRunner::launcher() { throw NoGpu(kWhy); }
const KdaTensors& KdaRunner::tensors() const { throw NoGpu(kWhy); }

}  // namespace monokda::gpu
