// Kernel v2's machine (emulator/v2/machine_v2.hpp), shared by the two files that define it:
// machine_v2.cpp (the mbarrier model, landings, the loop, hangs, history), roles_v2.cpp (each step
// of the producer, the consumers and the reducer, with the detectors' checks where they act) and
// seam_v2.cpp (the seam's steps and their detectors), tail_v2.cpp (the owners' PUBLISH, the tasks'
// POLL, REC and NORM, and their detectors).
#pragma once
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "core/reduction_order.hpp"
#include "emulator/v2/machine_v2.hpp"

namespace monokda::emu::v2detail {

// An mbarrier (a CTA's full, empty, recv, free), a tile pair's named barrier or a cluster barrier:
// `count` arrivals and a byte count complete a phase; a wait is for the parity of a round.
struct MBar {
    bool made = false;          // initialised (INIT; named and cluster barriers are the hardware's: from the start)
    int count = 0, pending = 0;
    int64_t tx = 0;
    uint32_t completed = 0;     // phases completed
    int init_proc = -1;         // the cluster-local process that made it, and its clock component then
    uint32_t init_clock = 0;
    std::vector<uint32_t> acc, done;  // clocks: joined over this phase's arrivals; of the last completed phase
    int64_t version = 0;        // bumped on every change a waiter could see
    int lost = 0;               // arrivals and byte counts that reached it before it was made
};

struct Proc {
    size_t pc = 0;
    int sub = 0;                 // the step's stage (a wait passed, an arrive made)
    bool done = false, blocked = false;
    const MBar* on = nullptr;    // blocked on, at version on_version
    int64_t on_version = 0;
    int self = 0;                // index among the cluster's processes (its vector-clock component)
    std::vector<uint32_t> vc;
    std::vector<float> acc;      // a consumer's sums: [16 rows][S]
};

struct RingSlot {
    std::vector<uint16_t> bytes;
    int32_t chunk = -1;                 // the chunk that landed last
    std::vector<int32_t> freed;         // per consumer warp: the last chunk it freed from this slot
    std::vector<uint32_t> free_clock;   // the warp's clock component at that free
};

// One sender's part of an owner's receive slot: [8 rows][S] fp32.
struct Region {
    std::vector<float> data;
    int32_t issued = -1, landed = -1, read = -1;  // units: last sent into it, last landed, last summed by the owner
    uint32_t landed_clock = 0, read_clock = 0;    // the sender's clock at the landed send; the reducer's at its sum
    std::vector<uint32_t> landed_vc;              // the landed send's whole clock (for the report only)
};

struct CtaState {
    std::vector<MBar> full, empty, recv, free, pair;
    std::vector<RingSlot> ring;
    std::vector<std::vector<Region>> regions;  // [recv slot][sender rank]
    std::vector<std::vector<float>> red;       // [tile]: the odd warp's sums handed to the even one
    std::vector<MBar> seam;                    // [V2SeamBar]
    std::vector<MBar> share, onrm, decay;      // [pair onrm]: the tail's barriers of the CTA's pairs
    bool x_stored = false;                     // the seam's X ran; x_clock: its clock component then
    uint32_t x_clock = 0;
    // the seam's values: LOAD's of the slice (its sources, wq and the gain); its own sums before they
    // are sent: PART's [S][nb + 1][rank slices][2], GATE's [S][nb + 2] (owned rows), Σmixed² [S][rank
    // slices]; what lands in it: part [owned row][nb + 1][slices][2], wgt [S][nb + 2], msq [S][slices];
    // mixed and x [S][cols] (x as the bf16 it rounds to)
    SeamRows rows;
    std::vector<float> my_part, my_wgt, my_msq, part, wgt, msq, mixed, x;
};

// A tail task's values (tail_v2.cpp): what it polled itself, what its pair's shares and partials
// brought, and what it computed.
struct TaskState {
    std::vector<bf16> q, k, v, g;       // [L][K] q and k of the head (the pair's shares), [L][16] its v and g rows
    std::vector<float> fa, beta;        // [L][F] f_a (the pair's shares), [L] sigmoid(beta_raw)
    std::vector<float> onrm;            // [tiles][L]: the pair's partial Σō²
    std::vector<float> decay, qn, kn;   // [L][K]: the pair's decays; q̂ and k̂ (DECAY's, for REC)
    // [V2Bar share, onrm, decay][tiles]: the phase of the barrier that counted each tile's send (-1: not
    // landed), and the sender's clock component at the send
    std::vector<int> in[3];
    std::vector<uint32_t> clock[3];
    std::vector<bf16> o;                // [L][16]
    std::vector<char> polled;           // [receive entries]: words this task's process saw carry the step's tag
};

struct Landing {
    int64_t at, seq;
    enum Kind { copy, partial, arrive, seam_in, seam_send, words, tail_share, tail_onrm, tail_decay } kind;
    int a, b;                    // copy: cta, chunk; partial: partial index; arrive: free entry, target rank;
                                 // seam_in: cta; seam_send: send index; words: receive entry, request;
                                 // tail_share, tail_onrm, tail_decay: the receiving task, the sending task
    std::vector<uint32_t> vc;    // the issuer's clock
    std::vector<float> data;     // partial: [8][S]
    int proc;
    bool operator>(const Landing& o) const { return at != o.at ? at > o.at : seq > o.seq; }
};

struct Stop {};

struct Hist { int64_t tick; int32_t proc, pc; char what; };

class Machine {
public:
    Machine(const PlanV2& p, const std::vector<bf16>& x, const std::vector<uint16_t>& packed, const V2MachineOptions& o,
            const SeamInputs& seam, const StepInputs* step, V2MachineResult& r);
    void run();

private:
    // machine_v2.cpp
    MBar& bar(const V2BarRef& b, int p);
    MBar& wait_bar(const V2Wait& w, int p);  // bar, or a words wait's model
    void make(MBar& b, int count, int p);
    void arrive(MBar& b, int count, const std::vector<uint32_t>& vc);
    void expect(MBar& b, int64_t bytes);
    void complete_tx(MBar& b, int64_t bytes, const std::vector<uint32_t>& vc);
    void check_made(const MBar& b, int p, const std::string& what);
    bool await(int p, const V2Wait& w);
    void tick(int p) { ++procs_[size_t(p)].vc[size_t(procs_[size_t(p)].self)]; }
    int64_t delay(int p, bool load);
    void schedule(Landing l);
    void land(const Landing& l);
    [[noreturn]] void fail(Detector d, const std::string& detail, const std::vector<int>& named);
    [[noreturn]] void hang();
    std::string history() const;
    void log(int p, char what) {
        hist_[size_t(hist_at_++ % hist_.size())] = {now_, int32_t(p), int32_t(procs_[size_t(p)].pc), what};
    }
    bool on(Detector d) const { return opt_.detectors.has(d); }
    int local(int p) const { return p % (plan_.params().ranks * kV2ProcsPerCta); }  // within its cluster
    int first_proc(int cluster) const { return cluster * plan_.params().ranks * kV2ProcsPerCta; }
    // roles_v2.cpp
    bool step(int p);  // true: the process completed a step of its program
    bool copy(int p, const V2Instr& in);
    bool take(int p, const V2Instr& in);
    void free_chunk(int p, const V2Instr& in);
    bool sync(int p, const V2Instr& in);
    bool pair(int p, const V2Instr& in);
    bool send(int p, const V2Instr& in);
    bool reduce(int p, const V2Instr& in);
    void release(int p, const V2Instr& in);
    void init(int p);
    void products(int p, const V2Chunk& ch, const RingSlot& slot);
    // seam_v2.cpp
    bool seam_step(int p, const V2Instr& in);  // INPUT, LOAD, PART, GATE, MIX, X, XWAIT
    void seam_sends(int p, V2SeamBar bar);
    void seam_landed(int p, V2SeamBar bar);
    void x_ready(int p, const V2Instr& in);
    void land_seam(const Landing& l);
    void seam_values(int k, V2Op op);  // a seam stage's arithmetic on CTA k's values, in the seam's order
    // the values a send carries: f(i, from, to) for its i-th value, from the sender's and to the receiver's
    // array (my_* and part/wgt/msq of the send's kind), in the order both sides take them
    template <class F> void seam_values_of(const V2SeamSend& x, F&& f) const;
    // tail_v2.cpp
    void tail_init();                          // the tail's state, words and outputs (the constructor)
    void tail_arm(int p);                      // INIT: the CTA's share, onrm and decay barriers made and armed
    bool tail_step(int p, const V2Instr& in);  // PUBLISH, POLL, DECAY, REC, NORM
    void publish(int p, const V2Instr& in);
    bool poll(int p, const V2Instr& in);
    bool decay(int p, const V2Instr& in);
    bool rec(int p, const V2Instr& in);
    bool norm(int p, const V2Instr& in);
    bool await_words(int p, const V2Wait& w, int task, int j);  // a words wait (j: its index in the step's waits)
    void words_read(int p, const V2Instr& in, V2Op op);       // words_fresh: every word read was polled
    void tail_landed(int p, const V2Instr& in, V2Bar kind);  // tail_landed: the pair's sends into `kind` counted and ordered
    void tail_sends(int p, int task, Landing::Kind kind, const std::vector<float>& data);
    void land_tail(const Landing& l);
    int pair_bytes(int task, V2Bar kind) const;  // what the pair's sends into one of its barriers bring

    const PlanV2& plan_;
    const V2MachineOptions& opt_;
    V2MachineResult& res_;
    FaultHooks hooks_;
    const int S_, R_, L_;  // rows of x, ranks, processes a cluster
    std::vector<float> x_;  // [S][D] (a plan without the seam)
    const std::vector<uint16_t>& packed_;
    const SeamInputs& seam_in_;
    const StepInputs* step_;                   // the tail's inputs (a plan with the tail)
    std::vector<TaskState> tasks_;             // [task]
    std::vector<uint16_t> word_bits_;          // [S][N]: the tagged words, bf16 and tag (1: this step's; 0: the step before's)
    std::vector<uint8_t> word_tag_;
    std::vector<MBar> words_;                  // [receive entry][request]: one arrival once its words carry this step's tag
    std::vector<uint32_t> zero_vc_;            // the clock a words arrival carries (none: relaxed stores order nothing)
    ReductionOrder tail_ord_;                  // the plan's
    std::vector<int> seam_slot_;  // [S]: PlanV2::seam_slot of each row, once
    std::vector<Proc> procs_;
    std::vector<CtaState> ctas_;
    std::vector<std::vector<MBar>> cbar_;  // [barrier][instance]: one a cluster, or one a CTA (scope 1)
    std::vector<std::vector<std::vector<V2Wait>>> waits_;  // [process][step]
    std::vector<int> send_phase_;                          // [seam send]: the phase of its barrier that counted it (-1: not landed)
    std::vector<std::vector<std::vector<int>>> sends_into_;  // [cta][V2SeamBar]: the seam sends into that barrier
    std::priority_queue<Landing, std::vector<Landing>, std::greater<Landing>> landings_;
    std::unique_ptr<Scheduler> sched_;
    bool delay_cta_ = false;
    int64_t now_ = 0, seq_ = 0, last_progress_ = 0;
    std::vector<Hist> hist_ = std::vector<Hist>(48);
    size_t hist_at_ = 0;
};

}  // namespace monokda::emu::v2detail
