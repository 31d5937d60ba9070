// Errors the CLI maps to exit codes: BadInput is exit 2 (nothing written), anything else is a bug.
#pragma once
#include <stdexcept>
#include <string>

namespace monokda {

struct BadInput : std::runtime_error {
    explicit BadInput(const std::string& what) : std::runtime_error(what) {}
};

[[noreturn]] inline void bad_input(const std::string& what) { throw BadInput(what); }

}  // namespace monokda
