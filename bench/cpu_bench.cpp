// monokda-bench-cpu: the CPU side of issue 6. Times whole `monokda` commands on the production shape
// (process start to exit, median of repeated runs after one untimed warm-up that fills the page
// cache), and renders the GPU results (with these) as markdown and SVG on a machine without a GPU.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "bench/perf_report.hpp"
#include "cli/options.hpp"
#include "core/atomic_write.hpp"

namespace fs = std::filesystem;
using namespace monokda;

namespace {

// Runs a shell command; its exit status, or -1 when it did not exit normally.
int run_shell(const std::string& cmd) {
    const int st = std::system(cmd.c_str());
    if (st == -1 || !WIFEXITED(st)) return -1;
    return WEXITSTATUS(st);
}

double cpu_seconds_of_children() {
    rusage u{};
    getrusage(RUSAGE_CHILDREN, &u);
    return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// Wall seconds of one run; cpu gets the run's user + system seconds (all its threads), which other
// work on the machine inflates far less than the wall time.
double time_shell(const std::string& cmd, double* cpu = nullptr) {
    const double c0 = cpu_seconds_of_children();
    const auto t0 = std::chrono::steady_clock::now();
    const int rc = run_shell(cmd);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rc != 0) throw std::runtime_error("command failed (exit " + std::to_string(rc) + "): " + cmd);
    if (cpu) *cpu = cpu_seconds_of_children() - c0;
    return s;
}

std::string cpu_model() {
    std::ifstream f("/proc/cpuinfo");
    for (std::string line; std::getline(f, line);)
        if (line.rfind("model name", 0) == 0) {
            auto p = line.find(':');
            if (p != std::string::npos) return line.substr(p + 2);
        }
    return "unknown CPU";
}


nlohmann::json read_json(const std::string& path) {
    std::ifstream f(path);
    if (!f) bad_input("cannot read " + path);
    try {
        return nlohmann::json::parse(f);
    } catch (const nlohmann::json::exception& e) {
        bad_input(path + ": " + e.what());
    }
}

bench::CpuBenchRow measure(const std::string& what, const std::string& cmd, const std::string& shown, int reps,
                           double target_s) {
    bench::CpuBenchRow r;
    r.what = what;
    r.command = shown;
    r.target_s = target_s;
    time_shell(cmd + " >/dev/null");  // warm-up: page cache, dynamic loading
    for (int i = 0; i < reps; ++i) {
        double cpu = 0;
        r.runs_s.push_back(time_shell(cmd + " >/dev/null", &cpu));
        r.cpu_s.push_back(cpu);
    }
    r.median_s = bench::median(r.runs_s);
    return r;
}

int run(int argc, char** argv) {
    cli::po::options_description opts("monokda-bench-cpu");
    std::string monokda, workdir, commit, out, render, cpu_json, md, svg, emulate;
    int reps = 7;
    opts.add_options()
        ("monokda", cli::po::value(&monokda), "the monokda binary (default: beside this program)")
        ("reps", cli::po::value(&reps)->default_value(7), "timed runs of each command (median)")
        ("workdir", cli::po::value(&workdir)->default_value("bench-cpu-work"), "scratch folder for fixtures and outputs")
        ("commit", cli::po::value(&commit)->default_value("unknown"), "commit recorded in the results")
        ("emulate", cli::po::value(&emulate)->default_value("emulate"),
         "the emulator's default production run, as monokda arguments ({fixture}, {out} substituted; default: `monokda emulate`, its built-in k3 R=2 L=4 nb=4 step)")
        ("output,o", cli::po::value(&out), "CPU results JSON (and .md beside it)")
        ("render", cli::po::value(&render), "instead: render a GPU -detail.json (with --cpu) to --md/--svg")
        ("cpu", cli::po::value(&cpu_json), "with --render: CPU results JSON to include")
        ("md", cli::po::value(&md), "with --render: markdown output")
        ("svg", cli::po::value(&svg), "with --render: SVG output");
    cli::po::variables_map vm;
    cli::Args args(argv + 1, argv + argc);
    if (!cli::parse_args(args, "monokda-bench-cpu [--reps 7] [-o perf-cpu.json] | --render DETAIL.json [--cpu CPU.json] --md OUT.md --svg OUT.svg",
                         opts, {}, vm))
        return 0;

    if (!render.empty()) {
        const bench::PerfRun gpu = bench::perf_from_detail_json(read_json(render));
        bench::CpuBench cpu;
        if (!cpu_json.empty()) cpu = bench::cpu_from_json(read_json(cpu_json));
        if (md.empty() && svg.empty()) bad_input("--render needs --md and/or --svg");
        if (!md.empty()) write_file_atomic(md, bench::perf_markdown(gpu, cpu_json.empty() ? nullptr : &cpu));
        if (!svg.empty()) write_file_atomic(svg, bench::perf_svg(gpu));
        std::cout << "rendered " << render << "\n";
        return 0;
    }

    if (reps < 1) bad_input("--reps must be >= 1");
    if (monokda.empty()) monokda = (fs::path(argv[0]).parent_path().parent_path() / "monokda").string();
    if (!fs::exists(monokda)) bad_input("monokda binary not found at " + monokda + " (give --monokda)");
    fs::create_directories(workdir);
    const std::string fixture = (fs::path(workdir) / "k3.safetensors").string();
    const std::string fixture_args = "fixture --config k3 --R 2 --L 4 --nb 4";
    if (run_shell(monokda + " " + fixture_args + " -o " + fixture + " >/dev/null") != 0)
        throw std::runtime_error("cannot write the production fixture");

    bench::CpuBench b;
    b.host = cpu_model();
    b.cores = int(std::thread::hardware_concurrency());
    b.commit = commit;
    b.date = bench::utc_now();
    {
        std::ifstream la("/proc/loadavg");
        std::string a1, a5, a15;
        if (la >> a1 >> a5 >> a15) b.loadavg = a1 + " " + a5 + " " + a15;
    }

    const std::string ref_out = (fs::path(workdir) / "reference.safetensors").string();
    b.rows.push_back(measure("reference, production shape (k3, R=2 L=4 nb=4)",
                             monokda + " reference " + fixture + " -o " + ref_out,
                             "monokda reference k3.safetensors -o out.safetensors  (fixture: monokda " + fixture_args + ")",
                             reps, 0.5));

    // the emulator's default production run, if this tree has the emulator
    std::string emu = emulate, emu_out = (fs::path(workdir) / "emulate.safetensors").string();
    for (auto [key, val] : {std::pair<std::string, std::string>{"{fixture}", fixture}, {"{out}", emu_out}})
        for (size_t p; (p = emu.find(key)) != std::string::npos;) emu.replace(p, key.size(), val);
    std::string shown = emulate;
    for (auto [key, val] : {std::pair<std::string, std::string>{"{fixture}", "k3.safetensors"}, {"{out}", "out.safetensors"}})
        for (size_t p; (p = shown.find(key)) != std::string::npos;) shown.replace(p, key.size(), val);
    if (run_shell(monokda + " emulate --help >/dev/null 2>&1") == 0) {
        b.rows.push_back(measure("emulator, default production run", monokda + " " + emu, "monokda " + shown, reps, 2.0));
    } else {
        bench::CpuBenchRow r;
        r.what = "emulator, default production run";
        r.command = "monokda " + shown;
        r.target_s = 2.0;
        r.measured = false;
        r.note = "not measured: this monokda has no 'emulate' command";
        b.rows.push_back(r);
    }

    for (const auto& r : b.rows)
        std::cout << r.what << ": " << (r.measured ? std::to_string(r.median_s) + " s (median of " +
                                                         std::to_string(r.runs_s.size()) + ")"
                                                   : r.note)
                  << "\n";
    if (!out.empty()) {
        write_file_atomic(out, bench::cpu_json(b).dump(2) + "\n");
        const std::string mdp = bench::json_sibling(out, ".md");
        write_file_atomic(mdp, "# CPU benchmarks\n\n" + bench::cpu_markdown(b).substr(std::string("## CPU benchmarks\n\n").size()));
        std::cout << "wrote " << out << " and " << mdp << "\n";
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const BadInput& e) {
        std::cerr << "monokda-bench-cpu: error: " << e.what() << "\n";
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "monokda-bench-cpu: " << e.what() << "\n";
        return 1;
    }
}
