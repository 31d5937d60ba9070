// kda_pre: one launch a layer (SPEC §4). The kernel is an interpreter over the uploaded CTA plan
// (core/plan.hpp): CTA n runs its instruction list in order, each opcode a role body
// (kda_attn.hpp, kda_gemv.hpp, kda_task.hpp). Then the launcher: validation, the cooperative
// launch, and the error word turned into an error naming what went wrong.
// The same file builds with nvcc (sm_90a) and hipcc (gfx90a, gfx940).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/vendor/gpu.hpp"  // first: the vendor's names before any shared header

#include "core/error.hpp"
#include "kernels/kda_attn.hpp"
#include "kernels/kda_gemv.hpp"
#include "kernels/kda_gemv_batch.hpp"
#include "kernels/kda_pre.hpp"
#include "kernels/kda_task.hpp"
#if MONOKDA_NVIDIA
#include "kernels/vendor/tensor_map.hpp"
#endif

namespace monokda::gpu {

namespace {

#if MONOKDA_NVIDIA
constexpr size_t kGemvSmemBytes = std::max(sizeof(GemvSmem), kGemvBatchSmemBytes);
#else
constexpr size_t kGemvSmemBytes = sizeof(GemvSmem);
#endif
// A CTA's kda tasks run in kKdaTeams streams side by side, each in its own threads and shared
// memory (tasks team, team + kKdaTeams, ... of the CTA's list): a task is a chain of dependent round
// trips and cross-CTA waits, so two in flight on a CTA overlap one's waits with the other's work.
// AMD (one workgroup barrier, no named ones) runs one stream.
#if MONOKDA_NVIDIA
constexpr int kKdaTeams = 2;
#else
constexpr int kKdaTeams = 1;
#endif
static_assert(kKdaTeams <= 2, "team barriers are ids 1 and 2 (vendor/gpu.hpp)");
static_assert(kThreads / kKdaTeams >= kMinTeam, "the kda bodies' per-thread shares assume kMinTeam threads a team");
template <int kChunkRows>
constexpr size_t kKdaSmemStride = (sizeof(KdaSmem<kChunkRows>) + 127) / 128 * 128;
// A CTA with one kda stream stages its tasks' state rows in shared memory behind its KdaSmem (NVIDIA:
// it fits beside the gemv pass's footprint; AMD's 64 KB does not hold a head's).
#if MONOKDA_NVIDIA
constexpr bool kStageState = true;
#else
constexpr bool kStageState = false;
#endif
template <int kChunkRows>
constexpr size_t kKdaOneTeamBytes = kKdaSmemStride<kChunkRows> + (kStageState ? kStateStageBytes<kChunkRows> : 0);
template <int kChunkRows>
constexpr size_t kKdaBytes = std::max(kKdaTeams * kKdaSmemStride<kChunkRows>, kKdaOneTeamBytes<kChunkRows>);
constexpr size_t kSmemBytes = std::max(std::max(sizeof(AttnSmem), kGemvSmemBytes),
                                       std::max(kKdaBytes<k3::kChunkRowsQuarter>, kKdaBytes<k3::kChunkRowsHead>));
constexpr int kHeaderWords = int(sizeof(PlanHeader) / 4);
// Plan::serialize()'s layout: cta_begin[blocks + 1] from kPlanCtaBeginWord, then the instructions (4
// words each); CTA n runs instrs[cta_begin[n] .. cta_begin[n + 1]).
__device__ __forceinline__ const int32_t* plan_cta_begin(const int32_t* plan) { return plan + kPlanCtaBeginWord; }
template <class Count>  // the header's int32 count, or the grid's unsigned one once they are checked equal
__device__ __forceinline__ const Instr* plan_instrs(const int32_t* plan, Count blocks) {
    return reinterpret_cast<const Instr*>(plan_cta_begin(plan) + blocks + 1);
}
#if MONOKDA_AMD
constexpr size_t kSmemLimit = 65536;  // LDS a workgroup on gfx90a / gfx940
#else
constexpr size_t kSmemLimit = 232448;  // sm_90: shared memory a block may opt into
#endif
// The dynamic part and the static control blocks: the CTA's and (NVIDIA) the kda teams' of each of
// run_kda's two instantiations (one set passed down from the kernel measured slower:
// docs/results/performance-changes.md, "the teams' control blocks at file scope"), plus 16 bytes for the rest (ptxas: 928 bytes static). The sum is 232 424 of 232 448: a
// larger control block or role must make room first.
static_assert(kSmemBytes + (1 + (kKdaTeams > 1 ? 2 * kKdaTeams : 0)) * sizeof(Ctl) + 16 <= kSmemLimit,
              "a role's shared memory does not fit the target");

// Which mailboxes hold tagged pairs: the stages below poll them so (Plan::is_tagged must agree;
// the launcher checks).
__host__ __device__ constexpr bool box_is_tagged(int m) {
    return m == int(Mailbox::PART) || m == int(Mailbox::WGT) || m == int(Mailbox::MSQ) || m == int(Mailbox::ONRM);
}
static_assert(box_is_tagged(0) && box_is_tagged(1) && box_is_tagged(2) && int(Mailbox::XRDY) == 3,
              "XRDY's flags open the flag memory (offset 0, 16-byte aligned): the gemv pass reads four at once");

// Slot values and num_accepted, checked by every CTA before anything is written; CTA 0 records.
__device__ bool step_values_ok(const KdaArgs& a, const Ctl& c) {
    bool bad = false;
    uint32_t code = 0, d0 = 0, d1 = 0;
    for (int i = threadIdx.x; i < a.S; i += kThreads) {
        const int32_t v = a.state_indices[i];
        if (v <= 0) continue;
        if (v >= a.slots) {
            bad = true, code = kErrSlotRange, d0 = uint32_t(i), d1 = uint32_t(v);
            continue;
        }
        for (int j = 0; j < i; ++j)
            if (a.state_indices[j] == v) {
                bad = true, code = kErrSlotDuplicate, d0 = uint32_t(i), d1 = uint32_t(v);
                break;
            }
    }
    for (int r = threadIdx.x; r < a.R; r += kThreads) {
        const int32_t n = a.num_accepted[r];
        if (n < 1 || n > a.L) bad = true, code = kErrAcceptedRange, d0 = uint32_t(r), d1 = uint32_t(n);
    }
    if (bad && blockIdx.x == 0) record_error(a, c, code, ~0u, ~0u, d0, d1);
    return !__syncthreads_or(bad);
}

// A CTA's kda instructions from `first` on (up to `end` or the first instruction of another
// role), in one of two modes:
// - the rest of the list is two or more kda tasks (core/plan.hpp, kda_tasks_well_formed: the rule the
//   emulator's Plan::with_kda_teams models), as the plan deals them: task k runs on team k % kKdaTeams;
// - otherwise the whole CTA runs them one by one in list order.
// Within a team the order is the list's, and the next task's KDA_LOAD (no waits, produces nothing)
// runs ahead of this task's KDA_NORM, so its loads overlap NORM's waits (KDA_NORM reads none of what
// KDA_LOAD writes). A team's stream is a subsequence of the CTA's list, so every wait the plan lets
// finish in list order still finishes (the emulator checks the list order). Instantiated once per
// task shape (kChunkRows: the plan's, dispatched below); in each, every kda body has one call site
// (two for KDA_LOAD): a second, inlined copy of the bodies made S = 1 slower even where it never
// ran, since the kernel's instruction fetch is what limits its once-run code
// (docs/decisions/0020-kda-code-size.md).
// *next: the first instruction not run (another role's, or end).
__device__ __forceinline__ bool is_kda(int32_t op) { return op >= int32_t(Op::KDA_LOAD) && op <= int32_t(Op::KDA_NORM); }

template <int kChunkRows>
__device__ bool run_kda(const KdaArgs& a, Ctl& c, const Instr* ins, int first, int end, int list0,
                        unsigned char* smem, int* next) {
    const int teams =
        kKdaTeams > 1 && end - first >= kKdaTeamMinInstrs && kda_tasks_well_formed(ins, first, end) ? kKdaTeams : 1;
    __shared__ Ctl team_ctl[kKdaTeams];  // per team: the instruction being run, the PROJ groups seen
    if (teams > 1) {
        if (threadIdx.x < teams) team_ctl[threadIdx.x] = c;
        __syncthreads();
    }
    const int tn = kThreads / teams, k0 = int(threadIdx.x) / tn;
    const Team team{int(threadIdx.x) % tn, tn, teams == 1 ? 0 : 1 + k0};
    Ctl& tc = teams == 1 ? c : team_ctl[k0];
    constexpr size_t stride = kKdaSmemStride<kChunkRows>;
    KdaSmem<kChunkRows>& sm = *reinterpret_cast<KdaSmem<kChunkRows>*>(smem + k0 * stride);
    kda_team_start(sm, teams == 1 && kStageState ? reinterpret_cast<float*>(smem + stride) : nullptr, team);
    // this team's j-th instruction: list order, or its tasks' instructions in turn
    auto index = [&](int j) { return teams == 1 ? first + j : first + 4 * (k0 + j / 4 * teams) + j % 4; };
    int count = 0;
    if (teams == 1)
        while (first + count < end && is_kda(ins[first + count].op)) ++count;
    else
        count = 4 * ((end - first) / 4 / teams + (k0 < (end - first) / 4 % teams ? 1 : 0));
    *next = teams == 1 ? first + count : end;
    auto done = [&](int i) {  // the instruction's end, for the trace
        if (a.trace && team.tid == 0)
            a.trace[blockIdx.x * kTraceWords + kTraceInstr + min(i - list0, kTraceInstrs - 1)] = now_ns();
    };
    bool ok = true;
    int loaded = -1;  // a KDA_LOAD already run ahead
    for (int j = 0; j < count && ok; ++j) {
        const int i = index(j);
        const Instr in = ins[i];
        if (team.tid == 0) tc.instr = i;
        team.sync();
        switch (Op(in.op)) {
            case Op::KDA_LOAD:
                if (loaded == i) continue;  // run ahead of the previous task's KDA_NORM
                KdaTask<kChunkRows>::load(a, sm, in.a, in.b, in.c, team);
                break;
            case Op::KDA_CONV: ok = KdaTask<kChunkRows>::conv(a, tc, sm, in.a, in.b, in.c, team); break;
            case Op::KDA_REC:
                ok = KdaTask<kChunkRows>::rec(a, tc, sm, in.a, in.b, in.c, team);
                if (ok && j + 2 < count && Op(ins[index(j + 1)].op) == Op::KDA_NORM &&
                    Op(ins[index(j + 2)].op) == Op::KDA_LOAD) {
                    done(i);
                    const int li = index(j + 2);
                    const Instr nx = ins[li];
                    if (team.tid == 0) tc.instr = li;
                    KdaTask<kChunkRows>::load(a, sm, nx.a, nx.b, nx.c, team);
                    loaded = li;
                    done(li);
                    continue;
                }
                break;
            case Op::KDA_NORM: ok = KdaTask<kChunkRows>::norm(a, tc, sm, in.a, in.b, in.c, team); break;
            default: ok = false;  // not reached: count stops at the first instruction of another role
        }
        if (ok) done(i);
    }
    return !__syncthreads_or(!ok);
}

// Inlined into the kernel: as a function of its own (nvcc's choice once the gemv pass had six
// instantiations) it took the kernel's arguments through a 368-byte copy in local memory.
template <bool kExactInProj>
__device__ __forceinline__ bool run_instructions(const KdaArgs& a, Ctl& c, const WeightMap* wmap, unsigned char* smem) {
    const PlanHeader* h = reinterpret_cast<const PlanHeader*>(a.plan);
    const int32_t* cta_begin = plan_cta_begin(a.plan);
    const Instr* ins = plan_instrs(a.plan, h->blocks);
    AttnSmem& attn = *reinterpret_cast<AttnSmem*>(smem);
    GemvSmem& gemv = *reinterpret_cast<GemvSmem*>(smem);
    const int end = cta_begin[blockIdx.x + 1];
    bool first_pass = true;  // the CTA's first gemv pass: its first weight steps go out before x exists
    for (int i = cta_begin[blockIdx.x]; i < end; ++i) {
        const Instr in = ins[i];
        if (is_kda(in.op)) {
            int next = end;
            // the plan's task shape (PlanPolicy::k3_chunk_rows; the launcher admits these two)
            const bool ok = h->kda_chunk_rows == k3::kChunkRowsQuarter
                                ? run_kda<k3::kChunkRowsQuarter>(a, c, ins, i, end, cta_begin[blockIdx.x], smem, &next)
                                : run_kda<k3::kChunkRowsHead>(a, c, ins, i, end, cta_begin[blockIdx.x], smem, &next);
            if (!ok) return false;
            i = next - 1;
            continue;
        }
        if (threadIdx.x == 0) c.instr = i;
        __syncthreads();
        bool ok = true;
#if MONOKDA_NVIDIA
        if (!kExactInProj && (Op(in.op) == Op::GEMV_PREFETCH || Op(in.op) == Op::GEMV_GROUP)) {
            // the CTA's consecutive gemv instructions of contiguous groups, as one pass (kda_gemv_batch.hpp)
            int G = 0, k = i;
            const int cap = batch_capacity(a.S), group0 = in.a;
            for (; k < end && G < cap; ++k) {
                const Op op = Op(ins[k].op);
                if ((op != Op::GEMV_PREFETCH && op != Op::GEMV_GROUP) || ins[k].a != group0 + G) break;
                if (op == Op::GEMV_GROUP) ++G;
            }
            if (G > 0) {  // a lone GEMV_PREFETCH (a hint with nothing to compute) is no pass, and not the first
                if (!gemv_batch(a, c, wmap, batch_smem(smem), group0, G, first_pass)) return false;
                first_pass = false;
            }
            i = k - 1;
            continue;
        }
#endif
        switch (Op(in.op)) {
            case Op::ATTN_PART: attn_part(a, c, attn, in.a, in.b); break;
            case Op::ATTN_GATE: ok = attn_gate(a, c, attn, in.a); break;
            case Op::ATTN_MIX: ok = attn_mix(a, c, attn, in.a, in.b); break;
            case Op::ATTN_X: ok = attn_x(a, c, attn, in.a, in.b); break;
            case Op::GEMV_PREFETCH: gemv_prefetch(a, c, gemv, in.a); break;
            case Op::GEMV_GROUP: ok = gemv_group<kExactInProj>(a, c, gemv, in.a); break;
            default:
                if (threadIdx.x == 0) record_error(a, c, kErrBadOpcode, ~0u, ~0u, uint32_t(in.op), 0);
                ok = false;
        }
        if (!ok) return false;
        if (a.trace && threadIdx.x == 0)  // the instruction's end (the gemv pass stamps its own)
            a.trace[blockIdx.x * kTraceWords + kTraceInstr + min(i - cta_begin[blockIdx.x], kTraceInstrs - 1)] = now_ns();
    }
    return true;
}

// kExactInProj: the in_proj body (kda_gemv.hpp): exact sum order, or the matrix unit.
template <bool kExactInProj>
__global__ void __launch_bounds__(kThreads, 1) kda_pre_kernel(const KdaArgs a, const MONOKDA_GRID_CONSTANT WeightMap wmap) {
    extern __shared__ __align__(16) unsigned char smem[];
    __shared__ Ctl c;
    if (threadIdx.x == 0) {
        // Every CTA of every launch adds one to the arrivals counter as it enters, and all CTAs of a
        // launch derive the same tag from what they read (launch_tag, core/plan.hpp), with nothing to
        // reset and nothing at exit (the last CTA to finish advanced an epoch word until 2026-12-01:
        // an atomic, a fence and a store after the step's last instruction).
        c.tag = launch_tag(atomicAdd(a.arrivals, 1ull), gridDim.x);
        const int32_t* entries = a.plan + kHeaderWords;
        const int32_t* words = entries + kMailboxCount;
        uint32_t t = 0, f = 0;
        for (int m = 0; m < kMailboxCount; ++m) {
            c.words[m] = uint32_t(words[m]);
            if (box_is_tagged(m)) c.tagged_off[m] = t, t += uint32_t(entries[m] * words[m]);
            else c.flag_off[m] = f, f += uint32_t(entries[m]);
        }
        c.instr = -1;
        c.prefetched = -1;
        if (a.trace) {
            a.trace[blockIdx.x * kTraceWords] = now_ns();
            a.trace[blockIdx.x * kTraceWords + kTraceWords - 3] = sm_id() + 1;  // not a time: which SM
        }
        c.x_seen = 0;
    }
    for (int i = threadIdx.x; i < int(sizeof(c.proj_seen) / 4); i += kThreads) c.proj_seen[i] = 0;
    __syncthreads();
    bool ok = true;
    if (int(gridDim.x) != reinterpret_cast<const PlanHeader*>(a.plan)->blocks) {
        if (threadIdx.x == 0 && blockIdx.x == 0) record_error(a, c, kErrGrid, ~0u, ~0u, gridDim.x, 0);
        ok = false;
    }
    if (ok && threadIdx.x >= kWave && threadIdx.x < 2 * kWave) {
        // the CTA's instruction list on its way into L1 while the slot checks load the step's
        // indices: run_instructions then does not wait for it a line at a time
        const int32_t* cta_begin = plan_cta_begin(a.plan);
        const int lane = int(threadIdx.x) - kWave, b = cta_begin[blockIdx.x], e = cta_begin[blockIdx.x + 1];
        const Instr* ins = plan_instrs(a.plan, gridDim.x);  // the plan's CTA count, checked above
        constexpr int kPerLine = 128 / int(sizeof(Instr));
        for (int l = b / kPerLine + lane; l * kPerLine < e; l += kWave) prefetch_l1(ins + l * kPerLine);
    }
    if (ok) ok = step_values_ok(a, c);
    stress_hold(a, c.tag);  // a MONOKDA_STRESS build only (kernels/kda_stress.hpp)
    if (ok) run_instructions<kExactInProj>(a, c, &wmap, smem);
    async_wait<0>();
    __syncthreads();
    if (threadIdx.x == 0 && a.trace) a.trace[blockIdx.x * kTraceWords + kTraceWords - 1] = now_ns();
}

void check_hip(hipError_t e, const char* what) {
    if (e != hipSuccess) throw GpuError(std::string("kda_pre: ") + what + ": " + hipGetErrorString(e));
}

std::string ss(int64_t v) { return std::to_string(v); }

#if MONOKDA_NVIDIA
// The in_proj weight [N, D] as 64-column boxes of a band of 1..6 groups, as kda_gemv_batch.hpp reads them.
void encode_weight_map(WeightMap& m, const bf16* w, uint32_t box_cols) {
    static_assert(sizeof(m.band) / sizeof(m.band[0]) == kBatchGroups, "a map a band height");
    for (int i = 0; i < kBatchGroups; ++i) {
        const std::string err = encode_bf16_tensor_map(m.band[i], w, k3::N, k3::D, uint32_t(i + 1) * k3::kGroupRows, box_cols);
        if (!err.empty()) throw GpuError("kda_pre: the in_proj weight's tensor map: " + err);
    }
}
#endif

}  // namespace

bool kernel_has_stress_mode() {
#if MONOKDA_STRESS
    return true;
#else
    return false;
#endif
}

DeviceInfo probe() {
    DeviceInfo d;
    d.built = true;
    d.vendor = MONOKDA_VENDOR;
    int n = 0;
    if (hipGetDeviceCount(&n) != hipSuccess || n == 0) {
        (void)hipGetLastError();
        d.why = "no " + d.vendor + " GPU found";
        return d;
    }
    int dev = 0;
    hipDeviceProp_t p;
    if (hipGetDevice(&dev) != hipSuccess || hipGetDeviceProperties(&p, dev) != hipSuccess) {
        (void)hipGetLastError();
        d.why = "cannot read the GPU's properties";
        return d;
    }
    d.name = p.name;
    d.sms = p.multiProcessorCount;
    int coop = 0, smem = 0;
    (void)hipDeviceGetAttribute(&coop, hipDeviceAttributeCooperativeLaunch, dev);
    (void)hipDeviceGetAttribute(&smem, hipDeviceAttributeMaxSharedMemoryPerBlock, dev);
    d.cooperative = coop != 0;
    d.smem_optin = smem;
#if MONOKDA_NVIDIA
    if (p.major < 9) {
        d.why = d.name + " is compute capability " + ss(p.major) + "." + ss(p.minor) + "; the build is for sm_90a";
        return d;
    }
#endif
    if (!d.cooperative) {
        d.why = d.name + " does not support cooperative launches (co-residency cannot be guaranteed)";
        return d;
    }
    if (d.smem_optin < int64_t(kSmemBytes)) {
        d.why = d.name + " offers " + ss(d.smem_optin) + " bytes of shared memory a block; kda_pre needs " +
                ss(int64_t(kSmemBytes));
        return d;
    }
    d.present = true;
    return d;
}

struct KdaLauncher::Impl {
    Plan plan;
    LaunchOptions opt;
    int pace_ns = 0;  // opt.weight_pace_ns resolved for the plan
    std::vector<int32_t> words;
    int32_t* d_plan = nullptr;
    uint64_t* d_tagged = nullptr;
    uint32_t* d_flags = nullptr;
    unsigned long long* d_arrivals = nullptr;  // KdaArgs::arrivals
    KdaErrorRecord* d_error = nullptr;
    uint64_t* d_trace = nullptr;  // MONOKDA_TRACE=FILE: per-CTA clock stamps, written after each check()
    std::string trace_path;
    WeightMap wmap{};                     // encoded for wmap_of (re-encoded when the weight moves)
    const void* wmap_of = nullptr;
    const void* xmap_of = nullptr;        // wmap.x encoded for x at xmap_of (S rows: the plan's, fixed)

    explicit Impl(const Plan& p) : plan(p) {}
    ~Impl() {
        for (void* q : {(void*)d_plan, (void*)d_tagged, (void*)d_flags, (void*)d_arrivals, (void*)d_error, (void*)d_trace})
            if (q) (void)hipFree(q);
    }
};

KdaLauncher::KdaLauncher(const Plan& plan, const LaunchOptions& opt) : impl_(new Impl(plan)) {
    const DeviceInfo dev = probe();
    if (!dev.present) throw NoGpu("kda_pre: " + dev.why);
    const Config& cfg = plan.config();
    check_supported(cfg);
    const PlanParams& pp = plan.params();
    if (plan.n_attn() != k3::kAttn || pp.slice_width != k3::kSlice || pp.gemv_group_rows != k3::kGroupRows ||
        (pp.kda_chunk_rows != k3::kChunkRowsQuarter && pp.kda_chunk_rows != k3::kChunkRowsHead) ||
        pp.attn_row_parts > k3::kMaxAttnParts)
        bad_input("kda_pre kernel: the plan must use the k3 parameters (slice 128, group rows 16, chunk rows 32 or 128, "
                  "attn row parts 1 or 2)");
    if (plan.blocks() != dev.sms)
        bad_input("kda_pre kernel: the plan has " + ss(plan.blocks()) + " CTAs but " + dev.name + " has " +
                  ss(dev.sms) + " SMs/CUs (one CTA each)");
    for (int m = 0; m < kMailboxCount; ++m)
        if (is_tagged(Mailbox(m)) != box_is_tagged(m))
            throw GpuError("kda_pre: mailbox " + std::string(to_string(Mailbox(m))) + " is tagged in the plan but not in the kernel, or the reverse");
    if (opt.check_plan) {
        const auto problems = plan.structural_problems();
        if (!problems.empty()) bad_input("kda_pre kernel: the plan is unsound: " + problems.front());
    }
    if (opt.poll_timeout_ms < 1) bad_input("kda_pre: poll timeout must be at least 1 ms");
    if (opt.weight_pace_ns < -1 || opt.weight_pace_ns > kMaxWeightPaceNs)
        bad_input("kda_pre: weight pace must be -1 (the launcher's choice) or 0.." + std::to_string(kMaxWeightPaceNs) +
                  " ns (got " + std::to_string(opt.weight_pace_ns) + ")");
    const StressOptions& st = opt.stress;
    if (st.release_delay_ns < 0 || st.release_delay_ns > kMaxStressDelayNs || st.hold_ns < 0 || st.hold_ns > kMaxStressDelayNs)
        bad_input("kda_pre: stress delays must be 0.." + std::to_string(kMaxStressDelayNs) + " ns (got release " +
                  std::to_string(st.release_delay_ns) + ", hold " + std::to_string(st.hold_ns) + ")");
    if (st.hold_percent < 0 || st.hold_percent > 100)
        bad_input("kda_pre: stress hold_percent must be 0..100 (got " + std::to_string(st.hold_percent) + ")");
    if (st.any() && !kernel_has_stress_mode())
        bad_input("kda_pre: stress options need the kernel built with MONOKDA_STRESS (the gpu stress test's)");
#if !MONOKDA_NVIDIA
    if (opt.plant_copy_fault != LaunchOptions::CopyFault::none)
        bad_input("kda_pre: a planted copy fault needs the copy engine's copies (NVIDIA builds)");
#endif
    impl_->opt = opt;
    impl_->pace_ns = opt.weight_pace_ns >= 0 ? opt.weight_pace_ns : plan.params().gemv_every_cta ? 0 : kWeightPaceNs;

    Impl& m = *impl_;
    m.words = plan.serialize();
    size_t tagged = 0, flags = 0;
    for (int b = 0; b < kMailboxCount; ++b)
        (box_is_tagged(b) ? tagged : flags) += size_t(plan.entries(Mailbox(b))) * plan.words_per_entry(Mailbox(b));
    check_hip(hipMalloc(&m.d_plan, m.words.size() * 4), "allocating the plan");
    check_hip(hipMemcpy(m.d_plan, m.words.data(), m.words.size() * 4, hipMemcpyHostToDevice), "uploading the plan");
    check_hip(hipMalloc(&m.d_tagged, std::max<size_t>(tagged, 1) * 8), "allocating mailboxes");
    check_hip(hipMalloc(&m.d_flags, std::max<size_t>(flags, 1) * 4), "allocating mailboxes");
    check_hip(hipMalloc(&m.d_arrivals, sizeof(unsigned long long)), "allocating the epoch");
    check_hip(hipMalloc(&m.d_error, sizeof(KdaErrorRecord)), "allocating the error word");
    // zero once: tag 0 is never a launch's tag, so fresh mailboxes read as "not ready"
    check_hip(hipMemset(m.d_tagged, 0, std::max<size_t>(tagged, 1) * 8), "clearing mailboxes");
    check_hip(hipMemset(m.d_flags, 0, std::max<size_t>(flags, 1) * 4), "clearing mailboxes");
    check_hip(hipMemset(m.d_arrivals, 0, sizeof(unsigned long long)), "clearing the epoch");
    check_hip(hipMemset(m.d_error, 0, sizeof(KdaErrorRecord)), "clearing the error word");
    if (const char* tp = std::getenv("MONOKDA_TRACE")) {  // a measuring aid: clock stamps of every CTA
        m.trace_path = tp;
        check_hip(hipMalloc(&m.d_trace, size_t(plan.blocks()) * kTraceWords * 8), "allocating the trace");
        check_hip(hipMemset(m.d_trace, 0, size_t(plan.blocks()) * kTraceWords * 8), "clearing the trace");
    }
    auto kernel = opt.exact_in_proj ? &kda_pre_kernel<true> : &kda_pre_kernel<false>;
    check_hip(hipFuncSetAttribute(reinterpret_cast<const void*>(kernel), hipFuncAttributeMaxDynamicSharedMemorySize,
                                  int(kSmemBytes)),
              "raising the shared-memory limit");
    int per_sm = 0;
    check_hip(hipOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, kSmemBytes), "occupancy query");
    if (per_sm < 1 || int64_t(per_sm) * dev.sms < plan.blocks())
        throw GpuError("kda_pre: " + ss(plan.blocks()) + " CTAs cannot all be resident (" + ss(per_sm) +
                       " a multiprocessor); refusing to launch");
}

KdaLauncher::~KdaLauncher() = default;
const Plan& KdaLauncher::plan() const { return impl_->plan; }

void KdaLauncher::launch(const KdaTensors& t, void* stream) {
    const Config& c = impl_->plan.config();
    validate_tensors(c, t, impl_->opt.export_handoffs);
    KdaArgs a{};
    a.plan = impl_->d_plan;
    a.R = c.R, a.L = c.L, a.S = c.S(), a.nb = c.nb, a.block_write = c.block_write ? 1 : 0;
    a.conv_ds = c.conv_layout == ConvLayout::ds ? 1 : 0;
    a.slots = c.slots;
    a.attn_parts = impl_->plan.attn_parts();
    a.attn_split = impl_->plan.attn_row_begin(1);
    a.eps = float(c.eps), a.l2_eps = float(c.l2_eps), a.lower_bound = float(c.lower_bound);
    a.kscale = float(std::pow(double(c.K), -0.5));
    auto bf = [](const View& v) { return static_cast<bf16*>(const_cast<void*>(v.data)); };
    auto f32 = [](const View& v) { return static_cast<float*>(const_cast<void*>(v.data)); };
    a.prefix = bf(t.prefix), a.prefix_rs = t.prefix.strides[0];
    a.delta = bf(t.delta), a.delta_rs = t.delta.strides[0];
    a.prefix_out = bf(t.prefix_out), a.prefix_out_rs = t.prefix_out.strides[0];
    a.blocks = bf(t.blocks), a.blocks_rs = t.blocks.strides[0], a.blocks_bs = t.blocks.strides[1];
    a.res_norm_w = bf(t.res_norm_w), a.res_proj_w = bf(t.res_proj_w), a.input_norm_w = bf(t.input_norm_w);
    a.in_proj_w = bf(t.in_proj_w), a.f_b_w = bf(t.f_b_w), a.o_norm_w = bf(t.o_norm_w);
    a.conv_w = f32(t.conv_w), a.A_log = f32(t.A_log), a.dt_bias = f32(t.dt_bias);
    a.conv_state = bf(t.conv_state), a.conv_ss = t.conv_state.strides[0];
    a.ssm_state = f32(t.ssm_state), a.ssm_ss = t.ssm_state.strides[0];
    a.state_indices = static_cast<const int32_t*>(t.state_indices.data);
    a.num_accepted = static_cast<const int32_t*>(t.num_accepted.data);
    a.core_out = bf(t.core_out);
    a.x = bf(t.x), a.proj = bf(t.proj), a.qkv = bf(t.qkv);
    a.export_handoffs = impl_->opt.export_handoffs ? 1 : 0;
    a.g1 = bf(t.g1);
    a.o = a.export_handoffs ? bf(t.o) : nullptr;
    a.tagged = impl_->d_tagged, a.flags = impl_->d_flags;
    a.arrivals = impl_->d_arrivals;
    a.error = impl_->d_error;
    a.poll_timeout_ns = uint64_t(impl_->opt.poll_timeout_ms) * 1000000ull;
    a.trace = impl_->d_trace;
    a.w_evict_first = impl_->opt.weight_evict_first ? 1 : 0;
    a.w_pace_ns = impl_->pace_ns;
#if MONOKDA_STRESS
    const StressOptions& st = impl_->opt.stress;
    a.stress = {uint32_t(st.release_delay_ns), uint32_t(st.hold_ns), uint32_t(st.hold_percent), st.seed,
                st.plant == StressOptions::Plant::relaxed_poll ? kPlantRelaxedPoll
                : st.plant == StressOptions::Plant::ring_short ? kPlantRingShort
                                                               : kPlantNone};
#endif
#if MONOKDA_NVIDIA
    using Fault = LaunchOptions::CopyFault;
    const Fault fault = impl_->opt.plant_copy_fault;
    if (impl_->wmap_of != a.in_proj_w) {
        encode_weight_map(impl_->wmap, a.in_proj_w, fault == Fault::weight ? kBoxCols / 2 : kBoxCols);
        impl_->wmap_of = a.in_proj_w;
    }
    if (impl_->xmap_of != a.x) {  // a box is all the step's S rows
        const uint32_t cols = fault == Fault::x ? kBoxCols / 2 : kBoxCols;
        const std::string err = encode_bf16_tensor_map(impl_->wmap.x, a.x, uint64_t(a.S), k3::D, uint32_t(a.S), cols);
        if (!err.empty()) throw GpuError("kda_pre: x's tensor map: " + err);
        impl_->xmap_of = a.x;
    }
#endif
    void* args[] = {&a, &impl_->wmap};
    auto kernel = impl_->opt.exact_in_proj ? &kda_pre_kernel<true> : &kda_pre_kernel<false>;
    check_hip(hipLaunchCooperativeKernel(reinterpret_cast<const void*>(kernel), dim3(impl_->plan.blocks()),
                                         dim3(kThreads), args, kSmemBytes, static_cast<hipStream_t>(stream)),
              "cooperative launch");
}

void KdaLauncher::check(void* stream) {
    check_hip(hipStreamSynchronize(static_cast<hipStream_t>(stream)), "kernel execution");
    if (impl_->d_trace) {  // one line a CTA: its stamps in ns, relative to the earliest entry, and its SM
        std::vector<uint64_t> t(size_t(impl_->plan.blocks()) * kTraceWords);
        check_hip(hipMemcpy(t.data(), impl_->d_trace, t.size() * 8, hipMemcpyDeviceToHost), "reading the trace");
        uint64_t t0 = ~0ull;
        for (int b = 0; b < impl_->plan.blocks(); ++b) t0 = std::min(t0, t[size_t(b) * kTraceWords]);
        if (FILE* f = std::fopen(impl_->trace_path.c_str(), "a")) {
            for (int b = 0; b < impl_->plan.blocks(); ++b) {
                std::fprintf(f, "cta %d", impl_->plan.list_at(b));  // the plan's name for it; sm= says where it ran
                for (int k = 0; k < kTraceWords; ++k) {
                    const uint64_t v = t[size_t(b) * kTraceWords + k];
                    if (k == kTraceWords - 3) std::fprintf(f, " sm=%lld", (long long)v - 1);  // the SM id word
                    else std::fprintf(f, " %lld", v ? (long long)(v - t0) : -1ll);
                }
                std::fprintf(f, "\n");
            }
            std::fclose(f);
        }
    }
    KdaErrorRecord e{};
    check_hip(hipMemcpy(&e, impl_->d_error, sizeof e, hipMemcpyDeviceToHost), "reading the error word");
    if (e.code == kErrNone) return;
    check_hip(hipMemset(impl_->d_error, 0, sizeof e), "clearing the error word");
    const Plan& p = impl_->plan;
    const int L = p.config().L;
    switch (e.code) {
        case kErrSlotRange:
            bad_input("state_indices[" + ss(e.detail0 / L) + "][" + ss(e.detail0 % L) + "] = " +
                      ss(int32_t(e.detail1)) + " is out of range (slots = " + ss(p.config().slots) +
                      ") (found on the device; nothing was written)");
        case kErrSlotDuplicate:
            bad_input("state_indices: slot " + ss(int32_t(e.detail1)) + " appears more than once (at [" +
                      ss(e.detail0 / L) + "][" + ss(e.detail0 % L) + "]) (found on the device; nothing was written)");
        case kErrAcceptedRange:
            bad_input("num_accepted[" + ss(e.detail0) + "] = " + ss(int32_t(e.detail1)) + " is outside 1..L = 1.." +
                      ss(L) + " (found on the device; nothing was written)");
        case kErrTimeout: {
            std::string where = "launch CTA " + ss(e.cta);
            if (e.cta < uint32_t(p.blocks())) {  // the plan's list, as the emulator names it
                const int list = p.list_at(int(e.cta)), local = int(e.instr) - impl_->words[size_t(kPlanCtaBeginWord) + e.cta];
                where = "CTA " + ss(list) + (list != int(e.cta) ? " (launch CTA " + ss(e.cta) + ")" : "");
                if (local >= 0 && local < int(p.instrs(list).size())) where += " " + p.describe(p.instrs(list)[size_t(local)]);
            }
            std::string what = e.box < uint32_t(kMailboxCount) && int(e.entry) < p.entries(Mailbox(e.box))
                                   ? p.entry_name({Mailbox(e.box), int32_t(e.entry)})
                               : e.box == kBoxWeightCopy
                                   ? "its in_proj weight copy of step " + ss(e.entry)
                               : e.box == kBoxXCopy
                                   ? "its copy of x for step " + ss(e.entry)
                                   : "mailbox " + ss(e.box) + " entry " + ss(e.entry);
            throw GpuError("kda_pre: TIMEOUT: " + where + " gave up waiting for " + what + " after " +
                           ss(impl_->opt.poll_timeout_ms) + " ms (epoch " + ss(e.epoch) + ")");
        }
        case kErrBadOpcode:
            throw GpuError("kda_pre: launch CTA " + ss(e.cta) + " met unknown opcode " + ss(int32_t(e.detail0)));
        case kErrGrid:
            throw GpuError("kda_pre: launched with " + ss(e.detail0) + " CTAs, the plan has " + ss(p.blocks()));
        default: throw GpuError("kda_pre: unknown error code " + ss(e.code));
    }
}

uint32_t KdaLauncher::device_epoch() const {
    unsigned long long n = 0;
    check_hip(hipDeviceSynchronize(), "synchronising");
    check_hip(hipMemcpy(&n, impl_->d_arrivals, sizeof n, hipMemcpyDeviceToHost), "reading the epoch");
    return n == 0 ? 0u : launch_tag(n - 1, uint32_t(impl_->plan.blocks()));  // the last launch's tag (0 before any); the grid is plan.blocks()
}

}  // namespace monokda::gpu
