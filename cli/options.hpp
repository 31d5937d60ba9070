// Shared Boost.Program_options plumbing: parse, print --help, turn option errors into BadInput;
// and the value checks every subcommand makes the same way (lists, whole numbers, ranges).
#pragma once
#include <boost/program_options.hpp>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <climits>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <typeinfo>
#include <vector>

#include "cli/commands.hpp"
#include "core/atomic_write.hpp"
#include "core/error.hpp"

namespace monokda::cli {

namespace po = boost::program_options;

// Returns false (after printing usage) when --help was given.
inline bool parse_args(const Args& args, const std::string& usage, po::options_description& opts,
                       const po::positional_options_description& pos, po::variables_map& vm) {
    opts.add_options()("help,h", "show this help");
    try {
        const po::parsed_options parsed = po::command_line_parser(args).options(opts).positional(pos).run();
        po::store(parsed, vm);
        if (vm.count("help")) {
            std::cout << "usage: " << usage << "\n\n" << opts << "\n";
            return false;
        }
        po::notify(vm);
        // Boost reads "-1" into an unsigned option as 2^64 - 1: an unsigned value must be spelt in digits
        for (const po::option& o : parsed.options) {
            if (o.string_key.empty() || !vm.count(o.string_key)) continue;
            const std::type_info& t = vm[o.string_key].value().type();
            if (t != typeid(unsigned) && t != typeid(unsigned long) && t != typeid(unsigned long long)) continue;
            for (const std::string& v : o.value)
                if (v.empty() || !std::isdigit(static_cast<unsigned char>(v[0])))
                    bad_input("--" + o.string_key + " must be a whole number >= 0 (got '" + v + "')");
        }
    } catch (const po::error& e) {
        bad_input(std::string(e.what()) + " (usage: " + usage + ")");
    }
    return true;
}

// The items of a comma-separated option value, in order and as written: "a,,b" has an empty item,
// which each caller skips or refuses; a trailing comma adds none.
inline std::vector<std::string> comma_list(const std::string& value) {
    std::vector<std::string> items;
    std::stringstream ss(value);
    for (std::string item; std::getline(ss, item, ',');) items.push_back(item);
    return items;
}

// The whole number `text` spells (an option's value, or a part of one), or nothing where it spells
// none: empty, other characters after the digits, or beyond long. The caller's message names the option.
inline std::optional<long> parse_int(const std::string& text) {
    // strtol also takes leading blanks and a '+': " 5" and "+5" are not how a number is written here
    if (text.empty() || !(std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '-')) return std::nullopt;
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(text.c_str(), &end, 10);
    if (*end || errno == ERANGE) return std::nullopt;
    return v;
}

// BadInput, naming the option and its value, unless lo <= value <= hi (no hi: no upper bound).
inline void require_range(const std::string& option, long long value, long long lo, long long hi = LLONG_MAX) {
    if (value >= lo && value <= hi) return;
    const std::string range = hi == LLONG_MAX ? ">= " + std::to_string(lo) : "in " + std::to_string(lo) + ".." + std::to_string(hi);
    bad_input(option + " must be " + range + " (got " + std::to_string(value) + ")");
}

// BadInput naming the option unless value is a finite number >= lo (NaN and infinities refused).
inline void require_finite_min(const std::string& option, double value, double lo) {
    if (std::isfinite(value) && value >= lo) return;
    std::ostringstream os;
    os << option << " must be a finite number >= " << lo << " (got " << value << ")";
    bad_input(os.str());
}

}  // namespace monokda::cli
