// Shared Boost.Program_options plumbing: parse, print --help, turn option errors into BadInput.
#pragma once
#include <boost/program_options.hpp>
#include <iostream>
#include <string>

#include "cli/commands.hpp"
#include "core/error.hpp"

namespace monokda::cli {

namespace po = boost::program_options;

// Returns false (after printing usage) when --help was given.
inline bool parse_args(const Args& args, const std::string& usage, po::options_description& opts,
                       const po::positional_options_description& pos, po::variables_map& vm) {
    opts.add_options()("help,h", "show this help");
    try {
        po::store(po::command_line_parser(args).options(opts).positional(pos).run(), vm);
        if (vm.count("help")) {
            std::cout << "usage: " << usage << "\n\n" << opts << "\n";
            return false;
        }
        po::notify(vm);
    } catch (const po::error& e) {
        bad_input(std::string(e.what()) + " (usage: " + usage + ")");
    }
    return true;
}

}  // namespace monokda::cli
