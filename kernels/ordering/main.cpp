// monokda-ptx-ordering: the PTX ordering check of kda_pre (docs/kernel.md, "Memory ordering").
//   summarize KERNEL.ptx [--layout LAYOUT.ptx] [--source NAME] [-o FILE]
//       the kernel's hand-off sites as a summary (stdout, or FILE written whole or not at all)
//   check FILE... [--layout LAYOUT.ptx]
//       each FILE a summary or PTX: every site against kernels/kda_ordering.hpp; one line a
//       violation, named in capitals; exit 1 if any
// Exit 2 on bad input (nothing written).
#include <iostream>
#include <string>
#include <vector>

#include "core/atomic_write.hpp"
#include "core/error.hpp"
#include "core/input_file.hpp"
#include "kernels/ordering/ordering.hpp"

using namespace monokda;

namespace {

constexpr uint64_t kMaxBytes = 256ull << 20;  // the kernel's PTX is ~1.5 MB

const char* kUsage =
    "usage: monokda-ptx-ordering summarize KERNEL.ptx [--layout LAYOUT.ptx] [--source NAME] [-o FILE]\n"
    "       monokda-ptx-ordering check FILE... [--layout LAYOUT.ptx]   (FILE: a summary or PTX)\n";

struct Args {
    std::string command, layout, source, out;
    std::vector<std::string> files;
};

Args parse_args(int argc, char** argv) {
    Args a;
    if (argc < 2) bad_input("no command");
    a.command = argv[1];
    if (a.command != "summarize" && a.command != "check") bad_input("unknown command '" + a.command + "'");
    for (int i = 2; i < argc; ++i) {
        const std::string s = argv[i];
        auto value = [&](std::string& to) {
            if (i + 1 >= argc) bad_input(s + " needs a value");
            if (!to.empty()) bad_input(s + " given twice");
            to = argv[++i];
        };
        if (s == "--layout") value(a.layout);
        else if (s == "--source" && a.command == "summarize") value(a.source);
        else if (s == "-o" && a.command == "summarize") value(a.out);
        else if (!s.empty() && s[0] == '-') bad_input("unknown option '" + s + "' for " + a.command);
        else a.files.push_back(s);
    }
    if (a.files.empty()) bad_input(a.command + " needs a file");
    if (a.command == "summarize" && a.files.size() != 1) bad_input("summarize takes one PTX file");
    return a;
}

ordering::Summary from_ptx(const std::string& path, const std::string& text, const std::string& layout_path,
                           const std::string& source) {
    const ptx::Module m = ptx::parse(text, path);
    ordering::Layout layout;
    if (!layout_path.empty()) {
        const ptx::Module lm = ptx::parse(read_text_file(layout_path, kMaxBytes, "layout PTX"), layout_path);
        layout = ordering::Layout::from(lm, layout_path);
    } else {
        layout = ordering::Layout::from(m, path);
    }
    if (m.fns.empty()) bad_input(path + ": no function in the PTX");
    return ordering::summarize(m, layout, source.empty() ? path : source);
}

int run(const Args& a) {
    if (a.command == "summarize") {
        if (!a.out.empty()) check_outputs({{"-o", a.out}}, {{"KERNEL.ptx", a.files[0]}, {"--layout", a.layout}});
        const std::string text = read_text_file(a.files[0], kMaxBytes, "PTX");
        const std::string s = ordering::format_summary(from_ptx(a.files[0], text, a.layout, a.source));
        if (a.out.empty()) std::cout << s;
        else write_file_atomic(a.out, s);
        return 0;
    }
    size_t violations = 0, sites = 0;
    for (const std::string& f : a.files) {
        const std::string text = read_text_file(f, kMaxBytes, "summary or PTX");
        const ordering::Summary s = text.compare(0, 12, "ptx-ordering") == 0 ? ordering::parse_summary(text, f)
                                                                             : from_ptx(f, text, a.layout, "");
        for (const ordering::Entry& e : s.entries)
            for (const ordering::Site& site : e.sites) sites += size_t(site.n);
        for (const ordering::Violation& v : ordering::check(s)) {
            std::cout << f << ": " << ordering::format_violation(v) << "\n";
            ++violations;
        }
    }
    if (violations) {
        std::cout << violations << " violation(s) of kernels/kda_ordering.hpp\n";
        return 1;
    }
    std::cout << "ordering: " << sites << " hand-off sites, every one as kernels/kda_ordering.hpp requires\n";
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(parse_args(argc, argv));
    } catch (const BadInput& e) {
        std::cerr << "monokda-ptx-ordering: " << e.what() << "\n" << kUsage;
        return 2;
    }
}
