// Host-side checks of a kda_pre launch: what the kernel supports and every device tensor view.
// Plain C++ with no device access, so CPU-only builds compile and test it too.
#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "kernels/kda_pre.hpp"
#include "core/plan_policy.hpp"

namespace monokda::gpu {

namespace {

std::string s(int64_t v) { return std::to_string(v); }

std::vector<int64_t> row_major(const std::vector<int64_t>& shape) {
    std::vector<int64_t> st(shape.size(), 1);
    for (size_t i = shape.size(); i-- > 1;) st[i - 1] = st[i] * shape[i];
    return st;
}

// Bytes from the first to one past the last element.
struct Extent {
    uintptr_t lo = 0, hi = 0;
};
Extent extent(const View& v) {
    int64_t last = 0;
    for (size_t i = 0; i < v.shape.size(); ++i) last += (v.shape[i] - 1) * v.strides[i];
    const uintptr_t lo = reinterpret_cast<uintptr_t>(v.data);
    return {lo, lo + uintptr_t(last + 1) * dtype_size(v.dtype)};
}

struct Checked {
    const char* name;
    const View* v;
    bool written;
};

void check_view(const char* name, const View& v, DType dt, const std::vector<int64_t>& shape) {
    if (!v.data) bad_input("tensor '" + std::string(name) + "': null device pointer");
    if (v.dtype != dt)
        bad_input("tensor '" + std::string(name) + "' has dtype " + to_string(v.dtype) + ", expected " + to_string(dt));
    if (v.shape != shape)
        bad_input("tensor '" + std::string(name) + "' has shape " + shape_str(v.shape) + ", expected " + shape_str(shape));
    if (v.strides.size() != shape.size())
        bad_input("tensor '" + std::string(name) + "' has " + s(int64_t(v.strides.size())) + " strides for " +
                  s(int64_t(shape.size())) + " dims");
    if (reinterpret_cast<uintptr_t>(v.data) % 16 != 0)
        bad_input("tensor '" + std::string(name) + "' is not 16-byte aligned (the kernel loads 16 bytes at a time)");
}

void need_contiguous(const char* name, const View& v) {
    if (v.strides != row_major(v.shape))
        bad_input("tensor '" + std::string(name) + "' has strides " + shape_str(v.strides) + ", expected contiguous " +
                  shape_str(row_major(v.shape)));
}

// Outer strides of a view whose last dim is contiguous; each at least the span of what it holds
// and a multiple of `multiple` elements (16-byte rows).
void need_outer(const char* name, const View& v, const std::vector<int64_t>& min_stride, int64_t multiple) {
    if (v.strides.back() != 1)
        bad_input("tensor '" + std::string(name) + "': the last dim must be contiguous (stride " +
                  s(v.strides.back()) + ")");
    for (size_t i = 0; i + 1 < v.strides.size(); ++i) {
        if (v.strides[i] < min_stride[i])
            bad_input("tensor '" + std::string(name) + "': stride " + s(v.strides[i]) + " of dim " + s(int64_t(i)) +
                      " is below " + s(min_stride[i]) + " (rows would overlap)");
        if (v.strides[i] % multiple != 0)
            bad_input("tensor '" + std::string(name) + "': stride " + s(v.strides[i]) + " of dim " + s(int64_t(i)) +
                      " is not a multiple of " + s(multiple) + " elements (16-byte rows)");
    }
}

}  // namespace

Plan device_plan(const Config& cfg, GemvBands bands, int attn_parts, Placement placement) {
    PlanParams p = PlanPolicy::k3_for(cfg, probe().sms);  // one CTA a multiprocessor
    apply_gemv_bands(p, bands);
    if (attn_parts > 0) p.attn_row_parts = std::min(attn_parts, cfg.S());  // a step of one row has one part
    apply_placement(p, cfg, placement);  // the rule again, on the bands and parts chosen above
    return Plan::build(cfg, p);
}

void check_supported(const Config& c) {
    c.validate();
    auto need = [](bool ok, const std::string& what) {
        if (!ok) bad_input("kda_pre kernel: " + what);
    };
    constexpr ModelShape m = kProductionShape;
    need(c.has_shape(m),
         "only the production shape (SPEC §1, preset k3: D " + s(m.D) + ", H " + s(m.H) + ", K = V " + s(m.K) + ", F " +
         s(m.F) + ", N " + s(m.N()) + ", C " + s(m.C()) + ", W " + s(m.W) + ") is built; got D " + s(c.D) + ", H " + s(c.H) + ", K " + s(c.K) + ", V " + s(c.V) + ", F " + s(c.F) + ", N " +
             s(c.N) + ", C " + s(c.C) + ", W " + s(c.W));
    need(c.L >= 1 && c.L <= 8, "L = " + s(c.L) + " is outside 1..8");
    need(c.R >= 1 && c.R <= 64, "R = " + s(c.R) + " is outside 1..64");
    need(c.S() <= 64, "S = R·L = " + s(c.S()) + " exceeds 64");
    need(c.nb >= 1 && c.nb <= 8, "nb = " + s(c.nb) + " is outside 1..8");
    need(!c.block_write || c.nb <= 7, "a block-write layer writes bank row nb, so it needs nb <= 7 (got " + s(c.nb) + ")");
    need(c.slots >= 1, "slots = " + s(c.slots) + " (need at least 1)");
}

void validate_tensors(const Config& c, const KdaTensors& t, bool export_handoffs) {
    check_supported(c);
    const int64_t S = c.S(), D = c.D, E = c.E(), len = c.conv_len();
    std::vector<Checked> all;
    auto add = [&](const char* name, const View& v, DType dt, std::vector<int64_t> shape, bool written) {
        check_view(name, v, dt, shape);
        all.push_back({name, &v, written});
    };
    add("prefix", t.prefix, DType::BF16, {S, D}, false);
    add("delta", t.delta, DType::BF16, {S, D}, false);
    add("prefix_out", t.prefix_out, DType::BF16, {S, D}, true);
    for (auto [name, v] : {std::pair<const char*, const View*>{"prefix", &t.prefix}, {"delta", &t.delta},
                           {"prefix_out", &t.prefix_out}})
        need_outer(name, *v, {D}, 8);
    add("blocks", t.blocks, DType::BF16, {S, 8, D}, c.block_write);
    need_outer("blocks", t.blocks, {8 * std::max<int64_t>(t.blocks.strides[1], D), D}, 8);
    add("res_norm_w", t.res_norm_w, DType::BF16, {D}, false);
    add("res_proj_w", t.res_proj_w, DType::BF16, {D}, false);
    add("input_norm_w", t.input_norm_w, DType::BF16, {D}, false);
    add("in_proj_w", t.in_proj_w, DType::BF16, {c.N, D}, false);
    add("f_b_w", t.f_b_w, DType::BF16, {E, c.F}, false);
    add("conv_w", t.conv_w, DType::F32, {c.C, c.W}, false);
    add("A_log", t.A_log, DType::F32, {c.H}, false);
    add("dt_bias", t.dt_bias, DType::F32, {E}, false);
    add("o_norm_w", t.o_norm_w, DType::BF16, {c.V}, false);
    for (const char* n : {"res_norm_w", "res_proj_w", "input_norm_w", "in_proj_w", "f_b_w", "conv_w", "A_log",
                          "dt_bias", "o_norm_w"})
        for (const Checked& k : all)
            if (std::string(k.name) == n) need_contiguous(n, *k.v);
    add("conv_state", t.conv_state, DType::BF16, c.conv_state_shape(), true);
    {
        const View& v = t.conv_state;
        const std::vector<int64_t> inner = row_major({v.shape[1], v.shape[2]});
        if (v.strides[1] != inner[0] || v.strides[2] != 1)
            bad_input("tensor 'conv_state': a slot must be contiguous (strides " + shape_str(v.strides) + ")");
        if (v.strides[0] < len * c.C)
            bad_input("tensor 'conv_state': slot stride " + s(v.strides[0]) + " is below a slot's " + s(len * c.C) +
                      " elements");
    }
    add("ssm_state", t.ssm_state, DType::F32, {c.slots, c.H, c.V, c.K}, true);
    {
        const View& v = t.ssm_state;
        if (v.strides[1] != c.V * c.K || v.strides[2] != c.K || v.strides[3] != 1)
            bad_input("tensor 'ssm_state': a slot must be contiguous (strides " + shape_str(v.strides) + ")");
        if (v.strides[0] < c.H * c.V * c.K || v.strides[0] % 4 != 0)
            bad_input("tensor 'ssm_state': slot stride " + s(v.strides[0]) + " must be at least " +
                      s(int64_t(c.H) * c.V * c.K) + " and a multiple of 4 elements (16-byte rows)");
    }
    add("state_indices", t.state_indices, DType::I32, {c.R, c.L}, false);
    add("num_accepted", t.num_accepted, DType::I32, {c.R}, false);
    add("core_out", t.core_out, DType::BF16, {S, E}, true);
    add("x", t.x, DType::BF16, {S, D}, true);
    add("proj", t.proj, DType::BF16, {S, c.N}, true);
    add("qkv", t.qkv, DType::BF16, {S, c.C}, true);
    add("g1", t.g1, DType::BF16, {S, E}, true);
    for (const char* n : {"state_indices", "num_accepted", "core_out", "x", "proj", "qkv", "g1"})
        for (const Checked& k : all)
            if (std::string(k.name) == n) need_contiguous(n, *k.v);
    if (export_handoffs) {
        add("o", t.o, DType::BF16, {S, E}, true);
        need_contiguous("o", t.o);
    }

    // A written tensor may share no byte with any other tensor. conv_state and ssm_state may
    // interleave (one page a slot) as long as their elements stay apart.
    for (size_t i = 0; i < all.size(); ++i)
        for (size_t j = i + 1; j < all.size(); ++j) {
            if (!all[i].written && !all[j].written) continue;
            const Extent a = extent(*all[i].v), b = extent(*all[j].v);
            if (a.hi <= b.lo || b.hi <= a.lo) continue;
            const std::string ni = all[i].name, nj = all[j].name;
            if ((ni == "conv_state" && nj == "ssm_state") || (ni == "ssm_state" && nj == "conv_state")) {
                const View& cv = t.conv_state;
                const View& sv = t.ssm_state;
                const int64_t page = cv.strides[0] * 2;
                const int64_t cbytes = len * c.C * 2, sbytes = int64_t(c.H) * c.V * c.K * 4;
                const int64_t off = int64_t(reinterpret_cast<uintptr_t>(sv.data)) -
                                    int64_t(reinterpret_cast<uintptr_t>(cv.data));
                const int64_t rel = ((off % page) + page) % page;
                // same page size, and within a page the ssm bytes sit outside the conv bytes
                if (sv.strides[0] * 4 == page && rel >= cbytes && rel + sbytes <= page) continue;
            }
            bad_input("tensors '" + ni + "' and '" + nj + "' overlap in device memory");
        }
}

}  // namespace monokda::gpu
