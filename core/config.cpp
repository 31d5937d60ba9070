// The step's dimensions (core/config.hpp): the presets, their validation, and their metadata form.
#include "core/config.hpp"

#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/error.hpp"

namespace monokda {

Config Config::of(const ModelShape& m) {
    Config c;
    c.D = m.D, c.H = m.H, c.K = m.K, c.V = m.V, c.F = m.F, c.W = m.W;
    c.C = m.C();
    c.N = m.N();
    c.eps = m.eps, c.l2_eps = m.l2_eps, c.lower_bound = m.lower_bound;
    c.slots = c.S() + 1;
    return c;
}

Config Config::preset(const std::string& name) {
    if (name == "k3") return of(kProductionShape);
    if (name == "small") return of(kSmallShape);
    bad_input("unknown config preset '" + name + "' (known: k3, small)");
}

bool Config::has_shape(const ModelShape& m) const {
    return D == m.D && H == m.H && K == m.K && V == m.V && F == m.F && N == m.N() && C == m.C() && W == m.W;
}

void Config::validate() const {
    auto need = [](bool ok, const std::string& msg) { if (!ok) bad_input("config: " + msg); };
    need(D > 0 && D <= (1 << 20), "D must be in 1..2^20 (got " + std::to_string(D) + ")");
    need(H > 0 && H <= 1024, "H must be in 1..1024 (got " + std::to_string(H) + ")");
    need(K > 0 && K <= 1024, "K must be in 1..1024 (got " + std::to_string(K) + ")");
    need(V == K, "V must equal K (got V=" + std::to_string(V) + ", K=" + std::to_string(K) + ")");
    need(F > 0 && F <= 4096, "F must be in 1..4096 (got " + std::to_string(F) + ")");
    need(C == 3 * E(), "C must be 3*H*K = " + std::to_string(3 * E()) + " (got " + std::to_string(C) + ")");
    need(N >= min_N() && N <= min_N() + 4096,
         "N must hold q,k,v,g,f_a,beta = " + std::to_string(min_N()) + " rows plus padding (got " +
             std::to_string(N) + ")");
    need(W >= 2 && W <= 16, "W must be in 2..16 (got " + std::to_string(W) + ")");
    need(nb >= 1 && nb <= 8, "nb must be in 1..8 (got " + std::to_string(nb) + ")");
    need(!block_write || nb <= 7, "nb must be <= 7 on a block-write layer (it writes bank row nb)");
    need(R >= 1 && R <= 4096, "R must be in 1..4096 (got " + std::to_string(R) + ")");
    need(L >= 1 && L <= 64, "L must be in 1..64 (got " + std::to_string(L) + ")");
    need(slots >= 1 && slots <= (1 << 24), "slots must be in 1..2^24 (got " + std::to_string(slots) + ")");
    need(std::isfinite(eps) && eps > 0, "eps must be a positive finite number");
    need(std::isfinite(l2_eps) && l2_eps > 0, "l2_eps must be a positive finite number");
    need(std::isfinite(lower_bound), "lower_bound must be finite");
    // sizes must fit the index arithmetic used everywhere (int64 element counts, int32 rows)
    need(int64_t(N) * D < (int64_t(1) << 40) && int64_t(S()) * D * 8 < (int64_t(1) << 40), "tensors too large");
}

static std::string fmt_double(double v) {
    char buf[64];
    snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

std::map<std::string, std::string> Config::to_metadata() const {
    return {
        {"D", std::to_string(D)},   {"H", std::to_string(H)},   {"K", std::to_string(K)},
        {"V", std::to_string(V)},   {"F", std::to_string(F)},   {"N", std::to_string(N)},
        {"C", std::to_string(C)},   {"W", std::to_string(W)},   {"nb", std::to_string(nb)},
        {"R", std::to_string(R)},   {"L", std::to_string(L)},   {"block_write", block_write ? "1" : "0"},
        {"conv_layout", to_string(conv_layout)}, {"eps", fmt_double(eps)}, {"l2_eps", fmt_double(l2_eps)},
        {"lower_bound", fmt_double(lower_bound)}, {"slots", std::to_string(slots)},
        {"seed", std::to_string(seed)},
    };
}

static const std::string& md_get(const std::map<std::string, std::string>& md, const std::string& key) {
    auto it = md.find(key);
    if (it == md.end()) bad_input("fixture metadata: missing key '" + key + "'");
    return it->second;
}

// A number as a writer spells it: strtoll/strtod also take leading blanks and a '+', which no
// writer emits, so " 256" or "+256" is refused rather than read as 256.
static bool plain_number_start(const std::string& s) {
    return !s.empty() && (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-' || s[0] == '.');
}

static long long md_int(const std::map<std::string, std::string>& md, const std::string& key) {
    const std::string& s = md_get(md, key);
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (!plain_number_start(s) || *end != '\0' || errno == ERANGE || v < INT_MIN || v > INT_MAX)
        bad_input("fixture metadata: '" + key + "' is not an integer (got '" + s + "')");
    return v;
}

static double md_double(const std::map<std::string, std::string>& md, const std::string& key) {
    const std::string& s = md_get(md, key);
    errno = 0;
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (!plain_number_start(s) || *end != '\0' || errno == ERANGE)
        bad_input("fixture metadata: '" + key + "' is not a number (got '" + s + "')");
    return v;
}

Config Config::from_metadata(const std::map<std::string, std::string>& md) {
    Config c;
    c.D = int(md_int(md, "D")); c.H = int(md_int(md, "H")); c.K = int(md_int(md, "K"));
    c.V = int(md_int(md, "V")); c.F = int(md_int(md, "F")); c.N = int(md_int(md, "N"));
    c.C = int(md_int(md, "C")); c.W = int(md_int(md, "W")); c.nb = int(md_int(md, "nb"));
    c.R = int(md_int(md, "R")); c.L = int(md_int(md, "L"));
    const std::string& bw = md_get(md, "block_write");
    if (bw == "0" || bw == "false") c.block_write = false;
    else if (bw == "1" || bw == "true") c.block_write = true;
    else bad_input("fixture metadata: 'block_write' must be \"0\" or \"1\" (got '" + bw + "')");
    c.conv_layout = parse_conv_layout(md_get(md, "conv_layout"));
    c.eps = md_double(md, "eps");
    c.l2_eps = md_double(md, "l2_eps");
    c.lower_bound = md_double(md, "lower_bound");
    c.slots = int(md_int(md, "slots"));
    auto it = md.find("seed");  // informational only
    if (it != md.end()) {
        char* end = nullptr;
        unsigned long long v = std::strtoull(it->second.c_str(), &end, 10);
        c.seed = (*end == '\0') ? v : 0;
    }
    c.validate();
    return c;
}

const char* to_string(ConvLayout l) { return l == ConvLayout::sd ? "sd" : "ds"; }

ConvLayout parse_conv_layout(const std::string& s) {
    if (s == "sd") return ConvLayout::sd;
    if (s == "ds") return ConvLayout::ds;
    bad_input("conv_layout must be \"sd\" or \"ds\" (got '" + s + "')");
}

}  // namespace monokda
