// The libFuzzer target's body over kernel v2's plan file reader (fuzz/plan_v2_reader_check.hpp),
// shared with the unit tests.
#include "fuzz/plan_v2_reader_check.hpp"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "core/error.hpp"
#include "core/plan_file.hpp"
#include "core/plan_v2.hpp"

namespace monokda::fuzz {

namespace {

[[noreturn]] void broken(const std::string& what) {
    std::fprintf(stderr, "plan v2 reader check: %s\n", what.c_str());
    std::abort();
}

// What is done with a plan once read: its checks, the file written again and read back, and the
// flat table of a sound plan. Nothing here may throw.
void use(const PlanV2& p) {
    const bool sound = p.problems().empty();
    const std::string once = p.to_json(false);
    const std::string twice = PlanV2::from_json(once, "rewritten plan").to_json(false);
    if (once != twice) broken("the plan written back and read again writes another file");
    if (sound) read_v2_header(p.serialize());
}

}  // namespace

ReaderVerdict check_plan_v2_bytes(const uint8_t* data, size_t size) {
    ReaderVerdict v;
    v.stage = "plan";
    const std::string text(reinterpret_cast<const char*>(data), size);
    std::string format;
    PlanV2 p;
    try {
        format = plan_file_format(text, "fuzz input");  // how plan check tells v2's file from v1's
        p = PlanV2::from_json(text, "fuzz input");
    } catch (const BadInput& e) {
        v.message = e.what();
        return v;
    } catch (const std::exception& e) {
        broken(std::string("not a BadInput: ") + e.what());
    }
    if (format != kPlanV2Format) broken("read as kernel v2's plan, but plan check would read it as kernel v1's (format \"" + format + "\")");
    try {
        use(p);
    } catch (const std::exception& e) {
        broken(std::string("a plan that read, once used: ") + e.what());
    }
    v.kind = ReaderVerdict::ACCEPTED;
    v.stage.clear();
    return v;
}

}  // namespace monokda::fuzz
