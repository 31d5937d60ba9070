// Kernel v2's machine loop (emulator/v2/machine_v2.hpp): the mbarrier model (arrivals, byte counts,
// phases, the clocks a completed phase hands its waiters), landings of bulk copies, st.async partials
// and peer arrives after the schedule's delays, the scheduler's choice among the runnable processes,
// and what a run that stops reports (a hang's blocked processes, the last events).
#include <algorithm>

#include "core/error.hpp"
#include "emulator/v2/machine_v2_impl.hpp"

namespace monokda::emu {
namespace v2detail {

Machine::Machine(const PlanV2& p, const std::vector<bf16>& x, const std::vector<uint16_t>& packed, const V2MachineOptions& o,
                 const SeamInputs& seam, const StepInputs* step, V2MachineResult& r)
    : plan_(p), opt_(o), res_(r), hooks_{o.fault}, S_(p.config().S()), R_(p.params().ranks), L_(R_ * kV2ProcsPerCta),
      packed_(packed), seam_in_(seam), step_(step) {
    const Config& c = p.config();
    if (x.size() != size_t(S_) * size_t(c.D)) bad_input("emulate --kernel v2: x is not S x D");
    const size_t SD = size_t(S_) * size_t(c.D);
    if (p.has_seam() && (seam.prefix.size() != SD || seam.delta.size() != SD || seam.blocks.size() != 8 * SD ||
                         seam.res_norm_w.size() != size_t(c.D) || seam.res_proj_w.size() != size_t(c.D) ||
                         seam.input_norm_w.size() != size_t(c.D)))
        bad_input("emulate --kernel v2: the plan computes x in its seam, whose inputs (P, delta, the bank rows, the gains) "
                  "are not the step's shapes");
    if (packed.size() * 2 != size_t(p.run_offset.back())) bad_input("emulate --kernel v2: the packed weight is not the plan's");
    x_.resize(x.size());
    for (size_t i = 0; i < x.size(); ++i) x_[i] = x[i].to_float();
    const Schedule& s = o.schedule;
    if (s.kind == Schedule::delay && s.delay_role)
        bad_input("--kernel v2 delays one CTA (delay:cta:N); " + s.str() + " names a role of kernel v1");
    if (s.kind == Schedule::delay && (s.cta < 0 || s.cta >= p.ctas()))
        bad_input("--schedule " + s.str() + " names no CTA of the v2 plan (0.." + std::to_string(p.ctas() - 1) + ")");
    delay_cta_ = s.kind == Schedule::delay;
    Schedule inner = s;
    if (delay_cta_) inner.kind = Schedule::random;  // the delayed CTA is filtered here
    int64_t est = 0;
    for (const auto& prog : p.programs) est += int64_t(prog.size());
    sched_ = make_scheduler(inner, p.processes(), 2 * est);

    procs_.resize(size_t(p.processes()));
    waits_.resize(procs_.size());
    for (int q = 0; q < p.processes(); ++q) {
        Proc& pr = procs_[size_t(q)];
        pr.self = local(q);
        pr.vc.assign(size_t(L_), 0);
        if (PlanV2::proc_role(q) == V2Role::consumer) pr.acc.assign(size_t(kV2TileRows) * size_t(S_), 0.f);
        for (int i = 0; i < int(p.programs[size_t(q)].size()); ++i) waits_[size_t(q)].push_back(p.waits(q, i));
    }
    ctas_.resize(size_t(p.ctas()));
    for (int k = 0; k < p.ctas(); ++k) {
        CtaState& cs = ctas_[size_t(k)];
        const V2Ring& ring = p.rings[size_t(k)];
        const int d = std::max(1, ring.depth), slots = p.params().recv_slots;
        MBar blank;
        blank.acc.assign(size_t(L_), 0);
        blank.done = blank.acc;
        cs.full.assign(size_t(d), blank), cs.empty.assign(size_t(d), blank);
        cs.recv.assign(size_t(slots), blank), cs.free.assign(size_t(slots), blank);
        cs.pair.assign(size_t(kV2UnitTiles), blank);
        for (MBar& b : cs.pair) b.made = true, b.count = b.pending = 2;  // bar.sync of the tile's 64 threads
        // a slot holds what its chunks' products read, where a file's chunk is larger than its slot
        // (the check chunks_match_units names it)
        int64_t slot_bytes = std::max(0, ring.slot_bytes);
        for (const V2Chunk& ch : p.chunks[size_t(k)])
            slot_bytes = std::max<int64_t>(slot_bytes, int64_t(ch.ksteps) * p.units[size_t(ch.unit)].tiles * kV2TileBytes);
        cs.ring.resize(size_t(d));
        for (RingSlot& rs : cs.ring) {
            rs.bytes.assign(size_t(slot_bytes) / 2, 0);
            rs.freed.assign(size_t(kV2Consumers), -1);
            rs.free_clock.assign(size_t(kV2Consumers), 0);
        }
        cs.regions.assign(size_t(slots), std::vector<Region>(size_t(R_)));
        for (auto& slot : cs.regions)
            for (Region& g : slot) g.data.assign(size_t(kV2OwnerRows) * size_t(S_), 0.f);
        cs.red.assign(size_t(kV2UnitTiles), std::vector<float>(size_t(kV2TileRows) * size_t(S_), 0.f));
        cs.seam.assign(size_t(V2SeamBar::count), blank);
        if (p.has_seam()) {
            // the part hand-offs into the CTA are of the rows the owner table gives its rank, where a file's
            // seam entry says otherwise (the check seam_owners names it)
            size_t own = size_t(std::max(0, p.seam_ctas[size_t(k)].rows_owned)), given = 0;
            for (int32_t o : p.seam_owner) given += o == p.rank_of(k);
            own = std::max(own, given);
            const size_t src = size_t(c.nb) + 1, cols = size_t(p.slice_cols()), rs = size_t(p.seam_rank_slices()),
                         sl = size_t(p.seam_slices()), rows = size_t(S_);
            cs.rows = SeamRows(S_, c.nb, int(cols));
            cs.my_part.assign(rows * src * rs * 2, 0.f), cs.my_wgt.assign(rows * (src + 1), 0.f), cs.my_msq.assign(rows * rs, 0.f);
            cs.part.assign(own * src * sl * 2, 0.f), cs.wgt.assign(rows * (src + 1), 0.f), cs.msq.assign(rows * sl, 0.f);
            cs.mixed.assign(rows * cols, 0.f), cs.x.assign(rows * cols, 0.f);
        }
    }
    for (int s = 0; s < int(p.seam_owner.size()); ++s) seam_slot_.push_back(p.seam_slot(s));
    send_phase_.assign(p.seam_sends.size(), -1);
    sends_into_.assign(size_t(p.ctas()), std::vector<std::vector<int>>(size_t(V2SeamBar::count)));
    for (size_t e = 0; e < p.seam_sends.size(); ++e) {
        const V2SeamSend& x = p.seam_sends[e];
        if (x.to >= 0 && x.to < p.ctas() && x.bar >= 0 && x.bar < int32_t(V2SeamBar::count)) sends_into_[size_t(x.to)][size_t(x.bar)].push_back(int(e));
    }
    for (const V2Barrier& b : p.barriers) {
        MBar m;
        m.made = true;
        m.acc.assign(size_t(L_), 0);
        m.done = m.acc;
        m.count = m.pending = b.scope ? kV2ProcsPerCta : L_;
        cbar_.push_back(std::vector<MBar>(size_t(b.scope ? R_ : 1), m));
    }
    res_.proj.assign(size_t(S_) * size_t(c.N), bf16{});
    res_.writer.assign(res_.proj.size(), -1);
    tail_init();
}

MBar& Machine::wait_bar(const V2Wait& w, int p) {
    // a words wait's model: one arrival once the words of the request's tokens carry the step's tag
    if (w.bar.kind == V2Bar::words) return words_[size_t(w.bar.index) * size_t(plan_.config().R) + size_t(w.round)];
    return bar(w.bar, p);
}

MBar& Machine::bar(const V2BarRef& b, int p) {
    if (b.kind == V2Bar::cluster) {
        auto& inst = cbar_[size_t(b.index)];
        return inst.size() == 1 ? inst[0] : inst[size_t(plan_.rank_of(PlanV2::proc_cta(p)))];
    }
    CtaState& cs = ctas_[size_t(b.cta)];
    switch (b.kind) {
        case V2Bar::full: return cs.full[size_t(b.index)];
        case V2Bar::empty: return cs.empty[size_t(b.index)];
        case V2Bar::recv: return cs.recv[size_t(b.index)];
        case V2Bar::free: return cs.free[size_t(b.index)];
        case V2Bar::seam: return cs.seam[size_t(b.index)];
        case V2Bar::share: return cs.share[size_t(b.index)];
        case V2Bar::onrm: return cs.onrm[size_t(b.index)];
        case V2Bar::decay: return cs.decay[size_t(b.index)];
        default: return cs.pair[size_t(b.index)];
    }
}

void Machine::make(MBar& b, int count, int p) {
    b.made = true;
    b.count = b.pending = count;
    b.tx = 0;
    b.completed = 0;
    std::fill(b.acc.begin(), b.acc.end(), 0u);
    std::fill(b.done.begin(), b.done.end(), 0u);
    b.init_proc = local(p);
    b.init_clock = procs_[size_t(p)].vc[size_t(local(p))];
    ++b.version;
}

// A phase completes when its arrivals are in and its byte count is back at zero; its waiters get the
// join of every arrival's clock in it.
static void complete_if(MBar& b) {
    if (b.pending != 0 || b.tx != 0) return;
    ++b.completed;
    b.done = b.acc;
    std::fill(b.acc.begin(), b.acc.end(), 0u);
    b.pending = b.count;
}

static void join(std::vector<uint32_t>& into, const std::vector<uint32_t>& from) {
    for (size_t i = 0; i < into.size(); ++i) into[i] = std::max(into[i], from[i]);
}

void Machine::arrive(MBar& b, int count, const std::vector<uint32_t>& vc) {
    if (!b.made) { ++b.lost; return; }
    b.pending -= count;
    join(b.acc, vc);
    complete_if(b);
    ++b.version;
}

void Machine::expect(MBar& b, int64_t bytes) {
    if (!b.made) { ++b.lost; return; }
    b.tx += bytes;
    ++b.version;
}

void Machine::complete_tx(MBar& b, int64_t bytes, const std::vector<uint32_t>& vc) {
    if (!b.made) { ++b.lost; return; }
    b.tx -= bytes;
    join(b.acc, vc);
    complete_if(b);
    ++b.version;
}

// barrier_init: whoever touches a barrier must be ordered after its making (its own CTA through the
// entry barrier or program order, a peer through the cluster barrier).
void Machine::check_made(const MBar& b, int p, const std::string& what) {
    if (!on(Detector::barrier_init)) return;
    const Proc& pr = procs_[size_t(p)];
    if (b.made && b.init_proc >= 0 && pr.vc[size_t(b.init_proc)] >= b.init_clock) return;
    const int maker = first_proc(plan_.cluster_of(PlanV2::proc_cta(p))) + std::max(0, b.init_proc);
    std::string s = plan_.proc_name(p) + " " + plan_.describe(plan_.programs[size_t(p)][pr.pc]) + " " + what + ", which " +
                    (b.made ? "was made by " + plan_.proc_name(maker) + " (INIT), but nothing orders that before this use"
                            : "no INIT has made yet");
    s += ": a cluster barrier between a barrier's initialisation and its first use by a peer is missing";
    std::vector<int> named{p};
    if (b.made) named.push_back(maker);
    fail(Detector::barrier_init, s, named);
}

// Waits for the phase `round` of w's barrier (parity semantics, as try_wait.parity); false: blocked.
// A words wait passes once its words carry the step's tag (they are polled: no phase, no clock).
bool Machine::await(int p, const V2Wait& w) {
    MBar& b = wait_bar(w, p);
    Proc& pr = procs_[size_t(p)];
    const bool words = w.bar.kind == V2Bar::words;
    if (w.bar.kind != V2Bar::cluster && w.bar.kind != V2Bar::pair && !words) check_made(b, p, "waits on " + plan_.bar_name(w.bar));
    if (b.made && (words ? b.completed >= 1 : (b.completed & 1u) != (uint32_t(w.round) & 1u))) {
        join(pr.vc, b.done);
        pr.blocked = false;
        last_progress_ = res_.sched_steps;
        return true;
    }
    if (!pr.blocked) log(p, 'w');
    pr.blocked = true;
    pr.on = &b;
    pr.on_version = b.version;
    return false;
}

int64_t Machine::delay(int p, bool load) {
    const bool slow = delay_cta_ && PlanV2::proc_cta(p) == opt_.schedule.cta;
    const int64_t d = load ? sched_->load_latency(p, Role::gemv) : sched_->store_delay(p, Role::gemv);
    return slow ? (load ? 4 : 8) * int64_t(plan_.processes()) : d;
}

void Machine::schedule(Landing l) {
    l.seq = seq_++;
    landings_.push(std::move(l));
}

void Machine::land(const Landing& l) {
    if (l.kind == Landing::copy) {
        const V2Chunk& ch = plan_.chunks[size_t(l.a)][size_t(l.b)];
        RingSlot& rs = ctas_[size_t(l.a)].ring[size_t(ch.slot)];
        const size_t from = (size_t(plan_.run_offset[size_t(l.a)]) + size_t(ch.offset)) / 2;
        std::copy_n(packed_.begin() + long(from), std::min(size_t(ch.bytes) / 2, rs.bytes.size()), rs.bytes.begin());
        rs.chunk = l.b;
        complete_tx(ctas_[size_t(l.a)].full[size_t(ch.slot)], ch.bytes, l.vc);
    } else if (l.kind == Landing::partial) {
        const V2Partial& pa = plan_.partials[size_t(l.a)];
        const V2Recv& rv = plan_.recvs[size_t(l.a) / size_t(R_)];
        const int owner = plan_.cta(plan_.units[size_t(pa.unit)].cluster, pa.owner);
        Region& g = ctas_[size_t(owner)].regions[size_t(rv.slot)][size_t(pa.sender)];
        g.data = l.data;
        g.landed = pa.unit;
        g.landed_clock = l.vc[size_t(local(l.proc))];
        complete_tx(ctas_[size_t(owner)].recv[size_t(rv.slot)], pa.bytes, l.vc);
    } else if (l.kind == Landing::seam_in || l.kind == Landing::seam_send) {
        land_seam(l);
    } else if (l.kind == Landing::words || l.kind == Landing::tail_share || l.kind == Landing::tail_onrm ||
               l.kind == Landing::tail_decay) {
        land_tail(l);
    } else {
        const V2Free& f = plan_.frees[size_t(l.a)];
        const int k = plan_.cta(plan_.units[size_t(f.unit)].cluster, l.b);
        arrive(ctas_[size_t(k)].free[size_t(f.slot)], f.count, l.vc);
    }
}

void Machine::fail(Detector d, const std::string& detail, const std::vector<int>& named) {
    res_.verdict = info(d).verdict;
    res_.detector = d;
    res_.detail = detail;
    res_.named = named;
    res_.history = history();
    res_.ticks = now_;
    throw Stop{};
}

// No process can step and nothing is in flight: the blocked ones, each with the barrier it waits on,
// the seam's first (a hand-off that never came holds the CTA's in_proj behind it), then those held
// elsewhere than at the exit barrier (they are why the rest wait there).
void Machine::hang() {
    std::string s = "no process can step and nothing is in flight; blocked:";
    std::vector<int> named, order;
    for (int pass = 0; pass < 3; ++pass)
        for (int q = 0; q < plan_.processes(); ++q) {
            const Proc& pr = procs_[size_t(q)];
            if (pr.done) continue;
            const V2Instr& in = plan_.programs[size_t(q)][pr.pc];
            const bool at_exit = in.opcode() == V2Op::SYNC && plan_.barriers[size_t(in.a)].point == int32_t(V2Point::exit);
            const bool seam = PlanV2::proc_role(q) == V2Role::seam && !at_exit;
            if ((seam ? 0 : at_exit ? 2 : 1) == pass) order.push_back(q);
        }
    for (size_t i = 0; i < order.size() && i < 8; ++i) {
        const int q = order[i];
        const Proc& pr = procs_[size_t(q)];
        named.push_back(q);
        s += "\n  " + plan_.proc_name(q) + " " + plan_.describe(plan_.programs[size_t(q)][pr.pc]);
        for (const V2Wait& w : waits_[size_t(q)][pr.pc])
            if (&wait_bar(w, q) == pr.on) {
                const MBar& b = *pr.on;
                s += " waits for " + plan_.bar_name(w.bar) + (w.bar.kind == V2Bar::words ? " of request " : " round ") +
                     std::to_string(w.round) + " (" +
                     (b.made ? std::to_string(b.completed) + " phases completed, " + std::to_string(b.pending) +
                                   " arrivals and " + std::to_string(b.tx) + " bytes pending"
                             : std::string("never made")) +
                     (b.lost ? ", " + std::to_string(b.lost) + " arrivals lost before it was made" : "") + ")";
                break;
            }
    }
    if (order.size() > 8) s += "\n  and " + std::to_string(order.size() - 8) + " more";
    fail(on(Detector::deadlock) ? Detector::deadlock : Detector::watchdog, s, named);
}

std::string Machine::history() const {
    std::string s;
    const size_t n = std::min(hist_at_, hist_.size());
    for (size_t i = hist_at_ - n; i < hist_at_; ++i) {
        const Hist& h = hist_[i % hist_.size()];
        const auto& prog = plan_.programs[size_t(h.proc)];
        s += "[t=" + std::to_string(h.tick) + "] " + plan_.proc_name(h.proc) + ": " +
             (size_t(h.pc) < prog.size() ? plan_.describe(prog[size_t(h.pc)]) : std::string("end")) +
             (h.what == 'w' ? " blocks" : h.what == 'd' ? " done" : "") + "\n";
    }
    return s;
}

void Machine::run() {
    std::vector<int> run;
    const std::vector<Role> roles(size_t(plan_.processes()), Role::gemv);  // (the delay of kernel v1's roles is refused)
    std::vector<int> fast;
    int left = plan_.processes();
    for (int q = 0; q < plan_.processes(); ++q)
        if (plan_.programs[size_t(q)].empty()) procs_[size_t(q)].done = true, --left;
    while (left > 0) {
        while (!landings_.empty() && landings_.top().at <= now_) {
            const Landing l = landings_.top();
            landings_.pop();
            land(l);
        }
        run.clear();
        for (int q = 0; q < plan_.processes(); ++q) {
            const Proc& pr = procs_[size_t(q)];
            if (!pr.done && (!pr.blocked || pr.on->version != pr.on_version)) run.push_back(q);
        }
        if (run.empty()) {
            if (landings_.empty()) hang();
            now_ = std::max(now_, landings_.top().at);
            continue;
        }
        const std::vector<int>* from = &run;
        if (delay_cta_) {
            fast.clear();
            for (int q : run)
                if (PlanV2::proc_cta(q) != opt_.schedule.cta) fast.push_back(q);
            if (!fast.empty()) from = &fast;
        }
        const int q = sched_->pick(*from, roles, res_.sched_steps);
        Proc& pr = procs_[size_t(q)];
        if (step(q)) {
            log(q, 'd');
            last_progress_ = res_.sched_steps;
            pr.sub = 0;
            if (++pr.pc == plan_.programs[size_t(q)].size()) pr.done = true, --left;
        }
        ++now_;
        if (++res_.sched_steps - last_progress_ > opt_.watchdog_steps && on(Detector::watchdog))
            fail(Detector::watchdog, "no step completed in " + std::to_string(opt_.watchdog_steps) + " scheduler steps", {});
    }
    while (!landings_.empty()) {  // the launch ends when everything in flight has landed
        now_ = std::max(now_, landings_.top().at);
        land(landings_.top());
        landings_.pop();
    }
    res_.finished = true;
    res_.ticks = now_;
}

}  // namespace v2detail

V2MachineResult run_v2_machine(const PlanV2& plan, const std::vector<bf16>& x, const std::vector<uint16_t>& packed,
                               const V2MachineOptions& opt, const SeamInputs& seam, const StepInputs* step) {
    V2MachineResult r;
    v2detail::Machine m(plan, x, packed, opt, seam, step, r);
    try {
        m.run();
    } catch (const v2detail::Stop&) {
    }
    return r;
}

}  // namespace monokda::emu
