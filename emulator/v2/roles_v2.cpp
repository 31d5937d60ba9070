// Kernel v2's role bodies in the emulator (emulator/v2/machine_v2_impl.hpp): each step of a program
// as the probe's kernel does it (bench/probes/v2_inproj_kernel.cuh: producer, consumers, reducer),
// over the machine's barriers and buffers, with the fault hooks and the detectors of each mechanism
// where it acts: ring_slot_free at a copy, recv_slot_free at a send, partials_landed at a sum,
// x_ready at a take, barrier_init at every barrier a step touches.
#include <stdexcept>

#include "emulator/v2/machine_v2_impl.hpp"

namespace monokda::emu::v2detail {

namespace {
std::string n(long v) { return std::to_string(v); }
}  // namespace

bool Machine::step(int p) {
    const V2Instr& in = plan_.programs[size_t(p)][procs_[size_t(p)].pc];
    switch (in.opcode()) {
        case V2Op::INIT: init(p); return true;
        case V2Op::COPY: return copy(p, in);
        case V2Op::SYNC: return sync(p, in);
        case V2Op::TAKE: return take(p, in);
        case V2Op::FREE: free_chunk(p, in); return true;
        case V2Op::PAIR: return pair(p, in);
        case V2Op::SEND: return send(p, in);
        case V2Op::REDUCE: return reduce(p, in);
        case V2Op::RELEASE: release(p, in); return true;
        case V2Op::INPUT:
        case V2Op::LOAD:
        case V2Op::PART:
        case V2Op::GATE:
        case V2Op::MIX:
        case V2Op::X:
        case V2Op::XWAIT: return seam_step(p, in);
        case V2Op::PUBLISH:
        case V2Op::POLL:
        case V2Op::DECAY:
        case V2Op::REC:
        case V2Op::NORM: return tail_step(p, in);
    }
    throw std::logic_error("emulator: v2 step " + std::to_string(in.op) + " unknown");
}

// The CTA's barriers made (full: the producer's arrive, empty: the consumers', recv: the owner's,
// free: the ranks', the seam's: one arrival each); the owner arms each receive slot's use at its
// REDUCE, the seam's part, wgt and msq are armed here, as v2_seam.cuh's seam_arm does.
void Machine::init(int p) {
    const int k = PlanV2::proc_cta(p);
    CtaState& cs = ctas_[size_t(k)];
    tick(p);
    for (MBar& b : cs.full) make(b, 1, p);
    for (MBar& b : cs.empty) make(b, plan_.rings[size_t(k)].consumers, p);
    for (MBar& b : cs.recv) make(b, 1, p);
    for (MBar& b : cs.free) make(b, R_, p);
    for (MBar& b : cs.seam) make(b, 1, p);
    tail_arm(p);
    if (!plan_.has_seam()) return;
    const V2SeamCta& e = plan_.seam_ctas[size_t(k)];
    const int32_t armed[] = {e.part_bytes, e.wgt_bytes, e.msq_bytes};
    for (int b = 0; b < 3; ++b) {
        MBar& m = cs.seam[size_t(int(V2SeamBar::part) + b)];
        expect(m, armed[b]);
        arrive(m, 1, procs_[size_t(p)].vc);
    }
}

bool Machine::copy(int p, const V2Instr& in) {
    Proc& pr = procs_[size_t(p)];
    const int k = PlanV2::proc_cta(p), j = in.a;
    const V2Chunk& ch = plan_.chunks[size_t(k)][size_t(j)];
    const auto& w = waits_[size_t(p)][pr.pc];
    const int depth = plan_.rings[size_t(k)].depth;
    for (; pr.sub < int(w.size()); ++pr.sub) {
        if (w[size_t(pr.sub)].bar.kind == V2Bar::empty && hooks_.skips_empty_wait(k, j, depth)) continue;
        if (!await(p, w[size_t(pr.sub)])) return false;
    }
    RingSlot& rs = ctas_[size_t(k)].ring[size_t(ch.slot)];
    if (ch.round >= 1 && on(Detector::ring_slot_free))
        for (int c = 0; c < kV2Consumers; ++c) {
            const int q = PlanV2::proc(k, V2Role::consumer, c);
            if (rs.freed[size_t(c)] == j - depth && pr.vc[size_t(local(q))] >= rs.free_clock[size_t(c)]) continue;
            fail(Detector::ring_slot_free,
                 plan_.proc_name(p) + " COPY(chunk " + n(j) + ") refills ring slot " + n(ch.slot) + " of CTA " + n(k) + ", but " +
                     plan_.proc_name(q) + "'s free of chunk " + n(j - depth) + " in it " +
                     (rs.freed[size_t(c)] == j - depth ? "is not ordered before the copy (no wait on empty[slot " + n(ch.slot) +
                                                              "] round " + n(ch.round - 1) + ")"
                                                        : "has not happened: the chunk may still be read"),
                 {p, q});
        }
    MBar& full = ctas_[size_t(k)].full[size_t(ch.slot)];
    check_made(full, p, "arms full[slot " + n(ch.slot) + "]");
    tick(p);
    expect(full, ch.bytes);
    arrive(full, 1, pr.vc);
    schedule({now_ + delay(p, true), 0, Landing::copy, k, j, pr.vc, {}, p});
    return true;
}

// A consumer's products of one chunk: its tile's k-steps of its parity, each a 16-term sum in
// column order added to its accumulator (the model of one m16n8k16; S columns of x, the pad's zeros
// left out as they add nothing).
void Machine::products(int p, const V2Chunk& ch, const RingSlot& slot) {
    Proc& pr = procs_[size_t(p)];
    const int k = PlanV2::proc_cta(p), warp = PlanV2::proc_warp(p), m = warp / 2, half = warp % 2;
    const V2Unit& u = plan_.units[size_t(ch.unit)];
    if (m >= u.tiles) return;
    if (ch.kstep0 == 0) std::fill(pr.acc.begin(), pr.acc.end(), 0.f);  // a unit's first chunk
    const int D = plan_.config().D, col0 = plan_.rank_of(k) * plan_.slice_cols();
    float w[kV2TileRows][kV2KStep];
    for (int ks = 0; ks < ch.ksteps; ++ks) {
        const int g = ch.kstep0 + ks;
        if (g % 2 != half) continue;
        const size_t base = (size_t(ks) * size_t(u.tiles) + size_t(m)) * (kV2TileBytes / 2);
        for (int lane = 0; lane < 32; ++lane)
            for (int e = 0; e < 8; ++e) {
                int r, c;
                v2_fragment_element(lane, e, r, c);
                w[r][c] = bf16::from_bits(slot.bytes[base + size_t(lane) * 8 + size_t(e)]).to_float();
            }
        const int d0 = col0 + g * kV2KStep;
        for (int r = 0; r < kV2TileRows; ++r)
            for (int s = 0; s < S_; ++s) {
                // x: the seam's, this CTA's slice (d0 is in it), or the machine's input
                const float* xs = plan_.has_seam() ? &ctas_[size_t(k)].x[size_t(s) * size_t(plan_.slice_cols()) + size_t(d0 - col0)]
                                                   : &x_[size_t(s) * size_t(D) + size_t(d0)];
                float sum = w[r][0] * xs[0];
                for (int c = 1; c < kV2KStep; ++c) sum = sum + w[r][c] * xs[c];
                float& a = pr.acc[size_t(r) * size_t(S_) + size_t(s)];
                a = a + sum;
            }
    }
}

bool Machine::take(int p, const V2Instr& in) {
    const int k = PlanV2::proc_cta(p);
    if (!await(p, waits_[size_t(p)][procs_[size_t(p)].pc][0])) return false;
    x_ready(p, in);
    const V2Chunk& ch = plan_.chunks[size_t(k)][size_t(in.a)];
    products(p, ch, ctas_[size_t(k)].ring[size_t(ch.slot)]);  // the slot's bytes as they are now
    return true;
}

void Machine::free_chunk(int p, const V2Instr& in) {
    Proc& pr = procs_[size_t(p)];
    const int k = PlanV2::proc_cta(p), c = PlanV2::proc_warp(p);
    const V2Chunk& ch = plan_.chunks[size_t(k)][size_t(in.a)];
    MBar& empty = ctas_[size_t(k)].empty[size_t(ch.slot)];
    check_made(empty, p, "arrives on empty[slot " + n(ch.slot) + "]");
    tick(p);
    arrive(empty, 1, pr.vc);
    RingSlot& rs = ctas_[size_t(k)].ring[size_t(ch.slot)];
    rs.freed[size_t(c)] = in.a;
    rs.free_clock[size_t(c)] = pr.vc[size_t(pr.self)];
}

bool Machine::sync(int p, const V2Instr&) {
    Proc& pr = procs_[size_t(p)];
    const V2Wait& w = waits_[size_t(p)][pr.pc][0];
    if (pr.sub == 0) {
        tick(p);
        arrive(bar(w.bar, p), 1, pr.vc);
        pr.sub = 1;
    }
    return await(p, w);
}

// The tile's two warps meet twice on their named barrier: the odd warp writes its sums before the
// first meeting, the even warp adds them to its own (even + odd) between the two, and the second
// meeting keeps the odd warp from writing the next unit's over them.
bool Machine::pair(int p, const V2Instr&) {
    Proc& pr = procs_[size_t(p)];
    const int k = PlanV2::proc_cta(p), m = PlanV2::proc_warp(p) / 2, odd = PlanV2::proc_warp(p) % 2;
    const auto& w = waits_[size_t(p)][pr.pc];
    std::vector<float>& red = ctas_[size_t(k)].red[size_t(m)];
    for (;;) {
        switch (pr.sub) {
            case 0:
            case 2:
                if (pr.sub == 0 && odd) red = pr.acc;
                tick(p);
                arrive(bar(w[size_t(pr.sub / 2)].bar, p), 1, pr.vc);
                ++pr.sub;
                break;
            case 1:
                if (!await(p, w[0])) return false;
                if (!odd)
                    for (size_t i = 0; i < pr.acc.size(); ++i) pr.acc[i] = pr.acc[i] + red[i];
                ++pr.sub;
                break;
            default: return await(p, w[1]);
        }
    }
}

bool Machine::send(int p, const V2Instr& in) {
    Proc& pr = procs_[size_t(p)];
    const int k = PlanV2::proc_cta(p);
    const V2Partial& pa = plan_.partials[size_t(in.a)];
    const V2Recv& rv = plan_.recvs[size_t(in.a) / size_t(R_)];
    const auto& w = waits_[size_t(p)][pr.pc];
    for (; pr.sub < int(w.size()); ++pr.sub) {
        if (hooks_.skips_free_wait(k, PlanV2::proc_warp(p), pa.free_round + 1)) continue;
        if (!await(p, w[size_t(pr.sub)])) return false;
    }
    const int owner = plan_.cta(plan_.units[size_t(pa.unit)].cluster, pa.owner);
    Region& g = ctas_[size_t(owner)].regions[size_t(rv.slot)][size_t(pa.sender)];
    const int reducer = PlanV2::proc(owner, V2Role::reducer);
    if (g.issued >= 0 && on(Detector::recv_slot_free) &&
        !(g.read == g.issued && pr.vc[size_t(local(reducer))] >= g.read_clock))
        fail(Detector::recv_slot_free,
             plan_.proc_name(p) + " " + plan_.describe(plan_.programs[size_t(p)][pr.pc]) + " stores into receive slot " +
                 n(rv.slot) + " of CTA " + n(owner) + ", whose use for unit " + n(g.issued) + " its owner " +
                 (g.read == g.issued ? "has summed, but nothing orders that sum before this store (no wait on free[slot " +
                                           n(rv.slot) + "] round " + n(pa.free_round) + ")"
                                     : "has not summed yet"),
             {p, reducer});
    MBar& recv = ctas_[size_t(owner)].recv[size_t(rv.slot)];
    check_made(recv, p, "completes bytes of recv[slot " + n(rv.slot) + "] of CTA " + n(owner));
    tick(p);
    g.issued = pa.unit;
    const int r0 = kV2OwnerRows * (pa.owner % 2);
    std::vector<float> rows(pr.acc.begin() + long(r0) * S_, pr.acc.begin() + long(r0 + kV2OwnerRows) * S_);
    schedule({now_ + delay(p, false), 0, Landing::partial, in.a, 0, pr.vc, std::move(rows), p});
    return true;
}

// The owner arms the slot's use (its arrival and the bytes every partial brings), then waits for the
// phase: partials that landed before the arm have taken the byte count below zero, and the phase
// cannot complete without the arrival.
bool Machine::reduce(int p, const V2Instr& in) {
    Proc& pr = procs_[size_t(p)];
    const int k = PlanV2::proc_cta(p), cl = plan_.cluster_of(k), e = in.a;
    const V2Recv& rv = plan_.recvs[size_t(e)];
    if (pr.sub == 0) {
        MBar& b = ctas_[size_t(k)].recv[size_t(rv.slot)];
        check_made(b, p, "arms recv[slot " + n(rv.slot) + "]");
        tick(p);
        expect(b, rv.bytes);
        arrive(b, 1, pr.vc);
        pr.sub = 1;
    }
    if (!await(p, waits_[size_t(p)][pr.pc][0])) return false;
    auto& regions = ctas_[size_t(k)].regions[size_t(rv.slot)];
    for (int s = 0; s < R_ && on(Detector::partials_landed); ++s) {
        const Region& g = regions[size_t(s)];
        const int sender = PlanV2::proc(plan_.cta(cl, s), V2Role::consumer, 2 * (rv.owner / 2));
        if (g.landed == rv.unit && pr.vc[size_t(local(sender))] >= g.landed_clock) continue;
        fail(Detector::partials_landed,
             plan_.proc_name(p) + " " + plan_.describe(plan_.programs[size_t(p)][pr.pc]) + " sums rank " + n(s) +
                 "'s partial, which " +
                 (g.landed == rv.unit ? "landed, but the phase of recv[slot " + n(rv.slot) + "] it waited for did not count it"
                                      : "has not landed") +
                 " (the barrier was armed for " + n(rv.bytes) + " bytes; the unit's " + n(R_) + " partials are " +
                 n(long(R_) * plan_.partial_bytes()) + ")",
             {p, sender});
    }
    tick(p);
    const int N = plan_.config().N;
    for (int i = 0; i < kV2OwnerRows; ++i)
        for (int s = 0; s < S_; ++s) {
            const size_t at = size_t(i) * size_t(S_) + size_t(s);
            float acc = regions[0].data[at];
            for (int src = 1; src < R_; ++src) acc = acc + regions[size_t(src)].data[at];
            res_.proj[size_t(s) * size_t(N) + size_t(rv.row0 + i)] = bf16::round(acc);
            res_.writer[size_t(s) * size_t(N) + size_t(rv.row0 + i)] = e;
        }
    for (Region& g : regions) g.read = rv.unit, g.read_clock = pr.vc[size_t(pr.self)];
    return true;
}

void Machine::release(int p, const V2Instr& in) {
    Proc& pr = procs_[size_t(p)];
    const V2Free& f = plan_.frees[size_t(in.a)];
    const int cl = plan_.units[size_t(f.unit)].cluster;
    for (int r = 0; r < R_; ++r) {
        const int tgt = plan_.cta(cl, r);
        check_made(ctas_[size_t(tgt)].free[size_t(f.slot)], p, "arrives on free[slot " + n(f.slot) + "] of CTA " + n(tgt));
    }
    tick(p);
    for (int r = 0; r < R_; ++r) schedule({now_ + delay(p, false), 0, Landing::arrive, in.a, r, pr.vc, {}, p});
}

}  // namespace monokda::emu::v2detail
