// KdaRunner: device copies of one fixture's tensors around a KdaLauncher. What `monokda gpu` and
// the GPU tests use. Every buffer the kernel writes starts poisoned (all bits set: bf16/f32 NaN),
// so an element the kernel forgot shows up in any comparison.
#include "kernels/vendor/gpu.hpp"  // first: the vendor's names before any shared header

#include <cstring>
#include <string>

#include "core/error.hpp"
#include "kernels/kda_args.hpp"
#include "kernels/kda_pre.hpp"

namespace monokda::gpu {

namespace {

void check_hip(hipError_t e, const char* what) {
    if (e != hipSuccess) throw GpuError(std::string("kda_pre runner: ") + what + ": " + hipGetErrorString(e));
}

size_t align16(size_t b) { return (b + 15) / 16 * 16; }

std::vector<int64_t> row_major(const std::vector<int64_t>& shape) {
    std::vector<int64_t> st(shape.size(), 1);
    for (size_t i = shape.size(); i-- > 1;) st[i - 1] = st[i] * shape[i];
    return st;
}

}  // namespace

struct KdaRunner::Impl {
    StepInputs in;
    RunOptions opt;
    std::unique_ptr<KdaLauncher> launcher;
    hipStream_t stream = nullptr;
    hipEvent_t ev0 = nullptr, ev1 = nullptr;
    hipGraph_t graph = nullptr;
    hipGraphExec_t exec = nullptr;
    std::vector<void*> allocs;
    KdaTensors t;
    // state: one buffer (pages or two plain tensors) and its pristine copy
    void* states = nullptr;
    void* states0 = nullptr;
    size_t states_bytes = 0;
    void* blocks0 = nullptr;
    size_t conv_slot_bytes = 0, ssm_slot_bytes = 0, page_bytes = 0, ssm_offset = 0;
    float last_ms = 0;
    bool timing = false;

    ~Impl() {
        if (exec) (void)hipGraphExecDestroy(exec);
        if (graph) (void)hipGraphDestroy(graph);
        if (ev0) (void)hipEventDestroy(ev0);
        if (ev1) (void)hipEventDestroy(ev1);
        if (stream) (void)hipStreamDestroy(stream);
        for (void* p : allocs) (void)hipFree(p);
    }

    void* alloc(size_t bytes) {
        void* p = nullptr;
        check_hip(hipMalloc(&p, std::max<size_t>(bytes, 16)), "allocating device memory");
        allocs.push_back(p);
        return p;
    }
    template <class T> void* upload(const std::vector<T>& v) {
        void* p = alloc(v.size() * sizeof(T));
        check_hip(hipMemcpy(p, v.data(), v.size() * sizeof(T), hipMemcpyHostToDevice), "uploading a tensor");
        return p;
    }
    void* poisoned(size_t bytes) {
        void* p = alloc(bytes);
        check_hip(hipMemset(p, 0xff, std::max<size_t>(bytes, 16)), "poisoning an output");
        return p;
    }
    static View view(const void* p, DType dt, std::vector<int64_t> shape) {
        View v;
        v.data = p;
        v.dtype = dt;
        v.strides = row_major(shape);
        v.shape = std::move(shape);
        return v;
    }
    template <class T> void download(std::vector<T>& out, const void* p, size_t n) const {
        out.resize(n);
        check_hip(hipMemcpy(out.data(), p, n * sizeof(T), hipMemcpyDeviceToHost), "downloading a tensor");
    }
};

KdaRunner::KdaRunner(const StepInputs& in, const RunOptions& opt) : impl_(new Impl) {
    Impl& m = *impl_;
    m.in = in;
    m.opt = opt;
    const Config& c = in.cfg;
    check_supported(c);
    in.validate_step();  // slot range, distinct slots, num_accepted: the host copy is here, check it first
    const DeviceInfo dev = probe();
    if (!dev.present) throw NoGpu("kda_pre: " + dev.why);
    LaunchOptions lo;
    lo.export_handoffs = opt.export_handoffs;
    lo.poll_timeout_ms = opt.poll_timeout_ms;
    lo.exact_in_proj = opt.exact_in_proj;
    lo.stress = opt.stress;
    m.launcher.reset(new KdaLauncher(device_plan(c, GemvBands::by_plan, 0, opt.placement), lo));
    check_hip(hipStreamCreateWithFlags(&m.stream, hipStreamNonBlocking), "creating a stream");
    check_hip(hipEventCreate(&m.ev0), "creating an event");
    check_hip(hipEventCreate(&m.ev1), "creating an event");

    const int64_t S = c.S(), D = c.D, E = c.E(), len = c.conv_len();
    KdaTensors& t = m.t;
    t.prefix = Impl::view(m.upload(in.prefix), DType::BF16, {S, D});
    t.delta = Impl::view(m.upload(in.delta), DType::BF16, {S, D});
    t.blocks = Impl::view(m.upload(in.blocks), DType::BF16, {S, 8, D});
    m.blocks0 = m.upload(in.blocks);
    t.res_norm_w = Impl::view(m.upload(in.res_norm_w), DType::BF16, {D});
    t.res_proj_w = Impl::view(m.upload(in.res_proj_w), DType::BF16, {D});
    t.input_norm_w = Impl::view(m.upload(in.input_norm_w), DType::BF16, {D});
    t.in_proj_w = Impl::view(m.upload(in.in_proj_w), DType::BF16, {c.N, D});
    t.f_b_w = Impl::view(m.upload(in.f_b_w), DType::BF16, {E, c.F});
    t.conv_w = Impl::view(m.upload(in.conv_w), DType::F32, {c.C, c.W});
    t.A_log = Impl::view(m.upload(in.A_log), DType::F32, {c.H});
    t.dt_bias = Impl::view(m.upload(in.dt_bias), DType::F32, {E});
    t.o_norm_w = Impl::view(m.upload(in.o_norm_w), DType::BF16, {c.V});
    t.state_indices = Impl::view(m.upload(in.state_indices), DType::I32, {c.R, c.L});
    t.num_accepted = Impl::view(m.upload(in.num_accepted), DType::I32, {c.R});

    // states: two plain tensors, or one page a slot holding the conv state then the ssm state
    const std::vector<int64_t> conv_shape = c.conv_state_shape();
    const std::vector<int64_t> ssm_shape{c.slots, c.H, c.V, c.K};
    m.conv_slot_bytes = size_t(len * c.C) * 2;
    m.ssm_slot_bytes = size_t(c.H) * c.V * c.K * 4;
    if (opt.packed_state_pages) {
        m.ssm_offset = align16(m.conv_slot_bytes) + 64;  // a gap, so a layout bug cannot hide
        m.page_bytes = align16(m.ssm_offset + m.ssm_slot_bytes + 48);
    } else {
        m.ssm_offset = 0;
        m.page_bytes = 0;
    }
    const size_t conv_bytes = size_t(c.slots) * m.conv_slot_bytes, ssm_bytes = size_t(c.slots) * m.ssm_slot_bytes;
    m.states_bytes = opt.packed_state_pages ? size_t(c.slots) * m.page_bytes : align16(conv_bytes) + ssm_bytes;
    m.states = m.alloc(m.states_bytes);
    m.states0 = m.alloc(m.states_bytes);
    check_hip(hipMemset(m.states, 0xff, m.states_bytes), "poisoning the state pages");
    char* base = static_cast<char*>(m.states);
    if (opt.packed_state_pages) {
        check_hip(hipMemcpy2D(base, m.page_bytes, in.conv_state.data(), m.conv_slot_bytes, m.conv_slot_bytes,
                              size_t(c.slots), hipMemcpyHostToDevice),
                  "uploading conv_state pages");
        check_hip(hipMemcpy2D(base + m.ssm_offset, m.page_bytes, in.ssm_state.data(), m.ssm_slot_bytes,
                              m.ssm_slot_bytes, size_t(c.slots), hipMemcpyHostToDevice),
                  "uploading ssm_state pages");
        t.conv_state = Impl::view(base, DType::BF16, conv_shape);
        t.conv_state.strides[0] = int64_t(m.page_bytes / 2);
        t.ssm_state = Impl::view(base + m.ssm_offset, DType::F32, ssm_shape);
        t.ssm_state.strides[0] = int64_t(m.page_bytes / 4);
    } else {
        check_hip(hipMemcpy(base, in.conv_state.data(), conv_bytes, hipMemcpyHostToDevice), "uploading conv_state");
        m.ssm_offset = align16(conv_bytes);
        check_hip(hipMemcpy(base + m.ssm_offset, in.ssm_state.data(), ssm_bytes, hipMemcpyHostToDevice),
                  "uploading ssm_state");
        t.conv_state = Impl::view(base, DType::BF16, conv_shape);
        t.ssm_state = Impl::view(base + m.ssm_offset, DType::F32, ssm_shape);
    }
    check_hip(hipMemcpy(m.states0, m.states, m.states_bytes, hipMemcpyDeviceToDevice), "keeping the initial states");

    t.prefix_out = Impl::view(m.poisoned(size_t(S * D) * 2), DType::BF16, {S, D});
    t.core_out = Impl::view(m.poisoned(size_t(S * E) * 2), DType::BF16, {S, E});
    t.x = Impl::view(m.poisoned(size_t(S * D) * 2), DType::BF16, {S, D});
    t.proj = Impl::view(m.poisoned(size_t(S * c.N) * 2), DType::BF16, {S, c.N});
    t.qkv = Impl::view(m.poisoned(size_t(S * c.C) * 2), DType::BF16, {S, c.C});
    t.g1 = Impl::view(m.poisoned(size_t(S * E) * 2), DType::BF16, {S, E});
    t.o = Impl::view(m.poisoned(size_t(S * E) * 2), DType::BF16, {S, E});
    validate_tensors(c, t, opt.export_handoffs);
}

KdaRunner::~KdaRunner() = default;

void KdaRunner::launch() {
    Impl& m = *impl_;
    check_hip(hipEventRecord(m.ev0, m.stream), "recording an event");
    m.launcher->launch(m.t, m.stream);
    check_hip(hipEventRecord(m.ev1, m.stream), "recording an event");
    m.timing = true;
}

void KdaRunner::check() {
    Impl& m = *impl_;
    m.launcher->check(m.stream);
    if (m.timing) {
        check_hip(hipEventElapsedTime(&m.last_ms, m.ev0, m.ev1), "timing");
        m.timing = false;
    }
}

void KdaRunner::restore_states() {
    Impl& m = *impl_;
    const Config& c = m.in.cfg;
    check_hip(hipMemcpyAsync(m.states, m.states0, m.states_bytes, hipMemcpyDeviceToDevice, m.stream), "restoring states");
    check_hip(hipMemcpyAsync(const_cast<void*>(m.t.blocks.data), m.blocks0, size_t(c.S()) * 8 * c.D * 2,
                             hipMemcpyDeviceToDevice, m.stream),
              "restoring blocks");
}

void KdaRunner::set_activations(const StepInputs& in) {
    Impl& m = *impl_;
    const Config& c = m.in.cfg;
    if (in.cfg.R != c.R || in.cfg.L != c.L || in.cfg.nb != c.nb || in.cfg.D != c.D)
        bad_input("set_activations: the step is R " + std::to_string(in.cfg.R) + " L " + std::to_string(in.cfg.L) +
                  " nb " + std::to_string(in.cfg.nb) + ", the runner's R " + std::to_string(c.R) + " L " +
                  std::to_string(c.L) + " nb " + std::to_string(c.nb));
    const size_t S = size_t(c.S()), D = size_t(c.D);
    if (in.prefix.size() != S * D || in.delta.size() != S * D || in.blocks.size() != S * 8 * D)
        bad_input("set_activations: prefix, delta or blocks is not the step's size");
    // on the runner's stream, so a graph replayed there after this sees them
    check_hip(hipMemcpyAsync(const_cast<void*>(m.t.prefix.data), in.prefix.data(), S * D * 2, hipMemcpyHostToDevice, m.stream),
              "uploading prefix");
    check_hip(hipMemcpyAsync(const_cast<void*>(m.t.delta.data), in.delta.data(), S * D * 2, hipMemcpyHostToDevice, m.stream),
              "uploading delta");
    check_hip(hipMemcpyAsync(m.blocks0, in.blocks.data(), S * 8 * D * 2, hipMemcpyHostToDevice, m.stream), "uploading blocks");
    check_hip(hipMemcpyAsync(const_cast<void*>(m.t.blocks.data), m.blocks0, S * 8 * D * 2, hipMemcpyDeviceToDevice, m.stream),
              "uploading blocks");
    check_hip(hipStreamSynchronize(m.stream), "uploading activations");  // the host vectors may go now
}

void KdaRunner::capture_graph() {
    Impl& m = *impl_;
    if (m.exec) check_hip(hipGraphExecDestroy(m.exec), "destroying a graph"), m.exec = nullptr;
    if (m.graph) check_hip(hipGraphDestroy(m.graph), "destroying a graph"), m.graph = nullptr;
    check_hip(hipStreamBeginCapture(m.stream, hipStreamCaptureModeThreadLocal), "beginning graph capture");
    try {
        m.launcher->launch(m.t, m.stream);
    } catch (...) {
        hipGraph_t g = nullptr;
        (void)hipStreamEndCapture(m.stream, &g);
        if (g) (void)hipGraphDestroy(g);
        throw;
    }
    check_hip(hipStreamEndCapture(m.stream, &m.graph), "ending graph capture");
    check_hip(hipGraphInstantiateWithFlags(&m.exec, m.graph, 0), "instantiating the graph");
}

void KdaRunner::replay_graph() {
    Impl& m = *impl_;
    if (!m.exec) throw GpuError("kda_pre runner: no graph captured");
    check_hip(hipEventRecord(m.ev0, m.stream), "recording an event");
    check_hip(hipGraphLaunch(m.exec, m.stream), "replaying the graph");
    check_hip(hipEventRecord(m.ev1, m.stream), "recording an event");
    m.timing = true;
}

StepOutputs<float> KdaRunner::outputs() const {
    const Impl& m = *impl_;
    const Config& c = m.in.cfg;
    check_hip(hipStreamSynchronize(m.stream), "synchronising");
    const size_t S = size_t(c.S()), D = size_t(c.D), E = size_t(c.E()), slots = size_t(c.slots);
    StepOutputs<float> o;
    m.download(o.prefix_out, m.t.prefix_out.data, S * D);
    m.download(o.blocks, m.t.blocks.data, S * 8 * D);
    m.download(o.core_out, m.t.core_out.data, S * E);
    m.download(o.x, m.t.x.data, S * D);
    m.download(o.proj, m.t.proj.data, S * size_t(c.N));
    m.download(o.qkv, m.t.qkv.data, S * size_t(c.C));
    m.download(o.g1, m.t.g1.data, S * E);
    m.download(o.o, m.t.o.data, S * E);
    o.conv_state.resize(slots * m.conv_slot_bytes / 2);
    o.ssm_state.resize(slots * m.ssm_slot_bytes / 4);
    const size_t pitch = m.page_bytes ? m.page_bytes : 0;
    if (pitch) {
        check_hip(hipMemcpy2D(o.conv_state.data(), m.conv_slot_bytes, m.t.conv_state.data, pitch, m.conv_slot_bytes,
                              slots, hipMemcpyDeviceToHost),
                  "downloading conv_state pages");
        check_hip(hipMemcpy2D(o.ssm_state.data(), m.ssm_slot_bytes, m.t.ssm_state.data, pitch, m.ssm_slot_bytes, slots,
                              hipMemcpyDeviceToHost),
                  "downloading ssm_state pages");
    } else {
        m.download(o.conv_state, m.t.conv_state.data, o.conv_state.size());
        m.download(o.ssm_state, m.t.ssm_state.data, o.ssm_state.size());
    }
    return o;
}

std::vector<uint8_t> KdaRunner::output_bytes() const {
    const Impl& m = *impl_;
    check_hip(hipStreamSynchronize(m.stream), "synchronising");
    const Config& c = m.in.cfg;
    const size_t S = size_t(c.S()), D = size_t(c.D), E = size_t(c.E());
    const std::pair<const void*, size_t> parts[] = {
        {m.t.prefix_out.data, S * D * 2}, {m.t.blocks.data, S * 8 * D * 2}, {m.t.core_out.data, S * E * 2},
        {m.states, m.states_bytes},       {m.t.x.data, S * D * 2},          {m.t.proj.data, S * size_t(c.N) * 2},
        {m.t.qkv.data, S * size_t(c.C) * 2}, {m.t.g1.data, S * E * 2},      {m.t.o.data, S * E * 2}};
    std::vector<uint8_t> out;
    for (const auto& [p, n] : parts) {
        const size_t at = out.size();
        out.resize(at + n);
        check_hip(hipMemcpy(out.data() + at, p, n, hipMemcpyDeviceToHost), "downloading outputs");
    }
    return out;
}

void KdaRunner::plant_state_index(int r, int t, int32_t value) {
    const Impl& m = *impl_;
    const Config& c = m.in.cfg;
    if (r < 0 || r >= c.R || t < 0 || t >= c.L) bad_input("plant_state_index: no entry [" + std::to_string(r) + "][" + std::to_string(t) + "]");
    int32_t* p = static_cast<int32_t*>(const_cast<void*>(m.t.state_indices.data)) + r * c.L + t;
    check_hip(hipMemcpy(p, &value, 4, hipMemcpyHostToDevice), "planting a state index");
}

void KdaRunner::plant_num_accepted(int r, int32_t value) {
    const Impl& m = *impl_;
    if (r < 0 || r >= m.in.cfg.R) bad_input("plant_num_accepted: no request " + std::to_string(r));
    int32_t* p = static_cast<int32_t*>(const_cast<void*>(m.t.num_accepted.data)) + r;
    check_hip(hipMemcpy(p, &value, 4, hipMemcpyHostToDevice), "planting num_accepted");
}

float KdaRunner::last_ms() const { return impl_->last_ms; }
KdaLauncher& KdaRunner::launcher() { return *impl_->launcher; }
const KdaTensors& KdaRunner::tensors() const { return impl_->t; }

}  // namespace monokda::gpu
