// The bounded JSON reader: duplicate keys, nesting depth, value count and size are refused by name,
// where they occur; what is within bounds reads as nlohmann's own parser reads it.
#include <doctest/doctest.h>

#include "core/error.hpp"
#include "core/json_bounded.hpp"

using namespace monokda;

namespace {

std::string refusal(const std::string& text, const JsonBounds& b = {}) {
    try {
        parse_json_bounded(text, "plan.json", b);
    } catch (const BadInput& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("a document within bounds reads as nlohmann's parser reads it") {
    const std::string t = R"({"a": [1, -2, 3.5, "x", null, true, {"b": []}], "c": {"d": {"e": "f"}}})";
    CHECK(parse_json_bounded(t, "t") == nlohmann::json::parse(t));
    CHECK(parse_json_bounded("[]", "t") == nlohmann::json::array());
    CHECK(parse_json_bounded("7", "t") == 7);
}

TEST_CASE("a duplicate key is refused, naming the key and its place") {
    CHECK(refusal(R"({"D": "128", "D": "256"})") == "plan.json: duplicate key 'D'");
    CHECK(refusal(R"({"ctas": [{"cta": 0}, {"cta": 1, "op": 1, "op": 2}]})") ==
          "plan.json: duplicate key 'op' at ctas[1]");
    CHECK(refusal(R"({"a": {"b": [[1], {"k": 1, "k": 1}]}})") == "plan.json: duplicate key 'k' at a.b[1]");
    CHECK(refusal(R"({"a": {"x": 1}, "b": {"x": 1}})").empty());  // the same key in two objects is fine
}

TEST_CASE("nesting deeper than the bound is refused at the first bracket too many") {
    JsonBounds b;
    b.max_depth = 3;
    CHECK(refusal("[[[1]]]", b).empty());
    CHECK(refusal("[[[[1]]]]", b) == "plan.json: nested deeper than 3 levels at [0][0][0]");
    CHECK(refusal(R"({"a": {"b": {"c": {}}}})", b) == "plan.json: nested deeper than 3 levels at a.b.c");
    // a file of brackets alone: refused without building anything for it
    CHECK(refusal(std::string(size_t(1) << 20, '[')) == "plan.json: nested deeper than 16 levels at [0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]");
}

TEST_CASE("more values than the bound, or more bytes, are refused") {
    JsonBounds b;
    b.max_values = 4;
    CHECK(refusal("[1, 2, 3]", b).empty());  // the array and its three values
    CHECK(refusal("[1, 2, 3, 4]", b) == "plan.json: more than 4 values");
    b = {};
    b.max_bytes = 8;
    CHECK(refusal("[1, 2, 3, 4]", b) == "plan.json: larger than 8 bytes (12)");
}

TEST_CASE("a syntax error names its byte") {
    const std::string m = refusal(R"({"a": [1, 2,]})");
    CHECK(m.rfind("plan.json: not valid JSON at byte 13: ", 0) == 0);
    CHECK(refusal(R"({"a": 1} x)").rfind("plan.json: not valid JSON at byte", 0) == 0);
    CHECK(refusal("").rfind("plan.json: not valid JSON at byte", 0) == 0);
}
