// monokda: one CLI over the reference, the emulator, the GPU kernel and the checks.
#include <cstring>
#include <exception>
#include <iostream>
#include <map>

#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/version.hpp"

using namespace monokda::cli;

namespace {

struct Command {
    int (*run)(const Args&);
    const char* summary;
};

const std::map<std::string, Command>& commands() {
    static const std::map<std::string, Command> table = {
        {"fixture", {cmd_fixture, "write a deterministic step fixture (safetensors)"}},
        {"reference", {cmd_reference, "run the original path (SPEC §3) on a fixture"}},
        {"compare", {cmd_compare, "compare two result files tensor by tensor"}},
        {"plan", {cmd_plan, "write the built-in CTA plan as a plan file, or check one (plan check FILE)"}},
        {"emulate", {cmd_emulate, "run the mono kernel's CTA plan on the CPU and check its protocol"}},
        {"fuzz", {cmd_fuzz, "fuzz a target (reference, emulator, gpu) against the reference and the properties"}},
        {"gpu", {cmd_gpu, "run the kda_pre kernel on a fixture (needs a GPU build and device)"}},
        {"bench", {cmd_bench, "time the fused kernel, the unfused chain and the floor on the GPU"}},
        {"verify", {cmd_verify, "check an implementation's outputs against SPEC §5, one verdict a check"}},
    };
    return table;
}

void usage(std::ostream& os) {
    os << "usage: monokda <command> [options]   (monokda <command> --help for each)\n\ncommands:\n";
    for (const auto& [name, c] : commands()) os << "  " << name << std::string(12 - name.size(), ' ') << c.summary << "\n";
    os << "\nexit codes: 0 ok, 1 a check failed, 2 bad input\n" << monokda::version_line() << " (--version)\n";
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) { usage(std::cerr); return 2; }
    std::string name = argv[1];
    if (name == "--help" || name == "-h" || name == "help") { usage(std::cout); return 0; }
    if (name == "--version" || name == "version") { std::cout << monokda::version_line() << "\n"; return 0; }
    auto it = commands().find(name);
    if (it == commands().end()) {
        std::cerr << "monokda: unknown command '" << name << "'\n";
        usage(std::cerr);
        return 2;
    }
    try {
        return it->second.run(Args(argv + 2, argv + argc));
    } catch (const monokda::BadInput& e) {
        std::cerr << "monokda " << name << ": error: " << e.what() << "\n";
        return 2;
    } catch (const std::bad_alloc&) {
        std::cerr << "monokda " << name << ": error: out of memory (input too large?)\n";
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "monokda " << name << ": internal error: " << e.what() << "\n";
        return 3;
    }
}
