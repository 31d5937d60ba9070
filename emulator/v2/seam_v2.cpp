// Kernel v2's seam in the emulator (emulator/v2/machine_v2_impl.hpp; docs/emulator.md "Kernel v2"):
// the producer's INPUT (the slice's inputs as one bulk copy onto the CTA's `in` barrier), the seam
// process's LOAD, PART, GATE, MIX and X (each hand-off an st.async landing after a schedule-drawn
// delay on its receiver's barrier), the consumers' XWAIT, and the detectors where each hand-off is
// consumed: seam_landed (GATE, MIX and X read only what the phase they waited for counted) and
// x_ready (a consumer's TAKE ordered after its CTA's X). The hand-offs carry their values too: each
// stage computes on what has landed in its CTA (core/seam_stages.hpp, the seam's order), and the
// consumers multiply the x their CTA's X stored, so a stage that reads early changes proj.
#include "emulator/v2/machine_v2_impl.hpp"

namespace monokda::emu::v2detail {

namespace {
std::string n(long v) { return std::to_string(v); }

// A hand-off's values as its sender keeps them (mine) or as they land in its receiver.
std::vector<float>& seam_array(CtaState& cs, V2SeamBar bar, bool mine) {
    if (bar == V2SeamBar::part) return mine ? cs.my_part : cs.part;
    if (bar == V2SeamBar::wgt) return mine ? cs.my_wgt : cs.wgt;
    return mine ? cs.my_msq : cs.msq;
}
}  // namespace

bool Machine::seam_step(int p, const V2Instr& in) {
    Proc& pr = procs_[size_t(p)];
    const int k = PlanV2::proc_cta(p);
    CtaState& cs = ctas_[size_t(k)];
    const auto& w = waits_[size_t(p)][pr.pc];
    switch (in.opcode()) {
        case V2Op::INPUT: {
            MBar& b = cs.seam[size_t(V2SeamBar::in)];
            check_made(b, p, "arms the seam's in barrier");
            tick(p);
            expect(b, plan_.seam_ctas[size_t(k)].in_bytes);
            arrive(b, 1, pr.vc);
            schedule({now_ + delay(p, true), 0, Landing::seam_in, k, 0, pr.vc, {}, p});
            return true;
        }
        case V2Op::XWAIT:
            if (hooks_.skips_x_wait(k, PlanV2::proc_warp(p))) return true;
            return await(p, w[0]);
        case V2Op::PART: seam_values(k, V2Op::PART), seam_sends(p, V2SeamBar::part); return true;
        default: break;
    }
    // LOAD, GATE, MIX, X: the wait, then what the phase brought, then the stage's own sends or arrive
    if (pr.sub == 0) {
        if (!await(p, w[0])) return false;
        pr.sub = 1;
    }
    switch (in.opcode()) {
        case V2Op::GATE: seam_landed(p, V2SeamBar::part), seam_values(k, V2Op::GATE), seam_sends(p, V2SeamBar::wgt); break;
        case V2Op::MIX: seam_landed(p, V2SeamBar::wgt), seam_values(k, V2Op::MIX), seam_sends(p, V2SeamBar::msq); break;
        case V2Op::X: {
            seam_landed(p, V2SeamBar::msq);
            seam_values(k, V2Op::X);
            MBar& x = cs.seam[size_t(V2SeamBar::x)];
            check_made(x, p, "arrives on the seam's x barrier");
            tick(p);
            cs.x_stored = true;
            cs.x_clock = pr.vc[size_t(pr.self)];
            arrive(x, 1, pr.vc);
            break;
        }
        default: seam_values(k, V2Op::LOAD), tick(p); break;  // LOAD: the inputs are the CTA's own from here
    }
    return true;
}

// The stage's st.async stores: each of the CTA's sends into `bar` lands on its receiver's barrier.
void Machine::seam_sends(int p, V2SeamBar bar) {
    Proc& pr = procs_[size_t(p)];
    const int k = PlanV2::proc_cta(p);
    for (int e = plan_.seam_send_begin[size_t(k)]; e < plan_.seam_send_begin[size_t(k) + 1]; ++e) {
        const V2SeamSend& x = plan_.seam_sends[size_t(e)];
        if (x.bar != int32_t(bar)) continue;
        check_made(ctas_[size_t(x.to)].seam[size_t(bar)], p, std::string("completes bytes of the seam's ") + to_string(bar) + " barrier of CTA " + n(x.to));
        tick(p);
        if (hooks_.drops_seam_send(plan_.cluster_of(x.from), plan_.rank_of(x.from), plan_.rank_of(x.to), int(bar))) continue;
        std::vector<float> data;
        seam_values_of(x, [&](size_t, size_t from, size_t) { data.push_back(seam_array(ctas_[size_t(k)], bar, true)[from]); });
        schedule({now_ + delay(p, false), 0, Landing::seam_send, e, 0, pr.vc, std::move(data), p});
    }
}

// seam_landed: a stage reads every hand-off into `bar`, so each must have been counted by the phase it
// waited for (phase 0: one a launch): landed before that phase completed.
void Machine::seam_landed(int p, V2SeamBar bar) {
    if (!on(Detector::seam_landed)) return;
    const int k = PlanV2::proc_cta(p);
    const V2SeamCta& e = plan_.seam_ctas[size_t(k)];
    const int32_t armed = bar == V2SeamBar::part ? e.part_bytes : bar == V2SeamBar::wgt ? e.wgt_bytes : e.msq_bytes;
    for (int i : sends_into_[size_t(k)][size_t(bar)]) {
        if (send_phase_[size_t(i)] == 0) continue;
        const V2SeamSend& x = plan_.seam_sends[size_t(i)];
        const int sender = PlanV2::proc(x.from, V2Role::seam);
        long total = 0;
        for (int j : sends_into_[size_t(k)][size_t(bar)]) total += plan_.seam_sends[size_t(j)].bytes;
        fail(Detector::seam_landed,
             plan_.proc_name(p) + " " + plan_.describe(plan_.programs[size_t(p)][procs_[size_t(p)].pc]) + " reads the " + to_string(bar) +
                 " hand-off from " + plan_.proc_name(sender) + ", which " +
                 (send_phase_[size_t(i)] < 0 ? std::string("has not landed") : "landed after the phase it waited for completed") +
                 " (the seam's " + to_string(bar) + " barrier of CTA " + n(k) + " was armed for " + n(armed) + " bytes; its senders send " +
                 n(total) + ")",
             {p, sender});
    }
}

// x_ready: a consumer's products read the CTA's x, which its seam's X stores: the take must be ordered
// after it (through the x barrier).
void Machine::x_ready(int p, const V2Instr& in) {
    if (!plan_.has_seam() || !on(Detector::x_ready)) return;
    const int k = PlanV2::proc_cta(p), seam = PlanV2::proc(k, V2Role::seam);
    const CtaState& cs = ctas_[size_t(k)];
    if (cs.x_stored && procs_[size_t(p)].vc[size_t(local(seam))] >= cs.x_clock) return;
    fail(Detector::x_ready,
         plan_.proc_name(p) + " " + plan_.describe(in) + " multiplies the CTA's x, which " + plan_.proc_name(seam) +
             (cs.x_stored ? " stored (X), but nothing orders that before this take (no wait on the seam's x barrier of CTA " + n(k) + ")"
                          : " has not stored yet (its X has not run)"),
         {p, seam});
}

void Machine::land_seam(const Landing& l) {
    if (l.kind == Landing::seam_in) {
        complete_tx(ctas_[size_t(l.a)].seam[size_t(V2SeamBar::in)], plan_.seam_ctas[size_t(l.a)].in_bytes, l.vc);
        return;
    }
    const V2SeamSend& x = plan_.seam_sends[size_t(l.a)];
    MBar& b = ctas_[size_t(x.to)].seam[size_t(x.bar)];
    send_phase_[size_t(l.a)] = int(b.completed);
    std::vector<float>& into = seam_array(ctas_[size_t(x.to)], V2SeamBar(x.bar), false);
    seam_values_of(x, [&](size_t i, size_t, size_t to) { into[to] = l.data[i]; });
    complete_tx(b, x.bytes, l.vc);
}

// The order a send's values travel in, on both sides: part, the rows the receiver owns (in its order),
// each source, each slice of the sender; wgt, the rows the sender owns, e_0 .. e_nb and Σe; msq,
// every row, each slice of the sender.
template <class F>
void Machine::seam_values_of(const V2SeamSend& x, F&& f) const {
    const size_t src = size_t(plan_.config().nb) + 1, rs = size_t(plan_.seam_rank_slices()), sl = size_t(plan_.seam_slices());
    const size_t j0 = size_t(plan_.rank_of(x.from)) * rs;
    size_t i = 0;
    for (int s = 0; s < S_; ++s) {
        const size_t row = size_t(s), slot = size_t(seam_slot_[size_t(s)]);
        if (x.bar == int32_t(V2SeamBar::part) && plan_.seam_owner[size_t(s)] == plan_.rank_of(x.to)) {
            for (size_t v = 0; v < src; ++v)
                for (size_t jl = 0; jl < rs; ++jl)
                    for (size_t c = 0; c < 2; ++c)
                        f(i++, ((row * src + v) * rs + jl) * 2 + c, ((slot * src + v) * sl + j0 + jl) * 2 + c);
        } else if (x.bar == int32_t(V2SeamBar::wgt) && plan_.seam_owner[size_t(s)] == plan_.rank_of(x.from)) {
            for (size_t q = 0; q <= src; ++q) f(i++, row * (src + 1) + q, row * (src + 1) + q);
        } else if (x.bar == int32_t(V2SeamBar::msq)) {
            for (size_t jl = 0; jl < rs; ++jl) f(i++, row * rs + jl, row * sl + j0 + jl);
        }
    }
}

// A stage's arithmetic on CTA k's values (core/seam_stages.hpp, in the plan's reduction order): LOAD
// the slice's inputs; PART each (row, source, slice of the rank)'s partials; GATE, for the rows k owns,
// the softmax from the partials landed; MIX mixed and each slice's Σmixed² from the weights landed; X
// 1/rms from the Σmixed² landed, and x.
void Machine::seam_values(int k, V2Op op) {
    CtaState& cs = ctas_[size_t(k)];
    const int nb = plan_.config().nb, src = nb + 1, cols = plan_.slice_cols(), D = plan_.config().D;
    const int w = plan_.params().seam_slice_cols, sl = plan_.seam_slices();
    const float eps = seam_in_.eps;
    switch (op) {
        case V2Op::LOAD: seam_load(seam_in_, plan_.rank_of(k) * cols, cs.rows); return;
        case V2Op::PART: seam_part_rows(cs.rows, w, cs.my_part.data()); return;
        case V2Op::GATE:
            for (int s = 0; s < S_; ++s)
                if (plan_.seam_owner[size_t(s)] == plan_.rank_of(k))
                    seam_gate(&cs.part[size_t(seam_slot_[size_t(s)]) * size_t(src) * size_t(sl) * 2], nb, sl, D, eps,
                              &cs.my_wgt[size_t(s) * size_t(src + 1)]);
            return;
        case V2Op::MIX: seam_mix_rows(cs.rows, cs.wgt.data(), w, cs.mixed.data(), cs.my_msq.data()); return;
        case V2Op::X:
            for (int s = 0; s < S_; ++s) {
                const float rr = seam_rr(&cs.msq[size_t(s) * size_t(sl)], sl, D, eps);
                for (int d = 0; d < cols; ++d) {
                    const size_t o = size_t(s) * size_t(cols) + size_t(d);
                    cs.x[o] = seam_x(cs.mixed[o], rr, cs.rows.nw[size_t(d)]).to_float();
                }
            }
            return;
        default: return;
    }
}

}  // namespace monokda::emu::v2detail
