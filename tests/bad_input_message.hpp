// Shared by the tests of refused input: the message a refusal gives, to check that it names the problem.
#pragma once
#include <string>

#include "core/error.hpp"

namespace monokda::test {

// The BadInput message of running f, or "" when f accepts its input.
template <class F>
std::string bad_input_message(F&& f) {
    try {
        f();
    } catch (const BadInput& e) {
        return e.what();
    }
    return "";
}

}  // namespace monokda::test
