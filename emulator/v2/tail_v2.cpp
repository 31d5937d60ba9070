// Kernel v2's tail in the emulator (emulator/v2/machine_v2_impl.hpp; docs/emulator.md "Kernel v2"):
// the owners' PUBLISH (q, k and v rows through the conv, conv_state written, the 8 rows as tagged
// words, one relaxed store a request landing after a schedule-drawn delay), the tasks' POLL (their
// words polled until they carry the step's tag; their share st.async to every task of the pair),
// DECAY (g1 and the decay of its share's keys from what the shares brought, the decays st.async to
// every task of the pair; the l2 norms), REC (the recurrence on the task's 16 state rows: o,
// ssm_state; its Σō² to the pair) and NORM (core_out from the pair's Σō² and its g words), each on
// core/tail_stages.hpp in the plan's order; and the detectors where a hand-off is consumed:
// words_fresh (every word read was polled until it carried this step's tag) and tail_landed (every
// share, decay and Σō² read was counted by the phase waited for, and is ordered before the read).
// Words cross clusters with no ordering: a poll joins no clock.
#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/tail_stages.hpp"
#include "emulator/v2/machine_v2_impl.hpp"

namespace monokda::emu::v2detail {

namespace {
std::string n(long v) { return std::to_string(v); }
constexpr uint8_t kTag = 1;              // this step's tag; the words hold the step before's, 0, at the launch
constexpr uint16_t kStaleBits = 0x7fc1;  // a word's value from the step before: a NaN, so that a stale read shows downstream
// a task's record of the sends into one of its pair's barriers (TaskState::in, clock)
int which(V2Bar b) { return b == V2Bar::share ? 0 : b == V2Bar::onrm ? 1 : 2; }
V2Bar bar_of(Landing::Kind k) { return k == Landing::tail_share ? V2Bar::share : k == Landing::tail_onrm ? V2Bar::onrm : V2Bar::decay; }
}  // namespace

void Machine::tail_init() {
    if (!plan_.has_tail()) return;
    const Config& c = plan_.config();
    if (!step_) bad_input("emulate --kernel v2: the plan has the tail, whose conv, gate, recurrence and norm need the step's inputs");
    const Config& sc = step_->cfg;
    if (sc.S() != S_ || sc.N != c.N || sc.H != c.H || sc.K != c.K || sc.V != c.V || sc.F != c.F || sc.W != c.W || sc.R != c.R)
        bad_input("emulate --kernel v2: the step's inputs are not of the plan's shape");
    const int L = c.L, K = c.K, F = c.F, T = plan_.tail_tiles();
    for (const V2Task& t : plan_.tasks)  // what the tasks index (the check tail_tasks says more)
        if (t.tile < 0 || t.tile >= T || t.qk0 < 0 || t.qkn < 0 || t.qk0 + t.qkn > K || t.fa0 < 0 || t.fan < 0 || t.fa0 + t.fan > F ||
            t.onrm < 0 || t.onrm > c.R * c.H)
            bad_input("emulate --kernel v2: task (request " + n(t.request) + ", head " + n(t.head) + ", tile " + n(t.tile) +
                      ") names state rows, a share or a barrier outside the plan (the check tail_tasks names it)");
    tail_ord_ = plan_.reduction_order();
    zero_vc_.assign(size_t(L_), 0);
    word_bits_.assign(size_t(S_) * size_t(c.N), kStaleBits);
    word_tag_.assign(word_bits_.size(), 0);
    MBar w;
    w.made = true, w.count = w.pending = 1;
    w.acc = zero_vc_, w.done = zero_vc_;
    words_.assign(plan_.recvs.size() * size_t(c.R), w);
    tasks_.resize(plan_.tasks.size());
    for (TaskState& t : tasks_) {
        t.q.assign(size_t(L) * size_t(K), bf16{}), t.k = t.q;
        t.v.assign(size_t(L) * kV2TileRows, bf16{}), t.g = t.v, t.o = t.v;
        t.fa.assign(size_t(L) * size_t(F), 0.f), t.beta.assign(size_t(L), 0.f), t.onrm.assign(size_t(T) * size_t(L), 0.f);
        t.decay.assign(size_t(L) * size_t(K), 0.f), t.qn = t.decay, t.kn = t.decay;
        for (int b = 0; b < 3; ++b) t.in[b].assign(size_t(T), -1), t.clock[b].assign(size_t(T), 0);
        t.polled.assign(plan_.recvs.size(), 0);
    }
    MBar blank;
    blank.acc = zero_vc_, blank.done = zero_vc_;
    for (const V2Task& t : plan_.tasks) {
        CtaState& cs = ctas_[size_t(plan_.cta(t.cluster, t.rank))];
        if (int(cs.share.size()) <= t.onrm)
            for (auto* b : {&cs.share, &cs.onrm, &cs.decay}) b->resize(size_t(t.onrm) + 1, blank);
    }
    res_.tail.qkv.assign(size_t(S_) * size_t(c.C), bf16{});
    res_.tail.conv_state = step_->conv_state;
    res_.tail.g1.assign(size_t(S_) * size_t(c.E()), bf16{});
    res_.tail.o = res_.tail.g1, res_.tail.core_out = res_.tail.g1;
    res_.tail.ssm_state = step_->ssm_state;
    res_.task_of.assign(res_.tail.o.size(), -1);
}

int Machine::pair_bytes(int task, V2Bar kind) const {
    int b = 0;
    for (int j : plan_.tail_pair(task)) {
        const V2Task& t = plan_.tasks[size_t(j)];
        b += kind == V2Bar::share ? plan_.tail_share_bytes(t) : kind == V2Bar::onrm ? plan_.tail_onrm_bytes() : plan_.tail_decay_bytes(t);
    }
    return b;
}

// INIT: each pair's share, onrm and decay barriers of the CTA, one arrival and armed for the pair's sends.
void Machine::tail_arm(int p) {
    const int k = PlanV2::proc_cta(p);
    CtaState& cs = ctas_[size_t(k)];
    for (auto* v : {&cs.share, &cs.onrm, &cs.decay})
        for (MBar& b : *v) make(b, 1, p);
    std::vector<char> armed(cs.share.size(), 0);
    for (size_t i = 0; i < plan_.tasks.size(); ++i) {
        const V2Task& t = plan_.tasks[i];
        if (plan_.cta(t.cluster, t.rank) != k || armed[size_t(t.onrm)]++) continue;
        for (V2Bar kind : {V2Bar::share, V2Bar::onrm, V2Bar::decay}) {
            MBar& b = bar({kind, k, t.onrm}, p);
            expect(b, pair_bytes(int(i), kind));
            arrive(b, 1, procs_[size_t(p)].vc);
        }
    }
}

bool Machine::tail_step(int p, const V2Instr& in) {
    switch (in.opcode()) {
        case V2Op::PUBLISH: publish(p, in); return true;
        case V2Op::POLL: return poll(p, in);
        case V2Op::DECAY: return decay(p, in);
        case V2Op::REC: return rec(p, in);
        default: return norm(p, in);
    }
}

// The owner's 8 rows, as REDUCE stored them in proj: conv channels (q, k, v) through the conv of each
// request (SiLU rounded, #5; the new conv_state entries raw), the rest as they are; a tagged word each,
// one store of a request's tokens.
void Machine::publish(int p, const V2Instr& in) {
    Proc& pr = procs_[size_t(p)];
    const Config& c = plan_.config();
    const V2Recv& rv = plan_.recvs[size_t(in.a)];
    const int L = c.L, N = c.N;
    const uint8_t tag = hooks_.publishes_stale_tag(in.a) ? 0 : kTag;
    tick(p);
    std::vector<bf16> x(static_cast<size_t>(L)), out(static_cast<size_t>(L));
    for (int r = 0; r < c.R; ++r) {
        std::vector<float> words(size_t(kV2OwnerRows) * size_t(L) + 1);  // [row][token] bits, then the tag
        for (int i = 0; i < kV2OwnerRows; ++i) {
            const int row = rv.row0 + i;
            for (int t = 0; t < L; ++t) x[size_t(t)] = res_.proj[size_t(r * L + t) * size_t(N) + size_t(row)];
            if (row < c.C) {
                tail_conv(*step_, r, row, x.data(), out.data(), res_.tail.conv_state);
                for (int t = 0; t < L; ++t) res_.tail.qkv[size_t(r * L + t) * size_t(c.C) + size_t(row)] = out[size_t(t)];
            } else {
                out = x;
            }
            for (int t = 0; t < L; ++t) words[size_t(i) * size_t(L) + size_t(t)] = float(out[size_t(t)].bits);
        }
        words.back() = float(tag);
        schedule({now_ + delay(p, false), 0, Landing::words, in.a, r, pr.vc, std::move(words), p});
    }
}

bool Machine::await_words(int p, const V2Wait& w, int task, int j) {
    if (hooks_.skips_words_wait(task, j)) return true;
    if (!await(p, w)) return false;
    tasks_[size_t(task)].polled[size_t(w.bar.index)] = 1;
    return true;
}

// words_fresh: a task reads only words it polled until they carried this step's tag (a relaxed load
// of a word not polled may return the step before's).
void Machine::words_read(int p, const V2Instr& in, V2Op op) {
    if (!on(Detector::words_fresh)) return;
    const Config& c = plan_.config();
    const V2Task& t = plan_.tasks[size_t(in.a)];
    const TaskState& ts = tasks_[size_t(in.a)];
    for (int e : plan_.tail_entries(t, op)) {
        const V2Recv& rv = plan_.recvs[size_t(e)];
        bool fresh = true;
        for (int i = 0; i < kV2OwnerRows; ++i)
            for (int s = t.request * c.L; s < (t.request + 1) * c.L; ++s) fresh &= word_tag_[size_t(s) * size_t(c.N) + size_t(rv.row0 + i)] == kTag;
        if (ts.polled[size_t(e)] && fresh) continue;
        const int owner = PlanV2::proc(plan_.cta(plan_.units[size_t(rv.unit)].cluster, rv.owner), V2Role::reducer);
        fail(Detector::words_fresh,
             plan_.proc_name(p) + " " + plan_.describe(in) + " reads the words of rows " + n(rv.row0) + ".." + n(rv.row0 + kV2OwnerRows - 1) +
                 " of request " + n(t.request) + ", which " + plan_.proc_name(owner) + " publishes (PUBLISH), " +
                 (ts.polled[size_t(e)] ? "but they carry the step before's tag" : "without polling them until they carry this step's tag") +
                 (fresh ? " (they do now: another schedule reads the step before's)" : " (they still hold the step before's)"),
             {p, owner});
    }
}

// tail_landed: the pair's sends into the barrier a step reads (DECAY: the shares; REC: the decays;
// NORM: the Σō²) landed, were counted by its phase, and are ordered before the read (through that wait).
void Machine::tail_landed(int p, const V2Instr& in, V2Bar kind) {
    if (!on(Detector::tail_landed)) return;
    const TaskState& ts = tasks_[size_t(in.a)];
    const V2Task& me = plan_.tasks[size_t(in.a)];
    const Proc& pr = procs_[size_t(p)];
    const char* what = kind == V2Bar::share ? "the share" : kind == V2Bar::onrm ? "the partial Σō²" : "the decays";
    for (int j : plan_.tail_pair(in.a)) {
        const V2Task& t = plan_.tasks[size_t(j)];
        const int sender = PlanV2::proc(plan_.cta(t.cluster, t.rank), V2Role::seam);
        const int phase = ts.in[which(kind)][size_t(t.tile)];
        const uint32_t clock = ts.clock[which(kind)][size_t(t.tile)];
        if (phase == 0 && pr.vc[size_t(local(sender))] >= clock) continue;
        fail(Detector::tail_landed,
             plan_.proc_name(p) + " " + plan_.describe(in) + " reads " + what + " of tile " + n(t.tile) + " from " + plan_.proc_name(sender) +
                 ", which " +
                 (phase < 0 ? std::string("has not landed")
                            : phase > 0 ? std::string("landed after the phase it waited for completed")
                                        : "landed, but nothing orders it before this read (no wait on " +
                                              plan_.bar_name({kind, plan_.cta(me.cluster, me.rank), me.onrm}) + ")"),
             {p, sender});
    }
}

void Machine::tail_sends(int p, int task, Landing::Kind kind, const std::vector<float>& data) {
    Proc& pr = procs_[size_t(p)];
    for (int j : plan_.tail_pair(task)) {
        const V2Task& t = plan_.tasks[size_t(j)];
        const int k = plan_.cta(t.cluster, t.rank);
        const V2BarRef b{bar_of(kind), k, t.onrm};
        check_made(bar(b, p), p, "completes bytes of " + plan_.bar_name(b));
        tick(p);
        schedule({now_ + delay(p, false), 0, kind, j, task, pr.vc, data, p});
    }
}

void Machine::land_tail(const Landing& l) {
    const Config& c = plan_.config();
    const int L = c.L;
    if (l.kind == Landing::words) {
        const V2Recv& rv = plan_.recvs[size_t(l.a)];
        const uint8_t tag = uint8_t(l.data.back());
        for (int i = 0; i < kV2OwnerRows; ++i)
            for (int t = 0; t < L; ++t) {
                const size_t at = size_t(l.b * L + t) * size_t(c.N) + size_t(rv.row0 + i);
                word_bits_[at] = uint16_t(l.data[size_t(i) * size_t(L) + size_t(t)]);
                word_tag_[at] = tag;
            }
        if (tag == kTag) arrive(words_[size_t(l.a) * size_t(c.R) + size_t(l.b)], 1, zero_vc_);
        return;
    }
    const V2Task& to = plan_.tasks[size_t(l.a)];
    const V2Task& from = plan_.tasks[size_t(l.b)];
    TaskState& ts = tasks_[size_t(l.a)];
    const V2Bar kind = bar_of(l.kind);
    MBar& b = bar({kind, plan_.cta(to.cluster, to.rank), to.onrm}, -1);
    ts.in[which(kind)][size_t(from.tile)] = int(b.completed);
    ts.clock[which(kind)][size_t(from.tile)] = l.vc[size_t(local(l.proc))];
    if (kind == V2Bar::onrm) {
        for (int t = 0; t < L; ++t) ts.onrm[size_t(from.tile) * size_t(L) + size_t(t)] = l.data[size_t(t)];
    } else if (kind == V2Bar::decay) {  // [token][the sender's keys]
        for (int t = 0; t < L; ++t)
            for (int r = 0; r < from.qkn; ++r) ts.decay[size_t(t) * size_t(c.K) + size_t(from.qk0 + r)] = l.data[size_t(t) * size_t(from.qkn) + size_t(r)];
    } else {  // [token][q rows, k rows, f_a rows] of the sender's share
        size_t i = 0;
        for (int t = 0; t < L; ++t) {
            for (int r = 0; r < from.qkn; ++r) ts.q[size_t(t) * size_t(c.K) + size_t(from.qk0 + r)] = bf16::from_bits(uint16_t(l.data[i++]));
            for (int r = 0; r < from.qkn; ++r) ts.k[size_t(t) * size_t(c.K) + size_t(from.qk0 + r)] = bf16::from_bits(uint16_t(l.data[i++]));
            for (int r = 0; r < from.fan; ++r) ts.fa[size_t(t) * size_t(c.F) + size_t(from.fa0 + r)] = bf16::from_bits(uint16_t(l.data[i++])).to_float();
        }
    }
    complete_tx(b, kind == V2Bar::share ? plan_.tail_share_bytes(from) : kind == V2Bar::onrm ? plan_.tail_onrm_bytes() : plan_.tail_decay_bytes(from),
                l.vc);
}

// POLL: the words of the task's share, beta and its v rows; the share to the pair (itself included).
bool Machine::poll(int p, const V2Instr& in) {
    Proc& pr = procs_[size_t(p)];
    const auto& w = waits_[size_t(p)][pr.pc];
    for (; pr.sub < int(w.size()); ++pr.sub)
        if (!await_words(p, w[size_t(pr.sub)], in.a, pr.sub)) return false;
    words_read(p, in, V2Op::POLL);
    const Config& c = plan_.config();
    const V2Task& t = plan_.tasks[size_t(in.a)];
    TaskState& ts = tasks_[size_t(in.a)];
    const int L = c.L, E = c.E(), h = t.head, v0 = t.tile * kV2TileRows;
    auto word = [&](int s, int row) { return word_bits_[size_t(s) * size_t(c.N) + size_t(row)]; };
    std::vector<float> share;
    for (int tok = 0; tok < L; ++tok) {
        const int s = t.request * L + tok;
        for (int r = 0; r < t.qkn; ++r) share.push_back(float(word(s, h * c.K + t.qk0 + r)));
        for (int r = 0; r < t.qkn; ++r) share.push_back(float(word(s, E + h * c.K + t.qk0 + r)));
        for (int r = 0; r < t.fan; ++r) share.push_back(float(word(s, c.col_fa() + t.fa0 + r)));
        ts.beta[size_t(tok)] = sigmoid_once(bf16::from_bits(word(s, c.col_beta() + h)).to_float());
        for (int r = 0; r < kV2TileRows; ++r) ts.v[size_t(tok) * kV2TileRows + size_t(r)] = bf16::from_bits(word(s, 2 * E + h * c.V + v0 + r));
    }
    tick(p);
    tail_sends(p, in.a, Landing::tail_share, share);
    return true;
}

// DECAY: g1 of the keys of the task's share (stored) and their decay, from the pair's f_a; the decays
// to the pair (itself included); q̂ and k̂ of each token, for REC.
bool Machine::decay(int p, const V2Instr& in) {
    Proc& pr = procs_[size_t(p)];
    if (!await(p, waits_[size_t(p)][pr.pc][0])) return false;
    tail_landed(p, in, V2Bar::share);
    const StepInputs& x = *step_;
    const Config& c = plan_.config();
    const V2Task& t = plan_.tasks[size_t(in.a)];
    TaskState& ts = tasks_[size_t(in.a)];
    const int L = c.L, K = c.K, F = c.F, E = c.E(), h = t.head;
    const float A = exp_once(x.A_log[size_t(h)]), lb = float(c.lower_bound);
    std::vector<float> mine;  // [token][the share's keys]
    for (int tok = 0; tok < L; ++tok) {
        const size_t s = size_t(t.request * L + tok);
        for (int k = t.qk0; k < t.qk0 + t.qkn; ++k) {
            const int e = h * K + k;
            const bf16 g1 = tail_g1(tail_ord_, &ts.fa[size_t(tok) * size_t(F)], &x.f_b_w[size_t(e) * size_t(F)], F);
            res_.tail.g1[s * size_t(E) + size_t(e)] = g1;
            mine.push_back(tail_decay(A, g1, x.dt_bias[size_t(e)], lb));
        }
        const size_t at = size_t(tok) * size_t(K);
        tail_l2(tail_ord_, &ts.q[at], &ts.k[at], K, float(c.l2_eps), &ts.qn[at], &ts.kn[at]);
    }
    tick(p);
    tail_sends(p, in.a, Landing::tail_decay, mine);
    return true;
}

// REC: the recurrence on its state rows (from the slot of the last accepted token; none: o is +0 and
// no state is written) with the pair's decays, o, a state a token where the token has a slot; Σō² of
// its rows to the pair.
bool Machine::rec(int p, const V2Instr& in) {
    Proc& pr = procs_[size_t(p)];
    if (!hooks_.skips_decay_wait(in.a) && !await(p, waits_[size_t(p)][pr.pc][0])) return false;
    tail_landed(p, in, V2Bar::decay);
    const StepInputs& x = *step_;
    const Config& c = plan_.config();
    const V2Task& t = plan_.tasks[size_t(in.a)];
    TaskState& ts = tasks_[size_t(in.a)];
    const int L = c.L, K = c.K, E = c.E(), h = t.head, v0 = t.tile * kV2TileRows, r = t.request;
    std::fill(ts.o.begin(), ts.o.end(), bf16{});  // +0: a request without an initial state
    const int32_t init = x.idx(r, x.num_accepted[size_t(r)] - 1);
    if (init > 0) {
        std::vector<float> St(size_t(kV2TileRows) * size_t(K));
        for (int v = 0; v < kV2TileRows; ++v)
            for (int k = 0; k < K; ++k) St[size_t(v) * size_t(K) + size_t(k)] = x.ssm_state[size_t(x.ssm_at(init, h, v0 + v, k))];
        for (int tok = 0; tok < L; ++tok) {
            const size_t at = size_t(tok) * size_t(K);
            tail_rec_token(tail_ord_, St.data(), kV2TileRows, K, &ts.decay[at], &ts.kn[at], &ts.qn[at],
                           &ts.v[size_t(tok) * kV2TileRows], ts.beta[size_t(tok)], &ts.o[size_t(tok) * kV2TileRows]);
            if (const int32_t slot = x.idx(r, tok); slot > 0)
                for (int v = 0; v < kV2TileRows; ++v)
                    std::copy_n(&St[size_t(v) * size_t(K)], K, res_.tail.ssm_state.begin() + x.ssm_at(slot, h, v0 + v, 0));
        }
    }
    std::vector<float> sq(static_cast<size_t>(L));
    for (int tok = 0; tok < L; ++tok) {
        const size_t s = size_t(r * L + tok);
        sq[size_t(tok)] = tail_sumsq(&ts.o[size_t(tok) * kV2TileRows], kV2TileRows);
        for (int v = 0; v < kV2TileRows; ++v) {
            res_.tail.o[s * size_t(E) + size_t(h * c.V + v0 + v)] = ts.o[size_t(tok) * kV2TileRows + size_t(v)];
            res_.task_of[s * size_t(E) + size_t(h * c.V + v0 + v)] = in.a;
        }
    }
    tick(p);
    tail_sends(p, in.a, Landing::tail_onrm, sq);
    return true;
}

// NORM: its g rows' words and the pair's Σō² (the tiles' partials in tile order); core_out (#7).
bool Machine::norm(int p, const V2Instr& in) {
    Proc& pr = procs_[size_t(p)];
    const auto& w = waits_[size_t(p)][pr.pc];
    const auto& prog = plan_.programs[size_t(p)];
    const bool last = std::none_of(prog.begin() + long(pr.pc) + 1, prog.end(), [](const V2Instr& i) { return i.opcode() == V2Op::NORM; });
    for (; pr.sub < int(w.size()); ++pr.sub) {
        const V2Wait& x = w[size_t(pr.sub)];
        if (x.bar.kind == V2Bar::words ? !await_words(p, x, in.a, pr.sub)
                                       : !hooks_.skips_onrm_wait(PlanV2::proc_cta(p), last) && !await(p, x))
            return false;
    }
    words_read(p, in, V2Op::NORM);
    tail_landed(p, in, V2Bar::onrm);
    const Config& c = plan_.config();
    const V2Task& t = plan_.tasks[size_t(in.a)];
    const TaskState& ts = tasks_[size_t(in.a)];
    const int L = c.L, E = c.E(), T = plan_.tail_tiles(), v0 = t.tile * kV2TileRows, col = t.head * c.V + v0;
    for (int tok = 0; tok < L; ++tok) {
        const size_t s = size_t(t.request * L + tok);
        float ms = ts.onrm[size_t(tok)];
        for (int tile = 1; tile < T; ++tile) ms = ms + ts.onrm[size_t(tile) * size_t(L) + size_t(tok)];
        const float rr = tail_rr(ms, c.V, float(c.eps));
        for (int v = 0; v < kV2TileRows; ++v) {
            const bf16 g = bf16::from_bits(word_bits_[s * size_t(c.N) + size_t(c.col_g2() + col + v)]);
            res_.tail.core_out[s * size_t(E) + size_t(col + v)] =
                tail_out(ts.o[size_t(tok) * kV2TileRows + size_t(v)], rr, step_->o_norm_w[size_t(v0 + v)], g);
        }
    }
    tick(p);
    return true;
}

}  // namespace monokda::emu::v2detail
