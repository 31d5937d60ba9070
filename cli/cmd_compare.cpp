// `monokda compare A B`: per-tensor agreement of two result files (max ulp, rel-L2), failing on the
// thresholds asked for.
#include <iostream>
#include <set>

#include "cli/options.hpp"
#include "core/compare.hpp"

namespace monokda::cli {

int cmd_compare(const Args& args) {
    po::options_description opts("monokda compare");
    std::string a, b, exact;
    int64_t max_ulp = -1;
    double rel_l2 = -1;
    opts.add_options()
        ("a", po::value(&a)->required(), "first result file")
        ("b", po::value(&b)->required(), "second result file (the baseline for rel-L2)")
        ("exact", po::value(&exact), "comma-separated tensors that must be bit-identical")
        ("max-ulp", po::value(&max_ulp), "fail if any tensor's max ulp distance exceeds N")
        ("rel-l2", po::value(&rel_l2), "fail if any tensor's rel-L2 exceeds X");
    po::positional_options_description pos;
    pos.add("a", 1).add("b", 1);
    po::variables_map vm;
    if (!parse_args(args, "monokda compare A B [--exact names] [--max-ulp N] [--rel-l2 X]", opts, pos, vm)) return 0;
    if (vm.count("max-ulp")) require_range("--max-ulp", max_ulp, 0);
    if (vm.count("rel-l2")) require_finite_min("--rel-l2", rel_l2, 0);
    TensorFile fa = read_safetensors(a), fb = read_safetensors(b);
    std::set<std::string> must_match;
    for (const std::string& n : comma_list(exact))
        if (!n.empty()) {
            if (!fa.has(n) || !fb.has(n)) bad_input("--exact: tensor '" + n + "' is not in both files");
            must_match.insert(n);
        }
    std::vector<TensorDiff> rows = diff_files(fa, fb);
    std::cout << format_diff_table(rows);
    // a report only, unless a check is asked for: then a NaN against a number fails it too
    const bool checks = !must_match.empty() || vm.count("max-ulp") || vm.count("rel-l2");
    int failures = 0;
    for (const auto& r : rows) {
        std::string why;
        if (r.nan_mismatch && !checks) std::cout << "note " << r.name << ": NaN where the other has a number\n";
        if (r.nan_mismatch && checks) why += " NaN where the other has a number;";
        if (must_match.count(r.name) && r.frac_identical < 1.0) why += " not bit-identical;";
        if (max_ulp >= 0 && r.max_ulp > max_ulp) why += " max ulp " + std::to_string(r.max_ulp) + " > " + std::to_string(max_ulp) + ";";
        if (rel_l2 >= 0 && r.rel_l2 > rel_l2) why += " rel-L2 " + std::to_string(r.rel_l2) + " > " + std::to_string(rel_l2) + ";";
        if (!why.empty()) { std::cout << "FAIL " << r.name << ":" << why << "\n"; ++failures; }
    }
    for (const auto& [n, t] : fa.tensors) if (!fb.has(n)) std::cout << "only in " << a << ": " << n << "\n";
    for (const auto& [n, t] : fb.tensors) if (!fa.has(n)) std::cout << "only in " << b << ": " << n << "\n";
    if (!checks) {
        std::cout << "no checks requested (--exact, --max-ulp, --rel-l2; SPEC §5's checks: monokda verify)\n";
        return 0;
    }
    std::cout << (failures ? "checks FAILED: " + std::to_string(failures) + " tensor(s)\n" : "checks passed\n");
    return failures ? 1 : 0;
}

}  // namespace monokda::cli
