// JSON parsed with bounds on size, depth and values, duplicate keys refused, and its values read by
// type and range, each refusal naming the value's path (core/json_bounded.hpp).
#include "core/json_bounded.hpp"

#include <vector>

#include "core/error.hpp"

namespace monokda {

using nlohmann::json;

std::string json_path_join(const std::string& parent, const std::string& key) {
    return parent.empty() ? key : parent + "." + key;
}
std::string json_path_index(const std::string& parent, size_t i) { return parent + "[" + std::to_string(i) + "]"; }

namespace {

// A SAX consumer that builds the document itself, so that every bound is checked at the event that
// would break it (the bracket one level too deep, the key seen twice), before anything is built for it.
class BoundedBuilder final : public json::json_sax_t {
public:
    BoundedBuilder(const std::string& what, const JsonBounds& b) : what_(what), b_(b) {}
    json root;

    bool null() override { return put(json(nullptr)); }
    bool boolean(bool v) override { return put(json(v)); }
    bool number_integer(number_integer_t v) override { return put(json(v)); }
    bool number_unsigned(number_unsigned_t v) override { return put(json(v)); }
    bool number_float(number_float_t v, const string_t&) override { return put(json(v)); }
    bool string(string_t& v) override { return put(json(std::move(v))); }
    bool binary(binary_t&) override { fail("binary values are not JSON text", path()); }
    bool start_object(std::size_t) override { return open(json::object()); }
    bool start_array(std::size_t) override { return open(json::array()); }
    bool key(string_t& k) override {
        Frame& f = stack_.back();
        if (f.node->contains(k)) {
            f.key.clear();  // the object's own path
            fail("duplicate key '" + k + "'", path());
        }
        f.key = std::move(k);
        return true;
    }
    bool end_object() override { return close(); }
    bool end_array() override { return close(); }
    bool parse_error(std::size_t pos, const std::string&, const nlohmann::detail::exception& e) override {
        std::string m = e.what();
        const size_t colon = m.find("] ");  // "[json.exception.parse_error.101] parse error at ...": the sentence
        bad_input(what_ + ": not valid JSON at byte " + std::to_string(pos) + ": " +
                  (colon == std::string::npos ? m : m.substr(colon + 2)));
    }

private:
    struct Frame {
        json* node;
        std::string key;   // objects: the key of the value that comes next
        size_t index = 0;  // arrays: the index of the value that comes next
    };
    [[noreturn]] void fail(const std::string& m, const std::string& where) const {
        bad_input(what_ + ": " + m + (where.empty() ? "" : " at " + where));
    }
    // Where the value being read lies (an object's key is that of the value being read).
    std::string path() const {
        std::string p;
        for (const Frame& f : stack_)
            p = f.node->is_object() ? (f.key.empty() ? p : json_path_join(p, f.key)) : json_path_index(p, f.index);
        return p;
    }
    void count() {
        if (++values_ > b_.max_values) fail("more than " + std::to_string(b_.max_values) + " values", "");
    }
    // Places v where the next value goes; returns it (stack_ holds pointers into the document).
    json* place(json&& v) {
        count();
        if (stack_.empty()) {
            root = std::move(v);
            return &root;
        }
        Frame& f = stack_.back();
        if (f.node->is_object()) return &((*f.node)[f.key] = std::move(v));
        f.node->push_back(std::move(v));
        ++f.index;
        return &f.node->back();
    }
    bool put(json&& v) {
        place(std::move(v));
        return true;
    }
    bool open(json&& v) {
        if (int(stack_.size()) + 1 > b_.max_depth) {
            std::string where = path();
            fail("nested deeper than " + std::to_string(b_.max_depth) + " levels", where.empty() ? "the top" : where);
        }
        json* at = place(std::move(v));
        if (!stack_.empty() && stack_.back().node->is_array()) {
            // the index was advanced by place(); the path of what is inside names this element
            --stack_.back().index;
            stack_.push_back(Frame{at, {}, 0});
            return true;
        }
        stack_.push_back(Frame{at, {}, 0});
        return true;
    }
    bool close() {
        stack_.pop_back();
        if (!stack_.empty() && stack_.back().node->is_array()) ++stack_.back().index;
        return true;
    }

    const std::string& what_;
    const JsonBounds& b_;
    std::vector<Frame> stack_;
    size_t values_ = 0;
};

}  // namespace

json parse_json_bounded(const std::string& text, const std::string& what, const JsonBounds& bounds) {
    if (text.size() > bounds.max_bytes)
        bad_input(what + ": larger than " + std::to_string(bounds.max_bytes) + " bytes (" + std::to_string(text.size()) + ")");
    BoundedBuilder b(what, bounds);
    json::sax_parse(text, &b);
    return std::move(b.root);
}

void JsonReader::fail(const std::string& path, const std::string& m) const {
    bad_input(what_ + ": " + (path.empty() ? "" : path + ": ") + m);
}

const json& JsonReader::object(const json& j, const std::string& path, std::initializer_list<const char*> required,
                               std::initializer_list<const char*> optional) const {
    if (!j.is_object()) fail(path, "must be an object");
    for (const char* k : required)
        if (!j.contains(k)) fail(path, "has no \"" + std::string(k) + "\"");
    for (auto it = j.begin(); it != j.end(); ++it) {
        bool known = false;
        for (const char* k : required) known |= it.key() == k;
        for (const char* k : optional) known |= it.key() == k;
        if (!known) {
            std::string keys;
            for (const char* k : required) keys += std::string(keys.empty() ? "" : ", ") + k;
            for (const char* k : optional) keys += std::string(keys.empty() ? "" : ", ") + k;
            fail(path, "unknown key \"" + it.key() + "\" (known: " + keys + ")");
        }
    }
    return j;
}

int64_t JsonReader::integer(const json& j, const std::string& path, int64_t lo, int64_t hi) const {
    if (!j.is_number_integer()) fail(path, "must be an integer");
    const int64_t v = j.is_number_unsigned() && j.get<uint64_t>() > uint64_t(INT64_MAX) ? INT64_MAX : j.get<int64_t>();
    if (v < lo || v > hi) fail(path, "must be in " + std::to_string(lo) + ".." + std::to_string(hi) + " (got " + std::to_string(v) + ")");
    return v;
}

std::string JsonReader::string(const json& j, const std::string& path) const {
    if (!j.is_string()) fail(path, "must be a string");
    return j.get<std::string>();
}

bool JsonReader::boolean(const json& j, const std::string& path) const {
    if (!j.is_boolean()) fail(path, "must be true or false");
    return j.get<bool>();
}

const json& JsonReader::array(const json& j, const std::string& path) const {
    if (!j.is_array()) fail(path, "must be an array");
    return j;
}

const json& JsonReader::array(const json& j, const std::string& path, size_t lo, size_t hi) const {
    array(j, path);
    if (j.size() < lo || j.size() > hi)
        fail(path, (lo == hi ? "must hold " + std::to_string(lo) : "must hold " + std::to_string(lo) + ".." + std::to_string(hi)) +
                       " entries (got " + std::to_string(j.size()) + ")");
    return j;
}

}  // namespace monokda
