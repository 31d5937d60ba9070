// Schedulers of the emulator: which CTA takes the next step, and how long a store takes to become
// visible or a weight load to retire. Every choice comes from one seeded generator, so a run is a
// function of (plan, inputs, schedule, options) and replays exactly.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "core/rng.hpp"

namespace monokda::emu {

struct Schedule {
    enum Kind { random, pct, rr, delay } kind = random;
    uint64_t seed = 1;
    int pct_depth = 3;        // pct: d, the number of priority levels (d - 1 change points)
    bool delay_role = true;   // delay: a whole role (attn, gemv, kda) or one CTA
    Role role = Role::attn;
    int cta = 0;

    // "random" | "pct" | "pct:D" | "rr" | "delay:attn" | "delay:gemv" | "delay:kda" | "delay:cta:N"
    static Schedule parse(const std::string& s);  // BadInput otherwise
    std::string str() const;                      // the form parse() reads
};

class Scheduler {
public:
    virtual ~Scheduler() = default;
    // Picks one of the runnable CTAs (non-empty, ascending). role[i] is the role CTA runnable[i]
    // is executing now.
    virtual int pick(const std::vector<int>& runnable, const std::vector<Role>& role, int64_t step) = 0;
    // Ticks until a store by this CTA becomes visible to other CTAs (plain stores draw independently,
    // so two stores may become visible out of order).
    virtual int64_t store_delay(int cta, Role role) = 0;
    // Ticks until a weight load retires.
    virtual int64_t load_latency(int cta, Role role) = 0;
};

// blocks: CTAs in the launch; est_steps: a guess of the run's length (PCT spreads its change points
// over it).
std::unique_ptr<Scheduler> make_scheduler(const Schedule& s, int blocks, int64_t est_steps);

}  // namespace monokda::emu
