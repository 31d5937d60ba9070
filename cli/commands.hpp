// One entry point per subcommand. Each takes the arguments after its name and returns the exit
// code: 0 ok, 1 a check failed, 2 bad input (BadInput and option errors are mapped by main).
#pragma once
#include <string>
#include <vector>

namespace monokda::cli {

using Args = std::vector<std::string>;

int cmd_fixture(const Args& args);
int cmd_reference(const Args& args);
int cmd_compare(const Args& args);
int cmd_emulate(const Args& args);
int cmd_plan(const Args& args);
int cmd_fuzz(const Args& args);
int cmd_gpu(const Args& args);
int cmd_bench(const Args& args);
int cmd_verify(const Args& args);

}  // namespace monokda::cli
