// The PTX ordering check on a small kernel (ptx_fixture.hpp): the clean kernel's sites and their facts
// as written out by hand, no violation; then one planted bug a rule, each caught by that rule alone;
// the forms the contract also accepts (a relaxed read with a fence after it, a fence before a relaxed
// store); and the parser's refusals.
#include <doctest/doctest.h>

#include <algorithm>

#include "core/error.hpp"
#include "tests/ordering/ptx_fixture.hpp"

using namespace monokda;
using namespace monokda::test;

namespace {

std::vector<std::string> lines_of(const ordering::Summary& s) {
    std::vector<std::string> out;
    for (const ordering::Entry& e : s.entries)
        for (const ordering::Site& site : e.sites) {
            std::string l = site.kind + " " + site.memory;
            for (const auto& [k, v] : site.facts) l += " " + k + "=" + v;
            out.push_back(l + " n=" + std::to_string(site.n));
        }
    return out;
}

std::string joined(const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v) s += "\n  " + x;
    return s;
}

void only(const std::string& ptx_text, const std::string& rule) {
    const std::vector<std::string> f = fired(ptx_text);
    CHECK_MESSAGE(f == std::vector<std::string>{rule}, "expected only ", rule, ", fired:", joined(f));
}

}  // namespace

TEST_CASE("the clean kernel: every site found with its facts, none against the contract") {
    const ordering::Summary s = summary_of(kCleanPtx);
    REQUIRE(s.entries.size() == 1);
    CHECK(s.entries[0].name == "step");
    const std::vector<std::string> want = {
        "write flags barrier=yes sem=release.gpu type=u32 n=1",
        "write tagged sem=relaxed.gpu type=u64 n=1",
        "read flags sem=acquire.gpu type=u32 n=1",
        "poll flags clock=yes error=yes pause=yes n=2",  // and the peek's spin: the same facts, merged
        "read tagged sem=relaxed.gpu type=u64 n=1",
        "poll tagged clock=yes error=yes pause=yes n=1",
        "read flags sem=acquire.gpu type=v4.u32 n=1",
        "read flags peek=reread sem=relaxed.gpu type=u32 n=1",
        "wait cp.async op=cp.async.wait_group pending=15 n=1",
        "wait cp.async op=cp.async.wait_group pending=0 n=1",
    };
    CHECK_MESSAGE(lines_of(s) == want, "found:", joined(lines_of(s)));
    CHECK(fired(kCleanPtx).empty());
}

TEST_CASE("a flag polled relaxed: FLAG_READ_RELAXED, and nothing else") {
    only(planted("FLAG_POLL", "ld.relaxed.gpu.global.u32 %r4, [%rd3+4];"), "FLAG_READ_RELAXED");
    only(planted("FLAG_POLL", "ld.global.u32 %r4, [%rd3+4];"), "FLAG_READ_RELAXED");      // weak
    only(planted("FLAG_POLL", "ld.acquire.cta.global.u32 %r4, [%rd3+4];"), "FLAG_READ_RELAXED");  // CTA scope
    // the contract's other form: relaxed, then a gpu-scope fence before anything is read
    const std::string fenced = planted("READ_BARRIER", "fence.acq_rel.gpu;\n\tbar.sync 0;",
                                       planted("FLAG_POLL", "ld.relaxed.gpu.global.u32 %r4, [%rd3+4];"));
    CHECK(fired(fenced).empty());
    // a CTA-scope fence does not do
    only(planted("READ_BARRIER", "fence.acq_rel.cta;\n\tbar.sync 0;", planted("FLAG_POLL", "ld.relaxed.gpu.global.u32 %r4, [%rd3+4];")),
         "FLAG_READ_RELAXED");
}

TEST_CASE("a peek with nothing re-reading the flag: PEEK_UNCHECKED; unmarked: FLAG_READ_RELAXED") {
    // the peek, once ready, goes on to read x instead of back to the acquire
    only(planted("PEEK_EXIT", "@%p9 bra $L__BB0_12;"), "PEEK_UNCHECKED");
    std::string unmarked = kCleanPtx;
    const std::string mark = "[%rd3+16]; // monokda:peek";
    unmarked.replace(unmarked.find(mark), mark.size(), "[%rd3+16];");
    only(unmarked, "FLAG_READ_RELAXED");
}

TEST_CASE("a tagged pair read weak, at CTA scope or split: TAGGED_READ_WEAK, and nothing else") {
    only(planted("TAGGED_POLL", "ld.global.u64 %rd11, [%rd2+16];"), "TAGGED_READ_WEAK");
    only(planted("TAGGED_POLL", "ld.relaxed.cta.global.u64 %rd11, [%rd2+16];"), "TAGGED_READ_WEAK");
    only(planted("TAGGED_POLL", "ld.relaxed.gpu.global.v2.u32 {%r13, %r14}, [%rd2+16];"), "TAGGED_READ_WEAK");
}

TEST_CASE("a flag set without release: FLAG_WRITE_UNRELEASED; before the barrier: FLAG_WRITE_BEFORE_BARRIER") {
    only(planted("RELEASE", "st.relaxed.gpu.global.u32 [%rd3], %r2;"), "FLAG_WRITE_UNRELEASED");
    only(planted("RELEASE", "st.global.u32 [%rd3], %r2;"), "FLAG_WRITE_UNRELEASED");
    only(planted("RELEASE", "atom.global.exch.b32 %r30, [%rd3], %r2;"), "FLAG_WRITE_UNRELEASED");
    CHECK(fired(planted("RELEASE", "atom.release.gpu.global.exch.b32 %r30, [%rd3], %r2;")).empty());
    // the contract's other form: a gpu-scope fence right before a relaxed store
    CHECK(fired(planted("RELEASE", "fence.acq_rel.gpu;\n\tst.relaxed.gpu.global.u32 [%rd3], %r2;")).empty());
    only(planted("RELEASE", "membar.cta;\n\tst.relaxed.gpu.global.u32 [%rd3], %r2;"), "FLAG_WRITE_UNRELEASED");
    only(planted("BARRIER", ""), "FLAG_WRITE_BEFORE_BARRIER");
    only(planted("BARRIER", "bar.warp.sync -1;"), "FLAG_WRITE_BEFORE_BARRIER");  // a warp is not the CTA
    CHECK(fired(planted("BARRIER", "barrier.sync.aligned 1, 128;")).empty());     // a team's named barrier
}

TEST_CASE("a tagged pair stored weak or split: TAGGED_WRITE_WEAK, and nothing else") {
    only(planted("TAGGED_WRITE", "st.global.u64 [%rd2+8], %rd7;"), "TAGGED_WRITE_WEAK");
    only(planted("TAGGED_WRITE", "st.relaxed.gpu.global.v2.u32 [%rd2+8], {%r1, %r2};"), "TAGGED_WRITE_WEAK");
    CHECK(fired(planted("TAGGED_WRITE", "st.release.gpu.global.u64 [%rd2+8], %rd7;")).empty());
}

TEST_CASE("a ring wait one stage short, or any count the ring does not allow: RING_WAIT") {
    const std::string short_one = planted("RING_WAIT", "cp.async.wait_group 16;");
    only(short_one, "RING_WAIT");
    const auto v = ordering::check(summary_of(short_one));
    REQUIRE(v.size() == 1);
    CHECK_MESSAGE(v[0].message.find("1 stage short") != std::string::npos, v[0].message);
    only(planted("RING_WAIT", "cp.async.wait_group 3;"), "RING_WAIT");
    CHECK(fired(planted("RING_WAIT", "cp.async.wait_all;")).empty());
}

TEST_CASE("a poll without its clock or its error word: POLL_UNBOUNDED, and nothing else") {
    only(planted("FLAG_CLOCK", ""), "POLL_UNBOUNDED");
    only(planted("FLAG_ERROR", "mov.u32 %r5, 0;"), "POLL_UNBOUNDED");
    // a bare spin (no pause, clock or error word) is found from the loaded value deciding the loop
    std::string bare = kCleanPtx;
    for (const char* tag : {"FLAG_PAUSE", "FLAG_ERROR", "FLAG_ERROR_TEST", "FLAG_ERROR_EXIT", "FLAG_CLOCK",
                            "FLAG_CLOCK_SUB", "FLAG_CLOCK_TEST", "FLAG_CLOCK_EXIT"})
        bare = planted(tag, "", bare);
    const ordering::Summary s = summary_of(bare);
    const auto& sites = s.entries[0].sites;
    const bool found = std::any_of(sites.begin(), sites.end(), [](const ordering::Site& x) {
        return x.kind == "poll" && x.memory == "flags" && x.fact("pause") == "no" && x.fact("clock") == "no";
    });
    CHECK(found);
    only(bare, "POLL_UNBOUNDED");
}

TEST_CASE("an ordered access the check cannot trace to a kernel argument: UNTRACED_ACCESS") {
    only(planted("RING_WAIT", "ld.shared.u64 %rd20, [%r1];\n\tatom.global.add.u32 %r20, [%rd20], 1;\n\tcp.async.wait_group 15;"),
         "UNTRACED_ACCESS");
    // a weak access there is the kernel's business (inputs, outputs, its own scratch)
    CHECK(fired(planted("RING_WAIT", "ld.shared.u64 %rd20, [%r1];\n\tst.global.u32 [%rd20], %r1;\n\tcp.async.wait_group 15;")).empty());
}

TEST_CASE("a summary reads back as the sites it was written from") {
    for (const std::string& ptx_text : {std::string(kCleanPtx), planted("FLAG_POLL", "ld.relaxed.gpu.global.u32 %r4, [%rd3+4];")}) {
        const ordering::Summary s = summary_of(ptx_text);
        const std::string text = ordering::format_summary(s);
        const ordering::Summary back = ordering::parse_summary(text, "s.ordering");
        CHECK(ordering::format_summary(back) == text);
        CHECK(ordering::check(back).size() == ordering::check(s).size());
    }
}

TEST_CASE("malformed PTX, layouts and summaries are refused, naming the problem") {
    CHECK_THROWS_WITH_AS(ptx::parse("just text\n", "a.ptx"), doctest::Contains("not PTX"), BadInput);
    std::string unclosed = kCleanPtx;
    unclosed = unclosed.substr(0, unclosed.rfind('}'));
    CHECK_THROWS_WITH_AS(ptx::parse(unclosed, "a.ptx"), doctest::Contains("no closing brace"), BadInput);
    CHECK_THROWS_WITH_AS(ptx::parse(planted("FLAG_CLOCK_EXIT", "@%p4 bra $L__nowhere;"), "a.ptx"),
                         doctest::Contains("unknown label '$L__nowhere'"), BadInput);
    std::string no_flags = kCleanPtx;
    const std::string g = ".global .align 8 .u64 monokda_layout_flags = 8;\n";
    no_flags.erase(no_flags.find(g), g.size());
    const ptx::Module m = ptx::parse(no_flags, "a.ptx");
    CHECK_THROWS_WITH_AS(ordering::Layout::from(m, "a.ptx"), doctest::Contains("no offset for KdaArgs::flags"), BadInput);
    CHECK_THROWS_WITH_AS(ordering::parse_summary("hello\n", "s.ordering"), doctest::Contains("not a PTX ordering summary"),
                         BadInput);
    CHECK_THROWS_WITH_AS(ordering::parse_summary("ptx-ordering 1\nread flags sem=acquire.gpu at=x n=1\n", "s.ordering"),
                         doctest::Contains("s.ordering:2: a site before any entry"), BadInput);
    CHECK_THROWS_WITH_AS(ordering::parse_summary("ptx-ordering 1\nentry k\n  read flags sem at=x\n", "s.ordering"),
                         doctest::Contains("'sem' is not key=value"), BadInput);
    CHECK_THROWS_WITH_AS(ordering::parse_summary("ptx-ordering 1\nentry k\n  read input sem=weak at=x n=1\n", "s.ordering"),
                         doctest::Contains("a read of 'input'"), BadInput);
    CHECK_THROWS_WITH_AS(ordering::parse_summary("ptx-ordering 1\nentry k\n  poll flags at=x n=0\n", "s.ordering"),
                         doctest::Contains("n must be a positive count"), BadInput);
}

TEST_CASE("names in the report: demangled, short, lambdas left out") {
    CHECK(ptx::short_name("_ZN7monokda3gpu10wait_flagsIZNS0_10gemv_groupILb1EEEbRKNS0_7KdaArgsERNS0_3CtlERNS0_8GemvSmemEiEUliE_EEbS5_RKS6_NS_7MailboxEiT_NS0_4TeamE") ==
          "wait_flags");
    CHECK(ptx::short_name("_ZN7monokda3gpu7KdaTaskILi32EE4convERKNS0_7KdaArgsERNS0_3CtlERNS0_7KdaSmemILi32EEEiiiNS0_4TeamE") ==
          "KdaTask::conv");
    CHECK(ptx::short_name("_ZZN7monokda3gpu7KdaTaskILi32EE4convERKNS0_7KdaArgsERNS0_3CtlERNS0_7KdaSmemILi32EEEiiiNS0_4TeamEENKUliE_clEi") ==
          "{lambda}");
    CHECK(ptx::short_name("not_mangled") == "not_mangled");
    CHECK(ptx::split_operands(" {%r1, %r2}, [%rd3+8], 4") == std::vector<std::string>{"{%r1, %r2}", "[%rd3+8]", "4"});
    CHECK(ptx::registers_of("{%r1, %r2}") == std::vector<std::string>{"%r1", "%r2"});
}
