// Reduction orders (core/reduction_order.hpp): their text forms, parsed and printed, site by site.
#include "core/reduction_order.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <mutex>
#include <numeric>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace monokda {

const char* to_string(Site s) {
    static const char* names[kSiteCount] = {"attn_sumsq", "attn_dot", "softmax_den", "mix", "x_sumsq", "in_proj",
                                            "f_b",        "l2_q",     "l2_k",        "rec_kS", "rec_oq", "onorm_sumsq"};
    return names[int(s)];
}

std::string OrderSpec::str() const {
    switch (kind) {
        case sequential: return "sequential";
        case pairwise: return "pairwise";
        case split: return "split:" + std::to_string(parts);
        case cluster: return "cluster:" + std::to_string(parts);
        case shuffle: return "shuffle:" + std::to_string(seed);
    }
    return "?";
}

static uint64_t parse_u64(const std::string& s, const std::string& whole) {
    errno = 0;
    char* end = nullptr;
    unsigned long long v = std::strtoull(s.c_str(), &end, 10);
    if (s.empty() || *end || errno == ERANGE || s[0] == '-')
        bad_input("--order: bad number in '" + whole + "'");
    return v;
}

// One order for every site: "sequential" | "pairwise" | "split:P" | "shuffle:SEED".
static OrderSpec parse_one(const std::string& s) {
    OrderSpec o;
    if (s == "sequential") o.kind = OrderSpec::sequential;
    else if (s == "pairwise") o.kind = OrderSpec::pairwise;
    else if (s.rfind("split:", 0) == 0) {
        o.kind = OrderSpec::split;
        uint64_t p = parse_u64(s.substr(6), s);
        if (p < 1 || p > 65536) bad_input("--order: split parts must be in 1..65536 (got '" + s + "')");
        o.parts = int(p);
    } else if (s.rfind("cluster:", 0) == 0) {
        o.kind = OrderSpec::cluster;
        uint64_t p = parse_u64(s.substr(8), s);
        if (p < 1 || p > 65536) bad_input("--order: cluster parts must be in 1..65536 (got '" + s + "')");
        o.parts = int(p);
    } else if (s.rfind("shuffle:", 0) == 0) {
        o.kind = OrderSpec::shuffle;
        o.seed = parse_u64(s.substr(8), s);
    } else {
        bad_input("--order must be sequential, pairwise, split:P, cluster:P or shuffle:SEED, or SITE=ORDER,... (got '" + s +
                  "')");
    }
    return o;
}

ReductionOrder ReductionOrder::parse(const std::string& s) {
    if (s.find('=') == std::string::npos) return uniform(parse_one(s));
    // per site, as str() writes a mixed order (a plan's): "attn_sumsq=split:56,attn_dot=split:56,..."
    ReductionOrder r;
    std::array<bool, kSiteCount> named{};
    size_t pos = 0;
    while (pos <= s.size()) {
        const size_t end = std::min(s.find(',', pos), s.size());
        const std::string item = s.substr(pos, end - pos);
        const size_t eq = item.find('=');
        if (eq == std::string::npos) bad_input("--order: '" + item + "' in '" + s + "' is not SITE=ORDER");
        const std::string site = item.substr(0, eq);
        int k = 0;
        while (k < kSiteCount && site != to_string(Site(k))) ++k;
        if (k == kSiteCount) {
            std::string names;
            for (int i = 0; i < kSiteCount; ++i) names += std::string(i ? ", " : "") + to_string(Site(i));
            bad_input("--order: unknown site '" + site + "' (sites: " + names + ")");
        }
        if (named[size_t(k)]) bad_input("--order: site '" + site + "' named twice in '" + s + "'");
        named[size_t(k)] = true;
        r.set(Site(k), parse_one(item.substr(eq + 1)));
        pos = end + 1;
    }
    return r;  // sites not named stay sequential
}

ReductionOrder ReductionOrder::uniform(const OrderSpec& o) {
    ReductionOrder r;
    r.spec_.fill(o);
    return r;
}

std::string ReductionOrder::str() const {
    bool same = true;
    for (const auto& s : spec_) same = same && s.str() == spec_[0].str();
    if (same) return spec_[0].str();
    std::string out;
    for (int i = 0; i < kSiteCount; ++i) out += std::string(i ? "," : "") + to_string(Site(i)) + "=" + spec_[size_t(i)].str();
    return out;
}

struct ReductionOrder::Cache {
    std::mutex mu;
    std::map<std::tuple<int, uint64_t, int>, std::unique_ptr<std::vector<int>>> perms;
};

std::shared_ptr<ReductionOrder::Cache> ReductionOrder::make_cache() { return std::make_shared<Cache>(); }

const std::vector<int>& ReductionOrder::permutation(Site site, uint64_t seed, int n) const {
    std::lock_guard<std::mutex> lock(cache_->mu);
    auto key = std::make_tuple(int(site), seed, n);
    auto& slot = cache_->perms[key];
    if (!slot) {
        slot = std::make_unique<std::vector<int>>(size_t(n));
        std::iota(slot->begin(), slot->end(), 0);
        Rng rng(seed ^ (uint64_t(int(site) + 1) * 0x51afd7ed558ccd1dull) ^ uint64_t(n));
        rng.shuffle(*slot);
    }
    return *slot;
}

}  // namespace monokda
