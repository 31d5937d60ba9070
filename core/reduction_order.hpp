// The order in which every sum of SPEC §3 is evaluated, as an explicit, swappable policy.
// The reference uses "sequential" by default; the emulator swaps in the plan's split order and
// permuted orders to measure how far reordering alone moves each output (the envelope).
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace monokda {

// Every reduction site of SPEC §3, named for the sum it evaluates.
enum class Site : int {
    attn_sumsq,   // A4: Σ_d v_i[d]²
    attn_dot,     // A4: Σ_d v_i[d]·wq[d]
    softmax_den,  // A5: Σ_i e_i
    mix,          // A5: Σ_i e_i·v_i[d]
    x_sumsq,      // A6: Σ_d mixed[d]²
    in_proj,      // B: Σ_d x·W
    f_b,          // C: Σ_f f_a·f_b_w
    l2_q,         // E: Σ_k q²
    l2_k,         // E: Σ_k k²
    rec_kS,       // E: Σ_k S[v,k]·k̂[k]
    rec_oq,       // E: Σ_k S[v,k]·q̂[k]
    onorm_sumsq,  // F: Σ_v ō²
    count
};
const char* to_string(Site s);
constexpr int kSiteCount = int(Site::count);

struct OrderSpec {
    enum Kind { sequential, pairwise, split, shuffle, cluster } kind = sequential;
    int parts = 1;       // split, cluster: P contiguous parts, partials added in order
    uint64_t seed = 0;   // shuffle: terms added sequentially in a seeded permutation
    std::string str() const;
    // cluster: kernel v2's in_proj (docs/kernel-v2.md). Each of the P parts (a cluster rank's K-slice)
    // is cut into k-steps of kKStep terms, each summed sequentially (the model of one m16n8k16 product);
    // the even k-steps are added in order to +0, the odd ones apart (the tile's two warps), then
    // even + odd; the parts' sums are added in rank order, from part 0's.
    static constexpr int kKStep = 16;
};

class ReductionOrder {
public:
    ReductionOrder() = default;
    // "sequential" | "pairwise" | "split:P" | "shuffle:SEED", for every site, or what str() writes
    // for a mixed order, "SITE=ORDER,..." (sites not named: sequential); BadInput otherwise.
    static ReductionOrder parse(const std::string& s);
    static ReductionOrder uniform(const OrderSpec& o);
    ReductionOrder& set(Site s, const OrderSpec& o) { spec_[size_t(s)] = o; return *this; }
    const OrderSpec& at(Site s) const { return spec_[size_t(s)]; }
    std::string str() const;

    // Sum term(0..n-1) in this site's order. V is any type with + (a scalar, or SIMD lanes that
    // each carry their own sum, so lanes never change the order).
    template <class V, class F> V reduce(Site site, int n, F&& term) const;

    // The permutation of 0..n-1 a shuffle site uses (cached; thread-safe).
    const std::vector<int>& permutation(Site site, uint64_t seed, int n) const;

private:
    std::array<OrderSpec, kSiteCount> spec_{};
    struct Cache;
    std::shared_ptr<Cache> cache_ = make_cache();
    static std::shared_ptr<Cache> make_cache();
};

namespace detail {
template <class V, class F> V seq_sum(int lo, int hi, F& term) {
    V acc = term(lo);
    for (int i = lo + 1; i < hi; ++i) acc = acc + term(i);
    return acc;
}
// One part of the cluster order: k-steps of OrderSpec::kKStep terms, even and odd apart, even + odd.
template <class V, class F> V parity_sum(int lo, int hi, F& term) {
    V even{}, odd{};
    for (int k0 = lo, ks = 0; k0 < hi; k0 += OrderSpec::kKStep, ++ks) {
        const V step = seq_sum<V>(k0, std::min(k0 + OrderSpec::kKStep, hi), term);
        if (ks % 2 == 0) even = even + step;
        else odd = odd + step;
    }
    return even + odd;
}
template <class V, class F> V pair_sum(int lo, int hi, F& term) {
    if (hi - lo == 1) return term(lo);
    int mid = lo + (hi - lo) / 2;
    return pair_sum<V>(lo, mid, term) + pair_sum<V>(mid, hi, term);
}
}  // namespace detail

template <class V, class F> V ReductionOrder::reduce(Site site, int n, F&& term) const {
    if (n <= 0) return V{};
    const OrderSpec& o = spec_[size_t(site)];
    switch (o.kind) {
        case OrderSpec::sequential: return detail::seq_sum<V>(0, n, term);
        case OrderSpec::pairwise: return detail::pair_sum<V>(0, n, term);
        case OrderSpec::split:
        case OrderSpec::cluster: {
            V total{};
            bool first = true;
            for (int p = 0; p < o.parts; ++p) {
                int lo = int(int64_t(n) * p / o.parts), hi = int(int64_t(n) * (p + 1) / o.parts);
                if (lo == hi) continue;
                V part = o.kind == OrderSpec::split ? detail::seq_sum<V>(lo, hi, term) : detail::parity_sum<V>(lo, hi, term);
                total = first ? part : total + part;
                first = false;
            }
            return total;
        }
        case OrderSpec::shuffle: {
            const std::vector<int>& perm = permutation(site, o.seed, n);
            auto t = [&](int i) { return term(perm[size_t(i)]); };
            return detail::seq_sum<V>(0, n, t);
        }
    }
    return V{};
}

}  // namespace monokda
