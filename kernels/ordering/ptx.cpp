// The PTX reader of the ordering check (ptx.hpp): a line scanner for nvcc's output, statements split
// on ';', scope braces and labels peeled, .loc chains resolved as they appear.
#include "kernels/ordering/ptx.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <sstream>
#include <tuple>

#include "core/error.hpp"

namespace monokda::ptx {

namespace {

std::string trim(const std::string& s) {
    const size_t b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return "";
    const size_t e = s.find_last_not_of(" \t\r\n");
    return s.substr(b, e - b + 1);
}

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

bool is_label(const std::string& s) {
    if (s.size() < 2 || s.back() != ':') return false;
    for (size_t i = 0; i + 1 < s.size(); ++i) {
        const char c = s[i];
        if (!(isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.')) return false;
    }
    return true;
}

bool is_terminator(const Instr& in) {
    return !in.parts.empty() && (in.base() == "bra" || in.base() == "ret" || in.base() == "exit");
}

// The body of one function being read: labels and instructions in order, then cut into blocks.
struct BodyReader {
    const std::string& what;
    Module& m;
    Function f;
    int depth = 0;  // scope braces; the body ends where it returns to 0
    std::string pending;
    int pending_line = 0;
    int cur_loc = -1;
    std::map<std::tuple<int, int, int>, int> loc_at;  // (file, line, col) -> latest .loc there
    std::vector<std::pair<std::string, Instr>> items;  // (label, -) or ("", instruction)

    [[noreturn]] void fail(int line, const std::string& why) const {
        bad_input(what + ":" + std::to_string(line) + ": " + why);
    }

    void directive_loc(const std::string& s, int line) {
        // .loc FILE LINE COL[, function_name SYM, inlined_at FILE LINE COL]
        std::istringstream is(s.substr(4));
        Loc l;
        char comma = 0;
        if (!(is >> l.file >> l.line >> l.col)) fail(line, "a .loc without file, line and column");
        std::string word;
        while (is >> comma && comma == ',' && is >> word) {
            if (word == "function_name") {
                is >> l.fn;
                if (!l.fn.empty() && l.fn.back() == ',') l.fn.pop_back(), is.putback(',');
            } else if (word == "inlined_at") {
                int pf = 0, pl = 0, pc = 0;
                if (!(is >> pf >> pl >> pc)) fail(line, "an inlined_at without file, line and column");
                const auto it = loc_at.find({pf, pl, pc});
                l.parent = it == loc_at.end() ? -1 : it->second;
            } else {
                fail(line, "a .loc attribute this reader does not know: '" + word + "'");
            }
        }
        m.locs.push_back(l);
        cur_loc = int(m.locs.size()) - 1;
        loc_at[{l.file, l.line, l.col}] = cur_loc;
    }

    void statement(std::string s, int line, const std::string& marker) {
        s = trim(s);
        if (s.empty()) return;
        if (s[0] == '.') return;  // .reg, .shared, .local, .pragma, .param: declarations
        Instr in;
        in.line = line;
        in.marker = marker;
        in.loc = cur_loc;
        if (s[0] == '@') {
            const size_t sp = s.find_first_of(" \t");
            if (sp == std::string::npos) fail(line, "a guard without an instruction");
            in.guard = s.substr(1, sp - 1);
            s = trim(s.substr(sp));
        }
        const size_t sp = s.find_first_of(" \t");
        in.set_op(s.substr(0, sp));
        if (sp != std::string::npos) in.args = split_operands(s.substr(sp));
        items.push_back({"", in});
    }

    // Peels scope braces and labels off the front of s; false once the body has ended.
    bool peel(std::string& s, int line) {
        for (;;) {
            s = trim(s);
            if (!s.empty() && s[0] == '{') {
                ++depth, s.erase(0, 1);
            } else if (!s.empty() && s[0] == '}') {
                if (--depth == 0) {
                    if (!trim(s.substr(1)).empty()) fail(line, "text after a function's closing brace");
                    return false;
                }
                s.erase(0, 1);
            } else {
                // nvcc puts a label on a line of its own ("$L__BB0_12:"); "shared::cta" is no label
                if (is_label(s)) items.push_back({s.substr(0, s.size() - 1), Instr{}}), s.clear();
                return true;
            }
        }
    }

    // One line of the body; false once the body has ended.
    bool line(const std::string& raw, int n) {
        std::string s = raw, marker;
        const size_t cm = s.find("//");
        if (cm != std::string::npos) {
            const size_t mk = s.find("monokda:", cm);
            if (mk != std::string::npos) marker = trim(s.substr(mk + 8));
            s.erase(cm);
        }
        s = trim(s);
        if (s.empty()) return true;
        if (pending.empty()) {
            if (!peel(s, n)) return false;
            if (s.empty()) return true;
            if (starts_with(s, ".loc")) return directive_loc(s, n), true;
            if (starts_with(s, ".file")) return true;
            pending_line = n;
        }
        pending += (pending.empty() ? "" : " ") + s;
        size_t semi;
        while ((semi = pending.find(';')) != std::string::npos) {
            statement(pending.substr(0, semi), pending_line, marker);
            pending = pending.substr(semi + 1);
            pending_line = n;
            if (!peel(pending, n)) {
                pending.clear();
                return false;
            }
        }
        return true;
    }

    void finish(int line) {
        if (!trim(pending).empty()) fail(line, "a statement without its ';' at the end of a function");
        std::map<std::string, int> at;
        auto open = [&](const std::string& label) {
            f.blocks.push_back(Block{label, {}, {}, {}});
            if (!label.empty()) at[label] = int(f.blocks.size()) - 1;
        };
        open("");
        for (auto& [label, in] : items) {
            if (!label.empty()) {
                if (!f.blocks.back().ins.empty() || !f.blocks.back().label.empty()) open(label);
                else f.blocks.back().label = label, at[label] = int(f.blocks.size()) - 1;
                continue;
            }
            if (!f.blocks.back().ins.empty() && is_terminator(f.blocks.back().ins.back())) open("");
            f.blocks.back().ins.push_back(in);
        }
        for (size_t b = 0; b < f.blocks.size(); ++b) {
            Block& blk = f.blocks[b];
            const Instr* last = blk.ins.empty() ? nullptr : &blk.ins.back();
            const bool falls = !last || !is_terminator(*last) || !last->guard.empty();
            if (last && last->base() == "bra") {
                if (last->args.empty()) fail(last->line, "a branch without a target");
                const auto it = at.find(last->args[0]);
                if (it == at.end()) fail(last->line, "a branch to an unknown label '" + last->args[0] + "'");
                blk.succ.push_back(it->second);
            }
            if (falls && b + 1 < f.blocks.size()) blk.succ.push_back(int(b) + 1);
        }
        for (size_t b = 0; b < f.blocks.size(); ++b)
            for (int s : f.blocks[b].succ) f.blocks[size_t(s)].pred.push_back(int(b));
    }
};

// ".visible .global .align 4 .u32 monokda_layout_flags = 320;" -> globals["monokda_layout_flags"] = 320
void scalar_global(Module& m, const std::string& s) {
    const size_t eq = s.find('=');
    if (eq == std::string::npos || s.find('{') != std::string::npos) return;
    std::istringstream is(s.substr(0, eq));
    std::string tok, name;
    while (is >> tok) name = tok;
    const std::string v = trim(s.substr(eq + 1, s.find(';') - eq - 1));
    char* end = nullptr;
    const long long x = std::strtoll(v.c_str(), &end, 0);
    if (end && *end == 0 && !v.empty()) m.globals[name] = x;
}

// The .b8 bytes of the debug strings: "$L__info_string3:" then ".b8 95,90,...,0" lines.
void debug_strings(Module& m, const std::vector<std::string>& lines, size_t& i) {
    std::string name, text;
    for (; i < lines.size(); ++i) {
        const std::string s = trim(lines[i]);
        if (s == "}") return;
        if (is_label(s)) {
            name = s.substr(0, s.size() - 1), text.clear();
        } else if (starts_with(s, ".b8")) {
            std::istringstream is(s.substr(3));
            std::string num;
            while (std::getline(is, num, ',')) {
                const int c = std::atoi(trim(num).c_str());
                if (c == 0) m.strings[name] = text;
                else text += char(c);
            }
        }
    }
}

}  // namespace

void Instr::set_op(const std::string& o) {
    op = o;
    parts.clear();
    std::string cur;
    for (size_t i = 0; i <= op.size(); ++i) {
        if (i == op.size() || op[i] == '.') {
            parts.push_back(cur), cur.clear();
        } else {
            cur += op[i];
        }
    }
}

bool Instr::has(const std::string& part) const {
    for (const std::string& p : parts)
        if (p == part) return true;
    return false;
}

std::vector<std::string> split_operands(const std::string& s) {
    std::vector<std::string> out;
    std::string cur;
    int nest = 0;
    for (char c : s) {
        if (c == '[' || c == '{' || c == '(') ++nest;
        if (c == ']' || c == '}' || c == ')') --nest;
        if (c == ',' && nest == 0) {
            out.push_back(trim(cur)), cur.clear();
        } else {
            cur += c;
        }
    }
    if (!trim(cur).empty() || !out.empty()) out.push_back(trim(cur));
    return out;
}

std::vector<std::string> registers_of(const std::string& operand) {
    std::vector<std::string> out;
    for (size_t i = 0; i < operand.size(); ++i) {
        if (operand[i] != '%') continue;
        size_t j = i + 1;
        while (j < operand.size() && (isalnum(static_cast<unsigned char>(operand[j])) || operand[j] == '_')) ++j;
        out.push_back(operand.substr(i, j - i));
        i = j - 1;
    }
    return out;
}

Module parse(const std::string& text, const std::string& what) {
    Module m;
    std::vector<std::string> lines;
    {
        std::istringstream is(text);
        std::string l;
        while (std::getline(is, l)) lines.push_back(l);
    }
    bool saw_version = false;
    for (size_t i = 0; i < lines.size(); ++i) {
        const std::string s = trim(lines[i]);
        const int n = int(i) + 1;
        if (starts_with(s, "// Cuda compilation tools")) m.compiler = s.substr(3);
        if (s.empty() || starts_with(s, "//")) continue;
        if (starts_with(s, ".version")) saw_version = true;
        if (starts_with(s, ".section") && s.find(".debug_str") != std::string::npos) {
            ++i;
            debug_strings(m, lines, i);
            continue;
        }
        const bool entry = s.find(".entry ") != std::string::npos, func = s.find(".func ") != std::string::npos;
        if (!entry && !func) {
            if (s.find(".global ") != std::string::npos) scalar_global(m, s);
            continue;
        }
        // the prototype, up to the body's brace (or a ';': a declaration)
        Function f;
        f.entry = entry;
        std::string proto;
        size_t j = i;
        for (; j < lines.size(); ++j) {
            const std::string t = trim(lines[j]);
            if (t == "{") break;
            if (!t.empty() && t.back() == ';' && t.find(".param") == std::string::npos) break;
            proto += " " + t;
        }
        if (j == lines.size()) bad_input(what + ":" + std::to_string(n) + ": a function without a body or ';'");
        {
            // name: the word before the parameter list's '(' (a .func's return list comes first)
            const size_t key = proto.find(entry ? ".entry " : ".func ");
            std::string rest = trim(proto.substr(key + (entry ? 7 : 6)));
            if (!rest.empty() && rest[0] == '(') rest = trim(rest.substr(rest.find(')') + 1));
            f.name = trim(rest.substr(0, rest.find_first_of("( \t")));
            size_t p = 0;
            while ((p = proto.find(".param", p)) != std::string::npos) {
                const size_t close = proto.find_first_of(",)", p);
                std::istringstream ps(proto.substr(p, close - p));
                std::string tok, last;
                while (ps >> tok) last = tok;
                f.params.push_back(last.substr(0, last.find('[')));
                p = close;
            }
            if (!entry) f.params.clear();  // a .func's parameters are not the kernel's arguments
        }
        if (trim(lines[j]) != "{") {  // a declaration
            i = j;
            continue;
        }
        BodyReader r{what, m, f};
        r.depth = 1;
        size_t k = j + 1;
        for (; k < lines.size(); ++k)
            if (!r.line(lines[k], int(k) + 1)) break;
        if (k == lines.size()) bad_input(what + ": function " + f.name + " has no closing brace");
        r.finish(int(k) + 1);
        m.fns.push_back(std::move(r.f));
        i = k;
    }
    if (!saw_version) bad_input(what + ": not PTX (no .version directive)");
    return m;
}

std::string short_name(const std::string& mangled) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
    std::string s = status == 0 && d ? std::string(d.get()) : mangled;
    // drop template arguments and parameter lists; a lambda's "{lambda(int)#1}" becomes "{lambda}"
    std::string out;
    int angle = 0, paren = 0, brace = 0;
    for (size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (angle == 0 && paren == 0 && s.compare(i, 21, "(anonymous namespace)") == 0) {
            i += 20;
            out += "anon";
        } else if (c == '{' && angle == 0 && paren == 0) {
            if (brace++ == 0) out += "{lambda}";
        } else if (c == '}' && brace > 0) {
            --brace;
        } else if (brace > 0) {
        } else if (c == '<') {
            ++angle;
        } else if (c == '>') {
            --angle;
        } else if (c == '(' && angle == 0) {
            ++paren;
        } else if (c == ')' && angle == 0) {
            --paren;
        } else if (angle == 0 && paren == 0) {
            out += c;
        }
    }
    // namespaces: everything up to the last "::" that is followed by a name, keeping Class::method
    std::vector<std::string> parts;
    size_t p = 0, q;
    while ((q = out.find("::", p)) != std::string::npos) parts.push_back(out.substr(p, q - p)), p = q + 2;
    parts.push_back(out.substr(p));
    for (const std::string& part : parts)
        if (part == "{lambda}") return part;
    std::string name = parts.back();
    if (parts.size() >= 2) {
        const std::string& cls = parts[parts.size() - 2];
        if (!cls.empty() && isupper(static_cast<unsigned char>(cls[0]))) name = cls + "::" + name;
    }
    for (char& c : name)
        if (c == ' ') c = '_';
    return name;
}

std::string entry_name(const std::string& mangled) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
    if (status != 0 || !d) return mangled;
    std::string s = d.get();
    const size_t paren = s.rfind('(');
    if (paren != std::string::npos && s.back() == ')') s = s.substr(0, paren);
    const size_t tmpl = s.find('<');
    const size_t ns = s.rfind("::", tmpl == std::string::npos ? std::string::npos : tmpl);
    if (ns != std::string::npos) s = s.substr(ns + 2);
    // "void kda_pre_kernel<true>": a function template's name carries its return type
    const size_t sp = s.rfind(' ', s.find('<'));
    if (sp != std::string::npos && sp < s.find('<')) s = s.substr(sp + 1);
    return s;
}

std::vector<std::string> Module::where(const Function& f, const Instr& in) const {
    std::vector<std::string> chain;
    int l = in.loc;
    for (int depth = 0; l >= 0 && depth < 64; ++depth) {
        const Loc& loc = locs[size_t(l)];
        const auto it = strings.find(loc.fn);
        std::string name = loc.fn.empty() ? "" : it == strings.end() ? loc.fn : short_name(it->second);
        if (!name.empty() && name != "{lambda}" && (chain.empty() || chain.back() != name))
            chain.push_back(name);
        l = loc.parent;
    }
    (void)f;
    return chain;
}

}  // namespace monokda::ptx
