// kda_pre on a GPU: the public, validated entry points. Plain C++ (no GPU headers), so the CLI and
// the tests include it in every build; without a GPU backend (MONOKDA_CUDA / MONOKDA_HIP off) the
// device entry points throw NoGpu and probe() says why.
//
// Three layers, as every op under kernels/ has them:
//   the __global__ kernel (kernels/kda_pre.cu) executes the uploaded CTA plan (core/plan.hpp);
//   KdaLauncher validates device tensors and launches it (cooperative, one CTA per SM/CU);
//   KdaRunner owns device copies of a fixture's tensors and is what `monokda gpu` and the tests use.
#pragma once
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/plan.hpp"
#include "core/plan_options.hpp"
#include "core/safetensors.hpp"
#include "core/step.hpp"

namespace monokda::gpu {

// Thrown when the build has no GPU backend or the machine no usable device.
struct NoGpu : std::runtime_error {
    explicit NoGpu(const std::string& w) : std::runtime_error(w) {}
};
// A failure on the device that is not bad input: a poll timed out, a launch was refused.
struct GpuError : std::runtime_error {
    explicit GpuError(const std::string& w) : std::runtime_error(w) {}
};

struct DeviceInfo {
    bool built = false;    // compiled with a GPU backend
    bool present = false;  // a device the kernel can run on was found
    std::string vendor;    // "nvidia" | "amd" | ""
    std::string name, why;  // why: the reason when !present
    int sms = 0;            // multiprocessors (CUs)
    int64_t smem_optin = 0;  // shared memory a block may opt into, bytes
    bool cooperative = false;
};
DeviceInfo probe();  // never throws

// A tensor in device memory as the launcher sees it. Strides in elements of dtype.
struct View {
    const void* data = nullptr;
    DType dtype = DType::BF16;
    std::vector<int64_t> shape, strides;
};

// Every tensor of one launch (SPEC §2). prefix/delta/prefix_out rows and blocks rows/bank rows may
// be strided; conv_state and ssm_state slots may be strided (vLLM packs both states of a slot in one
// page); everything else is contiguous. x, proj, qkv and g1 are the kernel's hand-off buffers and
// always needed (the chunk tasks of a head hand each other their shares of g1); o, and g1 where one
// task makes a whole head, are written only when the launch exports its hand-offs (teacher forcing).
struct KdaTensors {
    View prefix, delta, blocks, res_norm_w, res_proj_w, input_norm_w, in_proj_w, f_b_w, conv_w, A_log, dt_bias,
        o_norm_w, conv_state, ssm_state, state_indices, num_accepted;
    View prefix_out, core_out;
    View x, proj, qkv, g1, o;
};

// What the kernel supports: the production shape (SPEC §1 k3) and a step it can run. BadInput
// naming the first field that does not fit.
void check_supported(const Config& cfg);
// The plan a launch on this device runs: the k3 parameters, one CTA a multiprocessor (probe().sms),
// in_proj's bands, the attn CTAs a slice and the launch placement as the plan chooses them for the
// step unless `bands`, `attn_parts` (> 0; at most the step's rows) or `placement` say otherwise.
Plan device_plan(const Config& cfg, GemvBands bands = GemvBands::by_plan, int attn_parts = 0,
                 Placement placement = Placement::by_plan);
// Dtype, shape, strides, alignment (16 bytes where the kernel loads 16 bytes at a time) and
// overlap of every view, against cfg. Host-only: reads no device memory. BadInput names the tensor.
// Slot values and num_accepted live on the device: the kernel checks them before it writes
// anything and the launcher reports what it found (KdaLauncher::check).
void validate_tensors(const Config& cfg, const KdaTensors& t, bool export_handoffs);

// The GPU stress mode (docs/kernel.md, "The stress mode"; kernels/kda_stress.hpp): only a kernel
// built with MONOKDA_STRESS (the library monokda_kernels_stress, linked by the stress test alone)
// takes these; the default launcher refuses them. Delays are drawn anew every launch.
struct StressOptions {
    int release_delay_ns = 0;  // before every hand-off store (flag release, tagged pair): a spin of 0..this
    int hold_ns = 0;           // at entry, hold_percent % of the CTAs wait 0..hold_ns before their list
    int hold_percent = 0;
    uint32_t seed = 1;
    // a planted bug, to show what the mode catches: every mailbox flag polled relaxed, or the exact
    // in_proj body's cp.async ring waiting one stage short
    enum class Plant { none, relaxed_poll, ring_short };
    Plant plant = Plant::none;
    bool any() const { return release_delay_ns != 0 || hold_ns != 0 || plant != Plant::none; }
};
constexpr int kMaxStressDelayNs = 1000000;
// True for a kernel built with MONOKDA_STRESS.
bool kernel_has_stress_mode();

struct LaunchOptions {
    bool export_handoffs = false;  // also write o, and all of g1 (x, proj, qkv are always written)
    // in_proj in Plan::reduction_order()'s exact sum order (bit-identical to the reference's
    // stage; slow) instead of through the matrix unit (the default)
    bool exact_in_proj = false;
    int64_t poll_timeout_ms = 2000;  // a mailbox not ready after this sets the error word
    // false: launch a plan with structural problems as it is (to test that polls give up and
    // the error names the entry); the launcher refuses such a plan otherwise.
    bool check_plan = true;
    // NVIDIA gemv pass: the weight's copies marked evict-first in L2, so that the 90 MB read once a
    // launch leaves before what the next launch reads again (code, states, small tensors);
    // docs/decisions/0009-weight-evict-first.md (`monokda bench --weight-evict first|normal`).
    bool weight_evict_first = true;
    // NVIDIA gemv pass: the weight steps a band copies before x exists go this many ns apart
    // (0: together; up to kMaxWeightPaceNs), so that their burst does not hold up the attn role's
    // hand-offs through L2. -1: the launcher's choice, kWeightPaceNs where the plan's bands lie past
    // the attn CTAs (up to 15 rows) and 0 where they cover every CTA
    // (docs/decisions/0008-weight-pacing.md; `monokda bench --weight-pace`).
    int weight_pace_ns = -1;
    // A test's planted fault (NVIDIA): the named tensor map is encoded with boxes of half the
    // columns, so each of its copies lands half the bytes its barrier waits for and the gemv pass's
    // bounded wait must give up and name the copy (tests/gpu/test_launch.cpp). AMD has no copies
    // and refuses it.
    enum class CopyFault { none, x, weight };
    CopyFault plant_copy_fault = CopyFault::none;
    StressOptions stress;  // a MONOKDA_STRESS kernel only (above)
};
constexpr int kWeightPaceNs = 1000, kMaxWeightPaceNs = 20000;

// Uploads a plan once and launches kda_pre with it, as often as asked, on one stream.
class KdaLauncher {
public:
    KdaLauncher(const Plan& plan, const LaunchOptions& opt);
    ~KdaLauncher();
    KdaLauncher(const KdaLauncher&) = delete;
    KdaLauncher& operator=(const KdaLauncher&) = delete;

    // Validates (BadInput before anything runs), then launches asynchronously on stream (a
    // hipStream_t / cudaStream_t; null: the default stream). Captured into a graph, the launch
    // replays: the epoch it tags mailboxes with is advanced on the device.
    void launch(const KdaTensors& t, void* stream = nullptr);
    // Waits for the stream, then reads the error word: BadInput for bad slot values or
    // num_accepted found on the device, GpuError for a timed-out poll (naming CTA, instruction
    // and mailbox entry). Clears the word.
    void check(void* stream = nullptr);
    uint32_t device_epoch() const;  // the last launch's tag: the device's arrivals over the grid (syncs)
    const Plan& plan() const;

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

struct RunOptions {
    bool export_handoffs = true;
    bool exact_in_proj = false;  // LaunchOptions::exact_in_proj
    bool packed_state_pages = false;  // conv and ssm state of a slot in one page (strided slots)
    int64_t poll_timeout_ms = 2000;
    Placement placement = Placement::by_plan;  // device_plan
    StressOptions stress;                       // LaunchOptions::stress
};

// Device copies of one fixture's tensors, a launcher, and the outputs.
class KdaRunner {
public:
    explicit KdaRunner(const StepInputs& in, const RunOptions& opt = {});
    ~KdaRunner();
    KdaRunner(const KdaRunner&) = delete;
    KdaRunner& operator=(const KdaRunner&) = delete;

    void launch();                 // one step, asynchronous
    void check();                  // KdaLauncher::check
    void run() { launch(); check(); }
    // Puts blocks, conv_state and ssm_state back to the fixture's values (device to device).
    void restore_states();
    // Uploads another step's activations (prefix, delta, blocks; blocks also as the value
    // restore_states puts back) into the same buffers, so a captured graph replays on them; the
    // weights, states and slots stay the runner's. BadInput unless `in` has the runner's config.
    void set_activations(const StepInputs& in);
    // Records one launch into a graph (replacing any earlier one) and replays it.
    void capture_graph();
    void replay_graph();
    // Every output and intermediate, read back (x, proj, g1, qkv, o only if exported).
    StepOutputs<float> outputs() const;
    // The raw bytes of every buffer the kernel may write, in a fixed order: to show a refused
    // launch left them untouched.
    std::vector<uint8_t> output_bytes() const;
    // Overwrites one device state index / num_accepted, bypassing the host's checks (planting
    // bad input for tests).
    void plant_state_index(int r, int t, int32_t value);
    void plant_num_accepted(int r, int32_t value);
    // Milliseconds of the last launch..check, measured with device events.
    float last_ms() const;
    KdaLauncher& launcher();
    const KdaTensors& tensors() const;

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace monokda::gpu
