// A program as a target: any command that reads a fixture and writes an output file (SPEC §2's
// names) is run once a step, in a fresh folder, with a time limit. Its exit status is the verdict of
// the run: 0 and a readable output file are outputs; `reject_exit` (77) means "does not take this
// step" (BadInput: a rejected case, a SKIP while shrinking); any other status, a signal, a hang past
// the limit or an unreadable output is a TargetFailure that carries the program's stderr.
#pragma once
#include <string>

#include "properties/target.hpp"

namespace monokda::props {

struct ExecOptions {
    std::string cmd;         // run by /bin/sh -c, {fixture} and {out} replaced by quoted paths
    double timeout_s = 300;  // a run's wall-clock limit; then its process group is killed
    int reject_exit = 77;    // the exit status that says "this step is not for me"
    std::string work_dir;    // where each run's folder is made ("": $TMPDIR, else /tmp)
};

// BadInput for a command without both placeholders or a limit that is not positive.
Target exec_target(const ExecOptions& opt);

// `cmd` as one shell word ('...'), for the replay line.
std::string shell_quote(const std::string& s);

// An output file as StepOutputs<float>: every output of SPEC §2 present with its dtype and shape for
// `cfg`. BadInput names the first problem.
StepOutputs<float> outputs_from_file(const TensorFile& f, const Config& cfg);

}  // namespace monokda::props
