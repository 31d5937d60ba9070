// The run drawn as an SVG timeline (emulator/timeline.hpp): a lane a CTA, a box an instruction.
#include "emulator/timeline.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "core/atomic_write.hpp"
#include "core/error.hpp"
#include "core/version.hpp"

namespace monokda::emu {

namespace {

const char* op_colour(Op op) {
    switch (op) {
        case Op::ATTN_PART: return "#9ecae1";
        case Op::ATTN_GATE: return "#3182bd";
        case Op::ATTN_MIX: return "#6baed6";
        case Op::ATTN_X: return "#08519c";
        case Op::GEMV_PREFETCH: return "#c7e9c0";
        case Op::GEMV_GROUP: return "#31a354";
        case Op::KDA_LOAD: return "#fdd0a2";
        case Op::KDA_CONV: return "#fd8d3c";
        case Op::KDA_REC: return "#d94701";
        case Op::KDA_NORM: return "#8c2d04";
    }
    return "#000";
}

std::string esc(const std::string& s) {
    std::string o;
    for (char c : s) {
        if (c == '<') o += "&lt;";
        else if (c == '>') o += "&gt;";
        else if (c == '&') o += "&amp;";
        else if (c == '"') o += "&quot;";
        else o += c;
    }
    return o;
}

}  // namespace

std::string timeline_svg(const Plan& plan, const MachineResult& r, const std::string& title) {
    const int B = plan.blocks();
    const double lane = B > 64 ? 9 : 16, left = 120, top = 70, width = 1600;
    int64_t tmax = 1;
    for (const Span& s : r.spans) tmax = std::max(tmax, s.t1);
    const double sx = width / double(tmax);
    const double H = top + lane * B + 40;
    auto stepv_next = [](double v) {  // 1, 2, 5, 10, 20, 50, ...
        const double m = v / std::pow(10.0, std::floor(std::log10(v) + 1e-9));
        return m < 1.5 ? 2.0 : m < 3 ? 2.5 : 2.0;
    };
    std::string o;
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %.0f %.0f\" width=\"100%%\" "
                  "font-family=\"monospace\" font-size=\"%.0f\">\n",
                  left + width + 20, H, lane > 10 ? 11.0 : 8.0);
    o += buf;
    o += "<!-- written by " + version_line() + " -->\n";
    o += "<title>" + esc(title) + "</title>\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    std::snprintf(buf, sizeof buf, "<text x=\"10\" y=\"18\" font-size=\"13\">%s</text>\n", esc(title).c_str());
    o += buf;
    // legend: every stage of every role, then the two kinds of waiting
    double lx = 10;
    const Op ops[] = {Op::ATTN_PART, Op::ATTN_GATE, Op::ATTN_MIX,  Op::ATTN_X,   Op::GEMV_PREFETCH,
                      Op::GEMV_GROUP, Op::KDA_LOAD, Op::KDA_CONV, Op::KDA_REC, Op::KDA_NORM};
    for (Op op : ops) {
        std::snprintf(buf, sizeof buf,
                      "<g class=\"legend\" data-role=\"%s\"><rect x=\"%.0f\" y=\"30\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                      "<text x=\"%.0f\" y=\"40\" font-size=\"11\">%s</text></g>\n",
                      to_string(role_of(op)), lx, op_colour(op), lx + 15, to_string(op));
        o += buf;
        lx += 30 + 7.5 * double(std::string(to_string(op)).size());
    }
    std::snprintf(buf, sizeof buf,
                  "<g class=\"legend\"><rect x=\"%.0f\" y=\"30\" width=\"12\" height=\"12\" fill=\"#555\" opacity=\"0.55\"/>"
                  "<text x=\"%.0f\" y=\"40\" font-size=\"11\">spin on a mailbox</text>"
                  "<rect x=\"%.0f\" y=\"30\" width=\"12\" height=\"12\" fill=\"#8e44ad\" opacity=\"0.6\"/>"
                  "<text x=\"%.0f\" y=\"40\" font-size=\"11\">wait for own weight loads</text></g>\n",
                  lx, lx + 15, lx + 150, lx + 165);
    o += buf;
    for (int c = 0; c < B; ++c) {
        const double y = top + lane * c;
        const Role role = plan.first_role(c);
        std::snprintf(buf, sizeof buf,
                      "<g class=\"lane\" data-cta=\"%d\" data-role=\"%s\"><text x=\"4\" y=\"%.1f\">%s %s</text>"
                      "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#eee\"/>\n",
                      c, to_string(role), y + lane - 2, plan.cta_name(c).c_str(), to_string(role), left, y + lane,
                      left + width, y + lane);
        o += buf;
        for (int pass = 0; pass < 2; ++pass)  // runs first, waits drawn over them
            for (const Span& s : r.spans) {
                if (s.cta != c || (pass == 0) != (s.kind == Span::run)) continue;
                const Instr& in = plan.instrs(c)[size_t(s.instr)];
                const double x = left + sx * double(s.t0), w = std::max(0.5, sx * double(s.t1 - s.t0));
                const char* fill = s.kind == Span::run ? op_colour(in.opcode()) : s.kind == Span::wait ? "#555" : "#8e44ad";
                std::snprintf(buf, sizeof buf,
                              "<rect class=\"%s\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\"%s>"
                              "<title>CTA %d %s %s (step %d, t=%lld..%lld)</title></rect>\n",
                              s.kind == Span::run ? "run" : s.kind == Span::wait ? "wait" : "stall", x,
                              y + (s.kind == Span::run ? 1 : 3), w, lane - (s.kind == Span::run ? 2 : 6), fill,
                              s.kind == Span::run ? "" : " opacity=\"0.6\"", c, s.kind == Span::run ? "runs" : s.kind == Span::wait ? "spins in" : "waits for loads in",
                              esc(plan.describe(in)).c_str(), int(s.step), (long long)s.t0, (long long)s.t1);
                o += buf;
            }
        o += "</g>\n";
    }
    // the time axis: a tick and a label every 1, 2 or 5 × 10^k ticks, about ten along the axis
    const double axis = top + lane * B + 4;
    double stepv = 1;
    while (double(tmax) / stepv > 10) stepv *= stepv_next(stepv);
    std::snprintf(buf, sizeof buf, "<g class=\"axis\"><line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#333\"/>\n",
                  left, axis, left + width, axis);
    o += buf;
    for (double t = 0; t <= double(tmax); t += stepv) {
        const double x = left + sx * t;
        std::snprintf(buf, sizeof buf,
                      "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#333\"/>"
                      "<text class=\"tick\" x=\"%.2f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"11\">%.0f</text>\n",
                      x, axis, x, axis + 5, x, axis + 17, t);
        o += buf;
    }
    std::snprintf(buf, sizeof buf, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"11\">ticks (of %lld)</text></g>\n",
                  left - 6, axis + 17, (long long)tmax);
    o += buf;
    o += "</svg>\n";
    return o;
}

void write_timeline(const std::string& path, const Plan& plan, const MachineResult& r, const std::string& title) {
    write_file_atomic(path, timeline_svg(plan, r, title));
}

}  // namespace monokda::emu
