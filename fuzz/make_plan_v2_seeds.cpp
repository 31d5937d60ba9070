// Writes the seeds of the libFuzzer target over kernel v2's plan file reader from plan files as
// `monokda plan --kernel v2` writes them (scripts/fuzz-ci.sh writes those first, so the seeds are of
// the build's own format). Each file twice: compact (no indentation) and without what the reader only
// holds to the tables (each step's text and waits, a role's name, a CTA's shared memory,
// partial_bytes, reduction_order, the version stamps), so that the fuzzer runs hundreds of inputs a
// second rather than tens; and with those descriptions kept for CTA 0, so that their checks are
// seeded too.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/atomic_write.hpp"
#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/plan_v2.hpp"

using namespace monokda;
using json = nlohmann::json;

namespace {

void drop(json& j, std::initializer_list<const char*> keys) {
    for (const char* k : keys) j.erase(k);
}

// the plan without its descriptions, except CTA 0's where `keep_cta0`
json compact(json j, bool keep_cta0) {
    drop(j, {"monokda_version", "monokda_commit", "comment"});
    if (!keep_cta0) drop(j, {"partial_bytes", "reduction_order"});
    json& ctas = j.at("ctas");
    for (size_t k = keep_cta0 ? 1 : 0; k < ctas.size(); ++k) {
        drop(ctas[k], {"smem_bytes"});
        for (json& role : ctas[k].at("roles")) {
            drop(role, {"role"});
            for (json& step : role.at("program")) drop(step, {"step", "waits"});
        }
    }
    return j;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s OUTDIR PLAN_FILE... (plan files of monokda plan --kernel v2)\n", argv[0]);
        return 2;
    }
    try {
        const std::string dir = argv[1];
        check_output_dir("OUTDIR", dir);
        std::vector<NamedPath> inputs, outputs;
        OutputSet out;  // every seed, or none
        for (int i = 2; i < argc; ++i) {
            const std::string file = argv[i];
            inputs.push_back({"PLAN_FILE", file});
            const json j = json::parse(read_text_file(file, size_t(256) << 20, "plan file"));
            if (!j.is_object() || j.value("format", "") != kPlanV2Format) bad_input(file + ": not a kernel v2 plan file");
            std::string stem = file.substr(file.find_last_of('/') + 1);
            stem = stem.substr(0, stem.rfind(".json"));
            for (bool described : {false, true}) {
                outputs.push_back({"a seed", dir + "/" + stem + (described ? "-described" : "") + ".json"});
                out.add(outputs.back().second, compact(j, described).dump());
            }
        }
        check_outputs(outputs, inputs);  // none over a plan file, none twice
        out.commit();
    } catch (const std::exception& e) {  // BadInput, or JSON that does not parse
        std::fprintf(stderr, "%s\n", e.what());
        return 2;
    }
    std::printf("wrote %d kernel v2 plan seeds to %s\n", 2 * (argc - 2), argv[1]);
    return 0;
}
