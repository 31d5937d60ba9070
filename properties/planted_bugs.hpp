// Deliberately wrong targets: the reference with one bug of the kind a fused kernel can have. Each
// property has a bug it must catch (tests/properties), and `monokda fuzz --plant NAME` runs one so
// that detection and shrinking can be seen end to end.
#pragma once
#include <string>
#include <vector>

#include "properties/target.hpp"

namespace monokda::props {

struct PlantedBug {
    const char* name;
    const char* what;       // the bug, in one line
    const char* caught_by;  // the property, or the agreement check (properties/agreement.hpp), written to catch it
    // What a fixture needs to show the bug (core/fixture_gen.hpp); a bug with a need passes every
    // check on the default fixture. Empty: every fixture shows it.
    const char* needs_scale = "";     // a scale profile's name
    bool needs_partial_nulls = false;  // partial null columns
};

const std::vector<PlantedBug>& planted_bugs();
// The reference with the named bug; BadInput for an unknown name.
Target planted_target(const std::string& bug);

}  // namespace monokda::props
