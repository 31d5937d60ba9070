// The emulator's schedulers (emulator/schedule.hpp): which CTA steps next, and store and load delays,
// all from one seeded generator.
#include "emulator/schedule.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "core/error.hpp"

namespace monokda::emu {

static int parse_int(const std::string& s, const std::string& whole, int lo, int hi) {
    errno = 0;
    char* end = nullptr;
    long v = std::strtol(s.c_str(), &end, 10);
    if (s.empty() || *end || errno == ERANGE || v < lo || v > hi)
        bad_input("--schedule: bad number in '" + whole + "' (expected " + std::to_string(lo) + ".." +
                  std::to_string(hi) + ")");
    return int(v);
}

Schedule Schedule::parse(const std::string& s) {
    Schedule r;
    if (s == "random") r.kind = random;
    else if (s == "rr") r.kind = rr;
    else if (s == "pct") r.kind = pct;
    else if (s.rfind("pct:", 0) == 0) { r.kind = pct; r.pct_depth = parse_int(s.substr(4), s, 1, 64); }
    else if (s == "delay:attn" || s == "delay:gemv" || s == "delay:kda") {
        r.kind = delay;
        r.role = s == "delay:attn" ? Role::attn : s == "delay:gemv" ? Role::gemv : Role::kda;
    } else if (s.rfind("delay:cta:", 0) == 0) {
        r.kind = delay;
        r.delay_role = false;
        r.cta = parse_int(s.substr(10), s, 0, 65535);
    } else {
        bad_input("--schedule must be random, pct, pct:D, rr, delay:attn|gemv|kda or delay:cta:N (got '" + s + "')");
    }
    return r;
}

std::string Schedule::str() const {
    switch (kind) {
        case random: return "random";
        case rr: return "rr";
        case pct: return pct_depth == 3 ? "pct" : "pct:" + std::to_string(pct_depth);
        case delay: return delay_role ? std::string("delay:") + to_string(role) : "delay:cta:" + std::to_string(cta);
    }
    return "?";
}

namespace {

// Delays scale with the launch: with B CTAs taking turns, a CTA steps about once every B ticks, so
// a delay of up to 2B lets a store overtake several steps of its reader.
struct RandomScheduler : Scheduler {
    Rng rng;
    int blocks;
    RandomScheduler(uint64_t seed, int b) : rng(seed), blocks(b) {}
    int pick(const std::vector<int>& run, const std::vector<Role>&, int64_t) override {
        return run[size_t(rng.below(run.size()))];
    }
    int64_t store_delay(int, Role) override {
        int64_t d = int64_t(rng.below(uint64_t(2 * blocks + 1)));
        if (rng.below(32) == 0) d *= 4;  // now and then a store lingers much longer
        return d;
    }
    int64_t load_latency(int, Role) override { return blocks + int64_t(rng.below(uint64_t(3 * blocks + 1))); }
};

// PCT (Burckhardt et al.): random distinct priorities, the highest runnable CTA runs; at d - 1
// random steps the running CTA drops below every initial priority. A spinning CTA yields, so it
// is not runnable until something it could observe changes (the machine decides that).
struct PctScheduler : RandomScheduler {
    std::vector<int64_t> prio;
    std::vector<int64_t> change_at;
    int changes_done = 0;
    PctScheduler(uint64_t seed, int b, int depth, int64_t est) : RandomScheduler(seed, b), prio(size_t(b)) {
        std::vector<int64_t> p(static_cast<size_t>(b));
        for (int i = 0; i < b; ++i) p[size_t(i)] = depth + i;  // initial priorities above every change level
        rng.shuffle(p);
        prio = p;
        for (int i = 0; i < depth - 1; ++i) change_at.push_back(int64_t(rng.below(uint64_t(std::max<int64_t>(1, est)))));
        std::sort(change_at.begin(), change_at.end());
    }
    int pick(const std::vector<int>& run, const std::vector<Role>&, int64_t step) override {
        int best = run[0];
        for (int c : run)
            if (prio[size_t(c)] > prio[size_t(best)]) best = c;
        while (changes_done < int(change_at.size()) && change_at[size_t(changes_done)] <= step) {
            prio[size_t(best)] = int64_t(change_at.size()) - changes_done;  // below every initial priority
            ++changes_done;
            best = run[0];
            for (int c : run)
                if (prio[size_t(c)] > prio[size_t(best)]) best = c;
        }
        return best;
    }
};

// Round-robin in CTA order; stores and loads take a fixed time, so the run is the plain interleaving.
struct RoundRobinScheduler : Scheduler {
    int last = -1, blocks;
    explicit RoundRobinScheduler(int b) : blocks(b) {}
    int pick(const std::vector<int>& run, const std::vector<Role>&, int64_t) override {
        auto it = std::upper_bound(run.begin(), run.end(), last);
        last = it == run.end() ? run[0] : *it;
        return last;
    }
    int64_t store_delay(int, Role) override { return blocks / 2; }
    int64_t load_latency(int, Role) override { return 2 * int64_t(blocks); }
};

// Random, except that the delayed CTAs (a role, or one CTA) run only when nothing else can, and
// their stores and loads take the longest time the random scheduler ever draws.
struct DelayScheduler : RandomScheduler {
    Schedule s;
    DelayScheduler(const Schedule& sc, int b) : RandomScheduler(sc.seed, b), s(sc) {}
    bool delayed(int cta, Role role) const { return s.delay_role ? role == s.role : cta == s.cta; }
    std::vector<int> fast;  // scratch: the runnable CTAs not delayed
    int pick(const std::vector<int>& run, const std::vector<Role>& role, int64_t step) override {
        fast.clear();
        for (size_t i = 0; i < run.size(); ++i)
            if (!delayed(run[i], role[i])) fast.push_back(run[i]);
        return RandomScheduler::pick(fast.empty() ? run : fast, role, step);
    }
    int64_t store_delay(int cta, Role role) override {
        int64_t d = RandomScheduler::store_delay(cta, role);
        return delayed(cta, role) ? 8 * int64_t(blocks) : d;
    }
    int64_t load_latency(int cta, Role role) override {
        int64_t d = RandomScheduler::load_latency(cta, role);
        return delayed(cta, role) ? 4 * int64_t(blocks) : d;
    }
};

}  // namespace

std::unique_ptr<Scheduler> make_scheduler(const Schedule& s, int blocks, int64_t est_steps) {
    switch (s.kind) {
        case Schedule::random: return std::make_unique<RandomScheduler>(s.seed, blocks);
        case Schedule::pct: return std::make_unique<PctScheduler>(s.seed, blocks, s.pct_depth, est_steps);
        case Schedule::rr: return std::make_unique<RoundRobinScheduler>(blocks);
        case Schedule::delay: return std::make_unique<DelayScheduler>(s, blocks);
    }
    return nullptr;
}

}  // namespace monokda::emu
