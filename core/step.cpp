// The tensors of one step (core/step.hpp): the output list, a fixture read and validated, and both
// written as tensor files.
#include "core/step.hpp"

#include <climits>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include <unordered_set>

#include "core/error.hpp"

namespace monokda {

const std::vector<std::string>& output_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> n;
        for_each_output<float>(Config{}, [&](const char* name, DType, const std::vector<int64_t>&, auto) { n.push_back(name); });
        if (n.size() != size_t(kOutputCount)) throw std::logic_error("kOutputCount is not for_each_output's count");
        return n;
    }();
    return names;
}

namespace {

// Index tensors written as PyTorch writes them (I64) read as the I32 SPEC §2 names, value by value.
std::vector<int32_t> narrow_index(const Tensor& t, const std::string& name) {
    std::vector<int32_t> out;
    for (int64_t v : t.as<int64_t>()) {
        if (v < INT32_MIN || v > INT32_MAX)
            bad_input("tensor '" + name + "' (I64) holds " + std::to_string(v) + ", outside the I32 range");
        out.push_back(int32_t(v));
    }
    return out;
}

}  // namespace

template <class T>
std::vector<T> take_tensor(const TensorFile& f, const std::string& name, DType dt, const std::vector<int64_t>& shape) {
    const Tensor& t = f.get(name);
    const bool index64 = std::is_same_v<T, int32_t> && dt == DType::I32 && t.dtype == DType::I64;
    if (t.dtype != dt && !index64)
        bad_input("tensor '" + name + "' has dtype " + to_string(t.dtype) + ", expected " + to_string(dt));
    if (t.shape != shape)
        bad_input("tensor '" + name + "' has shape " + t.shape_str() + ", expected " + shape_str(shape));
    if constexpr (std::is_same_v<T, int32_t>)
        if (index64) return narrow_index(t, name);
    return t.as<T>();
}

template std::vector<bf16> take_tensor<bf16>(const TensorFile&, const std::string&, DType, const std::vector<int64_t>&);
template std::vector<float> take_tensor<float>(const TensorFile&, const std::string&, DType, const std::vector<int64_t>&);
template std::vector<int32_t> take_tensor<int32_t>(const TensorFile&, const std::string&, DType, const std::vector<int64_t>&);

void StepInputs::validate_step() const {
    const Config& c = cfg;
    std::unordered_set<int32_t> seen;
    for (int r = 0; r < c.R; ++r) {
        for (int t = 0; t < c.L; ++t) {
            int32_t s = idx(r, t);
            if (s <= 0) continue;
            if (s >= c.slots)
                bad_input("state_indices[" + std::to_string(r) + "][" + std::to_string(t) + "] = " +
                          std::to_string(s) + " is out of range (slots = " + std::to_string(c.slots) + ")");
            if (!seen.insert(s).second)
                bad_input("state_indices: slot " + std::to_string(s) + " appears more than once (at [" +
                          std::to_string(r) + "][" + std::to_string(t) + "])");
        }
        int32_t a = num_accepted[size_t(r)];
        if (a < 1 || a > c.L)
            bad_input("num_accepted[" + std::to_string(r) + "] = " + std::to_string(a) + " is outside 1..L = 1.." +
                      std::to_string(c.L));
    }
}

StepInputs StepInputs::from_file(const TensorFile& f) {
    StepInputs in;
    in.cfg = Config::from_metadata(f.metadata);
    for_each_input(in.cfg, [&](const char* name, DType dt, std::vector<int64_t> shape, auto member) {
        using T = typename std::decay_t<decltype(in.*member)>::value_type;
        in.*member = take_tensor<T>(f, name, dt, shape);
    });
    in.validate_step();
    return in;
}

TensorFile StepInputs::to_file() const {
    TensorFile f;
    f.metadata = cfg.to_metadata();
    for_each_input(cfg, [&](const char* name, DType dt, std::vector<int64_t> shape, auto member) {
        f.tensors[name] = Tensor::of(dt, std::move(shape), this->*member);
    });
    return f;
}

StepInputs StepInputs::with_conv_layout(ConvLayout layout) const {
    StepInputs out = *this;
    out.cfg.conv_layout = layout;
    for (int s = 0; s < cfg.slots; ++s)
        for (int j = 0; j < cfg.conv_len(); ++j)
            for (int ch = 0; ch < cfg.C; ++ch)
                out.conv_state[size_t(out.conv_at(s, j, ch))] = conv_state[size_t(conv_at(s, j, ch))];
    return out;
}

bool StepInputs::operator==(const StepInputs& o) const {
    if (cfg.to_metadata() != o.cfg.to_metadata()) return false;
    bool same = true;
    for_each_input(cfg, [&](const char*, DType, const std::vector<int64_t>&, auto member) {
        same = same && same_bits(this->*member, o.*member);
    });
    return same;
}

template <class T>
TensorFile StepOutputs<T>::to_file(const Config& c) const {
    TensorFile f;
    f.metadata = c.to_metadata();
    for_each_output<T>(c, [&](const char* name, DType dt, std::vector<int64_t> shape, auto member) {
        f.tensors[name] = Tensor::of(dt, std::move(shape), this->*member);
    });
    return f;
}

template struct StepOutputs<float>;
template struct StepOutputs<double>;

}  // namespace monokda
