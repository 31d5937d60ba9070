// JSON from files a user hands over (a plan file, an envelope): parsed into a document with bounds on
// its size, nesting depth and number of values, checked as the text is read so that memory stays a
// small multiple of the text, and with every duplicate key refused by name (a second copy of a key
// must not silently win); then read through typed accessors that refuse a value naming its path.
// Every refusal is BadInput naming `what`, the problem and where it is.
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include <nlohmann/json.hpp>

namespace monokda {

struct JsonBounds {
    size_t max_bytes = size_t(64) << 20;  // the text
    int max_depth = 16;                   // nested objects and arrays, the outermost at depth 1
    size_t max_values = size_t(1) << 22;  // values of every kind, keys not counted
};

// BadInput: "WHAT: not valid JSON at byte N: ...", "WHAT: duplicate key 'K' at PATH",
// "WHAT: nested deeper than D levels at PATH", "WHAT: more than N values", "WHAT: larger than N bytes".
nlohmann::json parse_json_bounded(const std::string& text, const std::string& what, const JsonBounds& bounds = {});

// "a.b[3].c": the path of a value, as the messages above and the callers' name it.
std::string json_path_join(const std::string& parent, const std::string& key);
std::string json_path_index(const std::string& parent, size_t i);

// A reader's view of a parsed document: typed accessors that refuse (BadInput "WHAT: PATH: problem")
// a value of the wrong type, out of range, or an object with a missing or unknown key.
class JsonReader {
public:
    explicit JsonReader(std::string what) : what_(std::move(what)) {}
    [[noreturn]] void fail(const std::string& path, const std::string& m) const;
    // j, an object with every `required` key and no key outside required and optional
    const nlohmann::json& object(const nlohmann::json& j, const std::string& path, std::initializer_list<const char*> required,
                                 std::initializer_list<const char*> optional = {}) const;
    int64_t integer(const nlohmann::json& j, const std::string& path, int64_t lo, int64_t hi) const;
    std::string string(const nlohmann::json& j, const std::string& path) const;
    bool boolean(const nlohmann::json& j, const std::string& path) const;
    const nlohmann::json& array(const nlohmann::json& j, const std::string& path) const;
    // an array of lo..hi entries
    const nlohmann::json& array(const nlohmann::json& j, const std::string& path, size_t lo, size_t hi) const;
    const std::string& what() const { return what_; }

private:
    std::string what_;
};

}  // namespace monokda
