// The emulator's Machine, shared by the files that define it (run_machine in machine.hpp is its only
// door). Each concern is one file:
//   memory.cpp      the memory model: words with delayed visibility, mailboxes, epochs, vector clocks,
//                   checked reads, weight loads in flight
//   machine.cpp     the machine loop: admission and residency, one CTA's step through its waits,
//                   the watchdog's trigger, the step's outputs
//   roles/attn.cpp, roles/gemv.cpp, roles/kda.cpp
//                   the role bodies, laid out like the kernel's roles (kernels/kda_attn.hpp, ...)
//   diagnosis.cpp   verdicts, the wait-for chain of a hang, names of CTAs and entries, histories
//   faults.cpp      every planted fault's hook point (FaultHooks): the bodies call a named hook and
//                   never test a fault themselves
#pragma once
#include <climits>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/exp_once.hpp"
#include "emulator/faults.hpp"
#include "emulator/machine.hpp"

namespace monokda::emu::detail {

// Memory spaces: the seven mailboxes (Mailbox numbering), then the hand-off tensors (HandOff order).
enum Space : int { SP_X = kMailboxCount, SP_PROJ, SP_QKV, SP_G1, SP_COUNT };
static_assert(SP_COUNT - SP_X == int(HandOff::count) && SP_G1 - SP_X == int(HandOff::g1), "a space a hand-off");
inline HandOff handoff(int sp) { return HandOff(sp - SP_X); }

enum How : uint8_t { PLAIN = 0, RELEASE = 1, TAGGED = 2 };

struct Version {
    uint32_t bits = 0, tag = 0;
    int32_t step = -1, writer = -1, instr = -1;  // step -1: never stored (zeroed memory)
    uint32_t clock = 0;                          // the writer's own vector-clock component at the store
    uint8_t how = PLAIN;
};
struct Word {
    Version cur, prev;                // prev is what other CTAs see until cur becomes visible
    int64_t visible_at = INT64_MIN;   // when cur becomes visible to other CTAs
};

// A weight load: in flight until retire_at (timing), outstanding until its task has used it (the
// POLL_BEHIND_LOADS rule, which must not depend on how fast memory happened to be).
struct Load {
    int64_t unit, retire_at;
    int32_t instr;
};

using f8 = float __attribute__((vector_size(32)));  // eight independent row sums (lanes never mix)
using f4 = float __attribute__((vector_size(16)));  // half of one, as the gemv computes it

struct Cta {
    enum State { pending, resident, finished } state = pending;
    size_t pc = 0;
    enum Phase { BEGIN, WAIT, FINISH } phase = BEGIN;
    size_t wpos = 0;          // first wait of the current group
    // the instruction's units of work (ATTN_MIX, ATTN_X: a row; GEMV_GROUP: a slice), each {its row
    // or slice, the range of Plan::needs it reads}; run in order once the waits have acquired all of
    // a unit's needs, the rest at the instruction's end (a plan file's dropped wait: a read unordered)
    struct Unit { int32_t label; size_t begin, end; };
    std::vector<Unit> units;
    size_t unit = 0;
    bool early = false;       // x_before_flag: this group's work ran before its poll
    bool spinning = false;
    int64_t blocked_at = 0, spin_since = 0;
    int64_t stall_until = INT64_MIN;
    int64_t t_begin = 0;
    std::vector<uint32_t> vc;
    int64_t max_vis = INT64_MIN;
    std::vector<Load> loads;
    std::vector<std::vector<char>> acquired;  // per mailbox, per entry, this step
    // role scratch
    std::vector<float> pslice, mixed;  // attn: own P' and mixed columns of the slice, [S][w]
    std::vector<f8> acc;               // gemv: [group rows][row blocks of 8]
    std::vector<char> x_checked;       // gemv: x slices whose reads passed the checks in this step
    int a_eff = 1;                     // kda: num_accepted the task uses
    std::vector<float> obar;           // kda: o of the task's rows as bf16 values, [L][rows]
};

// Thrown by fail() once the verdict is recorded: ends the run.
struct Stop {};

class Machine {
public:
    Machine(const Plan& p, const MachineOptions& o, MachineResult& r);  // machine.cpp
    void run_step(const StepInputs& in, const StepRows& rows, int k, uint32_t launcher_epoch, uint32_t first_epoch);

private:
    // ---- machine.cpp: admission, the step of one CTA, outputs
    void admit();
    void finish_list(int id, bool refill);
    void step(int cta);
    void stall(int cta, int64_t until);
    void finish_instr(int cta);
    void begin_units(int cta);
    void run_units(int cta, const Instr& in, bool all);  // the ready units (all: every one left)
    void init_outputs();
    void mark(const char* name, size_t i, int cta);
    void collect_outputs();

    // ---- memory.cpp: the memory model
    Word& word(int sp, size_t i) { return mem_[sp][i]; }
    // What `cta` sees of a word: its own latest store, else the latest store that has become visible.
    const Version& seen(int cta, const Word& w) const {
        return (w.cur.writer == cta || w.visible_at <= now_) ? w.cur : w.prev;
    }
    void store(int cta, int sp, size_t i, uint32_t bits, uint32_t tag, How how);
    void store_entry(int cta, MailboxRef e, const float* vals, uint32_t tag);
    void store_flag(int cta, MailboxRef e, bool release);
    void store_data(int cta, int sp, int row, int col, bf16 v) {
        store(cta, sp, size_t(row) * size_t(width(sp)) + size_t(col), v.bits, 0, PLAIN);
    }
    void log_data(int cta, int sp, int col0, int ncols);
    int width(int sp) const { return plan_.handoff_cols(handoff(sp)); }
    // A checked read of a hand-off element: it must follow this step's store of it through a
    // release/acquire chain (else VISIBILITY_FAULT), and a guard that was acquired must have
    // delivered this step's value (else STALE_READ; both named by unordered_read, which returns the
    // value seen when the detector of the case is off).
    bf16 read_data(int cta, int sp, int row, int col) {
        const size_t i = size_t(row) * size_t(width(sp)) + size_t(col);
        const Word& w = word(sp, i);
        if (w.cur.step == step_ && (w.cur.writer == cta || ctas_[size_t(cta)].vc[size_t(w.cur.writer)] >= w.cur.clock)) {
            if (&seen(cta, w) != &w.cur) throw std::logic_error("emulator: an ordered read did not see its store");
            return bf16::from_bits(uint16_t(w.cur.bits));
        }
        return unordered_read(cta, sp, row, col);
    }
    bf16 unordered_read(int cta, int sp, int row, int col);
    bool entry_ready(int cta, MailboxRef e) const;
    void acquire(int cta, MailboxRef e);
    float read_tagged(int cta, MailboxRef e, int k);
    float combine(int cta, const std::string& what, const std::vector<MailboxRef>& used,
                  const std::vector<MailboxRef>& plan_split, int word_k);
    // the guard of a hand-off element (false: private to its task)
    bool guard(int sp, int row, int col, MailboxRef& g) const { return plan_.guard_of(handoff(sp), row, col, g); }
    MailboxRef entry_of(int sp, size_t i) const;
    // weight loads
    int64_t unit_of(const Instr& in) const;
    void issue_loads(int cta);
    int64_t loads_until(const Cta& c, int64_t unit) const;

    // ---- diagnosis.cpp: verdicts and names
    bool on(Detector d) const { return opt_.detectors.has(d); }
    // records detector d's verdict and stops the run
    [[noreturn]] void fail(Detector d, const std::string& detail, const std::vector<int>& named,
                           MailboxRef entry = {Mailbox::count, 0});
    [[noreturn]] void no_progress(const std::string& why);  // the watchdog's verdict
    [[noreturn]] void hang();
    MailboxRef awaited(int c) const;
    void log(EventKind k, int cta, int instr, MailboxRef e = {Mailbox::count, 0}, uint32_t tag = 0, int64_t aux = 0,
             uint8_t how = 0) {
        res_.history.push_back(Event{now_, cta, instr, k, how, int16_t(step_), e, tag, aux});
    }
    void span(int cta, int instr, int64_t t0, int64_t t1, Span::Kind k) {
        if (opt_.record_spans) res_.spans.push_back(Span{cta, instr, t0, std::max(t1, t0 + 1), k, int16_t(step_)});
    }
    std::string who(int cta, int instr) const;
    std::string who_now(int cta) const { return who(cta, int(ctas_[size_t(cta)].pc)); }
    std::string unit_name(int cta, const Load& l) const;
    std::string data_elem(int sp, size_t i) const;
    std::string producer_name(int sp, size_t i) const;

    // ---- roles/*.cpp: the bodies (SPEC §3's stages A..F), run when an instruction's waits are met
    void begin_instr(int cta, const Instr& in);
    void group_work(int cta, const Instr& in, int grp);   // after one wait group
    void finish_work(int cta, const Instr& in);           // after all the waits
    // attn (roles/attn.cpp)
    void attn_part(int cta, int j, int part);
    void attn_gate(int cta, int row);
    void mix_row(int cta, int j, int row);
    void x_row(int cta, int j, int row);
    void attn_x_flag(int cta, int j, int part);
    // gemv (roles/gemv.cpp)
    void gemv_slice(int cta, int g, int j);
    void gemv_store(int cta, int g);
    // kda (roles/kda.cpp)
    void begin_kda(int cta, const Instr& in);
    void make_g1(int cta, int r, int h, int k0, int nk);
    void kda_conv(int cta, int r, int h, int ch);
    void kda_rec(int cta, int r, int h, int ch);
    void kda_norm(int cta, int r, int h, int ch);

    const Plan& plan_;
    const ReductionOrder ord_ = plan_.reduction_order();
    const Config& cfg_;
    MachineOptions opt_;
    FaultHooks hooks_;
    MachineResult& res_;
    const int B_;
    std::unique_ptr<Scheduler> sched_;
    std::vector<Cta> ctas_;
    std::vector<Word> mem_[SP_COUNT];
    // per flag entry, the vector clock its release carried: of the word's latest store and of the one
    // other CTAs see until that lands (a poll joins the clock of the version it accepted)
    struct FlagClocks { std::vector<uint32_t> cur, prev; };
    std::vector<FlagClocks> flag_vc_[kMailboxCount];
    std::priority_queue<int64_t, std::vector<int64_t>, std::greater<int64_t>> events_;
    int64_t now_ = 0, last_event_ = -1, last_progress_ = 0;
    int P_ = 0;  // places: the launch's CTAs
    int resident_ = 0, next_admit_ = 0, finished_ = 0, places_done_ = 0, step_ = 0, cur_cta_ = -1;
    std::vector<int> open_;  // per place: its lists not finished
    std::vector<f4> xlo_, xhi_;  // gemv_slice's x columns
    uint32_t kernel_epoch_ = 1;
    const StepInputs* in_ = nullptr;
    const std::vector<bf16>*prefix_ = nullptr, *delta_ = nullptr, *blocks_ = nullptr;  // this launch's rows
    std::vector<float> wq_;
    StepOutputs<float> out_;
    std::vector<Provenance> prov_;
};

std::string step_name(int32_t s);  // "stored in step 3", "of zeroed memory (never stored)"

inline float f(bf16 b) { return b.to_float(); }

}  // namespace monokda::emu::detail
