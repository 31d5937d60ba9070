// The emulator's machine loop: every CTA of the plan is a cooperative process stepping through its
// instruction list, one scheduler-chosen step at a time. A step begins an instruction, polls one wait
// group (acquiring its entries, or spinning), runs the group's work, or finishes the instruction.
// Places (the launch's CTAs) are admitted in launch order up to the residency; the run ends when
// every list has finished, and hang() (diagnosis.cpp) names why when no CTA can move.
#include "emulator/machine_impl.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/progress.hpp"

namespace monokda::emu {
namespace detail {

Machine::Machine(const Plan& p, const MachineOptions& o, MachineResult& r)
    : plan_(p), cfg_(p.config()), opt_(o), hooks_{o.fault}, res_(r), B_(p.blocks()) {
    int64_t est = 0;
    for (int c = 0; c < B_; ++c) est += 3 * int64_t(plan_.instrs(c).size());
    sched_ = make_scheduler(opt_.schedule, B_, est);
    ctas_.resize(size_t(B_));
    for (auto& c : ctas_) c.vc.assign(size_t(B_), 0);
    for (int m = 0; m < kMailboxCount; ++m)
        mem_[m].assign(size_t(plan_.entries(Mailbox(m))) * size_t(plan_.words_per_entry(Mailbox(m))), Word{});
    const size_t S = size_t(cfg_.S());
    for (int sp = SP_X; sp < SP_COUNT; ++sp) mem_[sp].assign(S * size_t(width(sp)), Word{});
    for (int m : {int(Mailbox::XRDY), int(Mailbox::PROJ), int(Mailbox::QK)})
        flag_vc_[m].assign(size_t(plan_.entries(Mailbox(m))), {});
    // places are the launch's CTAs; a with_kda_teams list runs in its CTA's place
    P_ = plan_.launch_blocks();
    resident_ = opt_.resident > 0 ? std::min(opt_.resident, P_) : P_;
    open_.assign(size_t(P_), 0);
    // split sums are decomposed through the mailboxes below; every other sum runs inside one CTA
    // in the plan's order (ord_.reduce), so a change of the plan's order reaches the bodies
    // (a plan file may declare another order: a structural problem, and the results then differ from
    // the reference in its order, which the comparison names)
    auto need_split = [&](Site site, int parts) {
        const OrderSpec& o = ord_.at(site);
        if (plan_.source().empty() && (o.kind != OrderSpec::split || o.parts != parts))
            throw std::logic_error(std::string("emulator: the plan splits ") + to_string(site) + " as " + o.str() +
                                   ", but the emulator's bodies decompose it as split:" + std::to_string(parts));
    };
    for (Site site : {Site::attn_sumsq, Site::attn_dot, Site::x_sumsq, Site::in_proj}) need_split(site, plan_.n_attn());
    need_split(Site::onorm_sumsq, plan_.n_chunks());
}

void Machine::run_step(const StepInputs& in, const StepRows& rows, int k, uint32_t launcher_epoch, uint32_t first_epoch) {
    in_ = &in;
    prefix_ = rows.prefix.empty() ? &in.prefix : &rows.prefix;
    delta_ = rows.delta.empty() ? &in.delta : &rows.delta;
    blocks_ = rows.blocks.empty() ? &in.blocks : &rows.blocks;
    step_ = k;
    kernel_epoch_ = hooks_.kernel_epoch(launcher_epoch, first_epoch);
    res_.epochs.push_back(launcher_epoch);
    // kernel boundary: everything of the previous launch happens before this one
    std::vector<uint32_t> join(size_t(B_), 0);
    for (auto& c : ctas_)
        for (int i = 0; i < B_; ++i) join[size_t(i)] = std::max(join[size_t(i)], c.vc[size_t(i)]);
    for (auto& c : ctas_) {
        c.vc = join;
        c.state = Cta::pending;
        c.pc = 0;
        c.phase = Cta::BEGIN;
        c.spinning = false;
        c.stall_until = INT64_MIN;
        c.max_vis = INT64_MIN;
        c.loads.clear();
        c.acquired.assign(size_t(kMailboxCount), {});
        c.x_checked.assign(size_t(plan_.n_attn()), 0);
        for (int m = 0; m < kMailboxCount; ++m) c.acquired[size_t(m)].assign(size_t(plan_.entries(Mailbox(m))), 0);
    }
    init_outputs();
    wq_.resize(size_t(cfg_.D));
    for (int d = 0; d < cfg_.D; ++d)
        wq_[size_t(d)] = in.res_norm_w[size_t(d)].to_float() * in.res_proj_w[size_t(d)].to_float();

    next_admit_ = 0;
    finished_ = 0;
    places_done_ = 0;
    while (next_admit_ < P_ && next_admit_ - places_done_ < resident_) admit();
    last_progress_ = res_.sched_steps;
    std::vector<int> run;
    std::vector<Role> roles;
    while (finished_ < B_) {
        while (!events_.empty() && events_.top() <= now_) {
            last_event_ = std::max(last_event_, events_.top());
            events_.pop();
        }
        run.clear();
        roles.clear();
        for (int c = 0; c < B_; ++c) {
            Cta& x = ctas_[size_t(c)];
            if (x.state != Cta::resident) continue;
            if (x.spinning && x.blocked_at >= last_event_) continue;  // nothing it could see has changed
            if (x.stall_until > now_) continue;
            run.push_back(c);
            roles.push_back(role_of(plan_.instrs(c)[x.pc].opcode()));
        }
        if (run.empty()) {
            if (!events_.empty()) {  // everyone waits for a store or a load in flight: skip to it
                now_ = std::max(now_, events_.top());
                continue;
            }
            hang();
        }
        int c = sched_->pick(run, roles, res_.sched_steps);
        step(c);
        ++now_;
        ++res_.sched_steps;
        if (on(Detector::watchdog) && res_.sched_steps - last_progress_ > opt_.watchdog_steps) no_progress("");
    }
    // the launch ends when every store has landed
    for (int m = 0; m < SP_COUNT; ++m)
        for (Word& w : mem_[m]) now_ = std::max(now_, w.visible_at + 1);
    while (!events_.empty()) events_.pop();
    last_event_ = now_;
    collect_outputs();
    res_.ticks = now_;
    res_.steps_done = k + 1;
}

// Gives the next CTA in launch order (Plan::list_at) a place, with its team lists; lists with
// nothing to do finish at once, and a place whose lists all did passes on.
void Machine::admit() {
    while (next_admit_ < P_) {
        const int p = plan_.list_at(next_admit_++);
        const std::vector<int> lists = plan_.lists_of(p);
        open_[size_t(p)] = int(lists.size());
        for (int id : lists) {
            ctas_[size_t(id)].state = Cta::resident;
            log(EventKind::admit, id, -1);
        }
        for (int id : lists)
            if (plan_.instrs(id).empty()) finish_list(id, false);
        if (open_[size_t(p)] > 0) return;
    }
}

// List `id` is done; its place frees when every list in it is (admit: whether to fill it).
void Machine::finish_list(int id, bool refill) {
    ctas_[size_t(id)].state = Cta::finished;
    ++finished_;
    log(EventKind::done, id, -1);
    if (--open_[size_t(plan_.team_parent(id))] == 0) {
        ++places_done_;
        if (refill && next_admit_ < P_) admit();
    }
}

// ---------------------------------------------------------------- the step of one CTA
void Machine::step(int cta) {
    cur_cta_ = cta;
    Cta& c = ctas_[size_t(cta)];
    const auto& list = plan_.instrs(cta);
    const Instr& in = list[c.pc];
    const auto& waits = plan_.waits(cta, int(c.pc));
    if (c.phase == Cta::BEGIN) {
        c.t_begin = now_;
        log(EventKind::begin, cta, int(c.pc));
        if (in.opcode() == Op::GEMV_PREFETCH || in.opcode() == Op::KDA_LOAD) {
            issue_loads(cta);
            if (in.opcode() == Op::KDA_LOAD) begin_kda(cta, in);
            finish_instr(cta);
            return;
        }
        begin_instr(cta, in);
        begin_units(cta);
        c.wpos = 0;
        c.early = false;
        c.phase = waits.empty() ? Cta::FINISH : Cta::WAIT;
    }
    if (c.phase == Cta::WAIT) {
        const int32_t grp = waits[c.wpos].group;
        size_t gend = c.wpos;
        while (gend < waits.size() && waits[gend].group == grp) ++gend;
        if (hooks_.uses_slice_before_poll(plan_, cta, in) && !c.early && c.unit < c.units.size()) {
            group_work(cta, in, c.units[c.unit++].label);  // the planted bug: the slice is used before its flag is polled
            c.early = true;
        }
        const bool skip = hooks_.skips_waits(in);
        if (!skip && opt_.amd_in_order_loads) {
            // outstanding until their task has used them, not until they happened to land in this run
            for (const Load& l : c.loads)
                if (l.unit != unit_of(in) && on(Detector::poll_behind_loads))
                    fail(Detector::poll_behind_loads,
                         who_now(cta) + " polls " + plan_.entry_name(waits[c.wpos].entry) +
                             " while the weight loads issued by " + unit_name(cta, l) +
                             " (another task, not yet used) are outstanding: with in-order load retirement the " +
                             "poll completes only after them (" +
                             (l.retire_at > now_ ? "in flight until t=" + std::to_string(l.retire_at)
                                                 : "landed at t=" + std::to_string(l.retire_at) +
                                                       " in this run, which a device under load does not promise") +
                             ")",
                         {cta}, waits[c.wpos].entry);
            int64_t any = loads_until(c, INT64_MIN);
            if (any != INT64_MIN) {
                stall(cta, any);  // its own task's loads: the poll retires when they do
                return;
            }
        }
        bool all = true;
        for (size_t k = c.wpos; k < gend; ++k) {
            const MailboxRef e = waits[k].entry;
            if (c.acquired[size_t(e.box)][size_t(e.entry)]) continue;
            if (skip || hooks_.skips_wait(plan_, in, e)) continue;
            if (entry_ready(cta, e)) acquire(cta, e);
            else all = false;
        }
        if (!all) {
            if (!c.spinning) {
                c.spinning = true;
                c.spin_since = now_;
                for (size_t k = c.wpos; k < gend; ++k) {
                    const MailboxRef e = waits[k].entry;
                    if (!c.acquired[size_t(e.box)][size_t(e.entry)]) {
                        log(EventKind::spin, cta, int(c.pc), e, seen(cta, mem_[int(e.box)][size_t(e.entry) * size_t(plan_.words_per_entry(e.box))]).tag);
                        break;
                    }
                }
            }
            c.blocked_at = now_;
            return;
        }
        if (c.spinning) {
            span(cta, int(c.pc), c.spin_since, now_, Span::wait);
            c.spinning = false;
        }
        last_progress_ = res_.sched_steps;
        if (!c.early) {
            int64_t own = loads_until(c, unit_of(in));
            if (own != INT64_MIN) { stall(cta, own); return; }  // the group's work needs its weights
            run_units(cta, in, false);
        }
        c.early = false;
        c.wpos = gend;
        if (c.wpos < waits.size()) return;
        c.phase = Cta::FINISH;
        return;  // finishing is a step of its own
    }
    // FINISH
    int64_t own = loads_until(c, unit_of(in));
    if (own != INT64_MIN) { stall(cta, own); return; }
    run_units(cta, in, true);
    finish_work(cta, in);
    finish_instr(cta);
}

void Machine::begin_units(int cta) {
    Cta& c = ctas_[size_t(cta)];
    c.units.clear();
    c.unit = 0;
    const Op op = plan_.instrs(cta)[c.pc].opcode();
    if (op != Op::ATTN_MIX && op != Op::ATTN_X && op != Op::GEMV_GROUP) return;
    const auto& need = plan_.needs(cta, int(c.pc));
    for (size_t k = 0; k < need.size(); ++k)
        if (c.units.empty() || c.units.back().label != need[k].group) c.units.push_back({need[k].group, k, k + 1});
        else c.units.back().end = k + 1;
}

void Machine::run_units(int cta, const Instr& in, bool all) {
    Cta& c = ctas_[size_t(cta)];
    const auto& need = plan_.needs(cta, int(c.pc));
    while (c.unit < c.units.size()) {
        const Cta::Unit& u = c.units[c.unit];
        for (size_t k = u.begin; k < u.end && !all; ++k)
            if (!c.acquired[size_t(need[k].entry.box)][size_t(need[k].entry.entry)]) return;
        ++c.unit;
        group_work(cta, in, u.label);
    }
}

void Machine::stall(int cta, int64_t until) {
    Cta& c = ctas_[size_t(cta)];
    span(cta, int(c.pc), now_, until, Span::stall);
    c.stall_until = until;
}

void Machine::finish_instr(int cta) {
    Cta& c = ctas_[size_t(cta)];
    log(EventKind::finish, cta, int(c.pc));
    span(cta, int(c.pc), c.t_begin, now_ + 1, Span::run);
    const Instr& in = plan_.instrs(cta)[c.pc];
    if (in.opcode() == Op::GEMV_GROUP || in.opcode() == Op::KDA_NORM) {  // the task has used its weights
        const int64_t u = unit_of(in);
        c.loads.erase(std::remove_if(c.loads.begin(), c.loads.end(), [&](const Load& l) { return l.unit == u; }),
                      c.loads.end());
    }
    last_progress_ = res_.sched_steps;
    ++c.pc;
    c.phase = Cta::BEGIN;
    if (c.pc == plan_.instrs(cta).size()) finish_list(cta, true);
}

// ---------------------------------------------------------------- dispatch to the role bodies (roles/*.cpp)
void Machine::begin_instr(int cta, const Instr& in) {
    Cta& c = ctas_[size_t(cta)];
    const int S = cfg_.S(), w = plan_.params().slice_width;
    if (in.opcode() == Op::ATTN_MIX) c.mixed.assign(size_t(S) * size_t(w), 0.f);
    if (in.opcode() == Op::GEMV_GROUP) c.acc.assign(size_t(plan_.params().gemv_group_rows) * size_t((S + 7) / 8), f8{});
}

// Work done once a wait group has been acquired.
void Machine::group_work(int cta, const Instr& in, int grp) {
    switch (in.opcode()) {
        case Op::ATTN_MIX: mix_row(cta, in.a, grp); break;
        case Op::ATTN_X: x_row(cta, in.a, grp); break;
        case Op::GEMV_GROUP: gemv_slice(cta, in.a, grp); break;
        default: break;  // the rest work after all their waits (finish_work)
    }
}

void Machine::finish_work(int cta, const Instr& in) {
    switch (in.opcode()) {
        case Op::ATTN_PART: attn_part(cta, in.a, in.b); break;
        case Op::ATTN_GATE: attn_gate(cta, in.a); break;
        case Op::ATTN_MIX: break;
        case Op::ATTN_X: attn_x_flag(cta, in.a, in.b); break;
        case Op::GEMV_GROUP: gemv_store(cta, in.a); break;
        case Op::KDA_CONV: kda_conv(cta, in.a, in.b, in.c); break;
        case Op::KDA_REC: kda_rec(cta, in.a, in.b, in.c); break;
        case Op::KDA_NORM: kda_norm(cta, in.a, in.b, in.c); break;
        default: break;
    }
}

// ---------------------------------------------------------------- outputs
void Machine::init_outputs() {
    const StepInputs& in = *in_;
    const size_t S = size_t(cfg_.S());
    out_ = StepOutputs<float>{};
    out_.prefix_out.assign(S * size_t(cfg_.D), bf16{});
    out_.blocks = *blocks_;
    out_.core_out.assign(S * size_t(cfg_.E()), bf16{});
    out_.conv_state = in.conv_state;
    out_.ssm_state = in.ssm_state;
    out_.o.assign(S * size_t(cfg_.E()), bf16{});
    prov_.assign(kOutputCount, {});
    auto sz = [&](const char* n, size_t count) {
        Provenance& p = prov_[size_t(output_index(n))];
        p.cta.assign(count, -1);
        p.instr.assign(count, -1);
    };
    sz("prefix_out", out_.prefix_out.size());
    sz("blocks", out_.blocks.size());
    sz("core_out", out_.core_out.size());
    sz("conv_state", out_.conv_state.size());
    sz("ssm_state", out_.ssm_state.size());
    sz("o", out_.o.size());
}

void Machine::mark(const char* name, size_t i, int cta) {
    Provenance& p = prov_[size_t(output_index(name))];
    p.cta[i] = cta;
    p.instr[i] = int32_t(ctas_[size_t(cta)].pc);
}

void Machine::collect_outputs() {
    auto take = [&](int sp, std::vector<bf16>& dst, const char* name) {
        const auto& m = mem_[sp];
        dst.resize(m.size());
        Provenance& p = prov_[size_t(output_index(name))];
        p.cta.assign(m.size(), -1);
        p.instr.assign(m.size(), -1);
        for (size_t i = 0; i < m.size(); ++i) {
            dst[i] = bf16::from_bits(uint16_t(m[i].cur.bits));
            if (m[i].cur.step == step_) { p.cta[i] = m[i].cur.writer; p.instr[i] = m[i].cur.instr; }
        }
    };
    take(SP_X, out_.x, "x");
    take(SP_PROJ, out_.proj, "proj");
    take(SP_QKV, out_.qkv, "qkv");
    take(SP_G1, out_.g1, "g1");
    res_.outputs.push_back(std::move(out_));
    res_.provenance.push_back(std::move(prov_));
}

}  // namespace detail

MachineResult run_machine(const Plan& plan, const StepInputs& in, const MachineOptions& opt) {
    return run_machine(plan, in, std::vector<StepRows>(1), 1, opt);
}

MachineResult run_machine(const Plan& plan, const StepInputs& base, const std::vector<StepRows>& steps, int launches,
                          const MachineOptions& opt) {
    MachineResult r;
    if (launches < 1 || size_t(launches) > steps.size())
        bad_input("emulate: " + std::to_string(launches) + " launches asked of " + std::to_string(steps.size()) +
                  " steps' rows");
    const Config& c = base.cfg;
    if (c.D != plan.config().D || c.N != plan.config().N || c.S() != plan.config().S() || c.H != plan.config().H ||
        c.K != plan.config().K || c.nb != plan.config().nb || c.L != plan.config().L)
        bad_input("emulate: the inputs' config does not match the plan's");
    for (int k = 0; k < launches; ++k)
        if (const StepRows& s = steps[size_t(k)]; (!s.prefix.empty() && s.prefix.size() != base.prefix.size()) ||
            (!s.delta.empty() && s.delta.size() != base.delta.size()) ||
            (!s.blocks.empty() && s.blocks.size() != base.blocks.size()))
            bad_input("emulate: a step's rows do not match the inputs' shapes");
    if (opt.schedule.kind == Schedule::delay && !opt.schedule.delay_role &&
        (opt.schedule.cta < 0 || opt.schedule.cta >= plan.blocks()))
        bad_input("--schedule delay:cta:" + std::to_string(opt.schedule.cta) + " names no CTA of the plan (0.." +
                  std::to_string(plan.blocks() - 1) + ")");
    detail::Machine m(plan, opt, r);
    uint32_t e = opt.epoch_start == 0 ? 1 : opt.epoch_start;
    const uint32_t first = e;
    std::unique_ptr<Progress> progress;
    if (opt.progress && launches > 1) progress = std::make_unique<Progress>("emulate: launches", launches);
    try {
        for (int k = 0; k < launches; ++k) {
            m.run_step(base, steps[size_t(k)], k, e, first);
            e = next_epoch(e);
            if (progress) progress->add();
        }
    } catch (const detail::Stop&) {
    }
    return r;
}

}  // namespace monokda::emu
