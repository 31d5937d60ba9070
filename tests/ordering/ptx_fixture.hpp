// A small kernel in PTX as nvcc writes it, with one hand-off of each kind the ordering contract
// covers: x written, the CTA barrier, a flag released; a tagged pair stored; a bounded poll of a flag
// (acquire), then the barrier and a read of x; a bounded poll of a tagged pair; an XRDY-style peek
// (a relaxed spin inside a loop that re-reads the flag with acquire), then the barrier and a read of
// x; a copy-engine wait; the cp.async ring's waits.
// Each line a planted bug replaces ends in a "// NAME" comment, so planted() finds it exactly once.
#pragma once
#include <doctest/doctest.h>

#include <string>

#include "kernels/ordering/ordering.hpp"

namespace monokda::test {

inline const char* kCleanPtx = R"(//
// Cuda compilation tools, release 13.0, V13.0.0 (a fixture)
.version 8.5
.target sm_90a
.address_size 64

.global .align 8 .u64 monokda_layout_tagged = 0;
.global .align 8 .u64 monokda_layout_flags = 8;
.global .align 8 .u64 monokda_layout_error = 16;
.global .align 8 .u64 monokda_layout_x = 24;
.global .align 8 .u64 monokda_layout_proj = 32;
.global .align 8 .u64 monokda_layout_qkv = 40;
.global .align 8 .u64 monokda_layout_g1 = 48;

.visible .entry step(
	.param .align 8 .b8 step_param_0[64]
)
.maxntid 256, 1, 1
{
	.reg .pred 	%p<16>;
	.reg .b16 	%rs<4>;
	.reg .b32 	%r<32>;
	.reg .b64 	%rd<32>;

	mov.b64 	%rd1, step_param_0;
	ld.param.u64 	%rd2, [%rd1];
	ld.param.u64 	%rd3, [%rd1+8];
	ld.param.u64 	%rd4, [%rd1+16];
	ld.param.u64 	%rd5, [%rd1+24];
	cvta.to.global.u64 	%rd6, %rd5;
	mov.u32 	%r1, %tid.x;
	ld.shared.u32 	%r2, [%r1];
	st.global.u16 	[%rd6], %rs1;
	bar.sync 	0; // BARRIER
	setp.ne.s32 	%p1, %r1, 0;
	@%p1 bra 	$L__BB0_2;

	st.release.gpu.global.u32 [%rd3], %r2; // RELEASE

$L__BB0_2:
	st.relaxed.gpu.global.u64 [%rd2+8], %rd7; // TAGGED_WRITE
	mov.u64 	%rd8, %globaltimer;

$L__BB0_3:
	nanosleep.u32 100; // FLAG_PAUSE
	ld.acquire.gpu.global.u32 %r4, [%rd3+4]; // FLAG_POLL
	setp.eq.s32 	%p2, %r4, %r2;
	@%p2 bra 	$L__BB0_5;

	ld.relaxed.gpu.global.u32 %r5, [%rd4]; // FLAG_ERROR
	setp.ne.s32 	%p3, %r5, 0; // FLAG_ERROR_TEST
	@%p3 bra 	$L__BB0_9; // FLAG_ERROR_EXIT

	mov.u64 	%rd9, %globaltimer; // FLAG_CLOCK
	sub.s64 	%rd10, %rd9, %rd8; // FLAG_CLOCK_SUB
	setp.gt.u64 	%p4, %rd10, 1000; // FLAG_CLOCK_TEST
	@%p4 bra 	$L__BB0_9; // FLAG_CLOCK_EXIT
	bra.uni 	$L__BB0_3;

$L__BB0_5:
	bar.sync 	0; // READ_BARRIER
	ld.global.cg.u16 	%rs2, [%rd6+2];

$L__BB0_6:
	nanosleep.u32 100;
	ld.relaxed.gpu.global.u64 %rd11, [%rd2+16]; // TAGGED_POLL
	shr.u64 	%rd12, %rd11, 32;
	cvt.u32.u64 	%r6, %rd12;
	setp.eq.s32 	%p5, %r6, %r2;
	@%p5 bra 	$L__BB0_10;

	ld.relaxed.gpu.global.u32 %r7, [%rd4];
	setp.ne.s32 	%p6, %r7, 0;
	@%p6 bra 	$L__BB0_9;

	mov.u64 	%rd13, %globaltimer;
	sub.s64 	%rd14, %rd13, %rd8;
	setp.gt.u64 	%p7, %rd14, 1000;
	@%p7 bra 	$L__BB0_9;
	bra.uni 	$L__BB0_6;

$L__BB0_10:
	ld.acquire.gpu.global.v4.u32 {%r8, %r20, %r21, %r22}, [%rd3+16];
	setp.eq.s32 	%p8, %r8, %r2;
	@%p8 bra 	$L__BB0_12;

$L__BB0_11:
	nanosleep.u32 100;
	// begin inline asm
	ld.relaxed.gpu.global.u32 %r9, [%rd3+16]; // monokda:peek
	// end inline asm
	setp.eq.s32 	%p9, %r9, %r2;
	@%p9 bra 	$L__BB0_10; // PEEK_EXIT

	ld.relaxed.gpu.global.u32 %r10, [%rd4];
	setp.ne.s32 	%p10, %r10, 0;
	@%p10 bra 	$L__BB0_9;

	mov.u64 	%rd15, %globaltimer;
	sub.s64 	%rd16, %rd15, %rd8;
	setp.gt.u64 	%p11, %rd16, 1000;
	@%p11 bra 	$L__BB0_9;
	bra.uni 	$L__BB0_11;

$L__BB0_12:
	bar.sync 	0;
	ld.global.cg.u16 	%rs3, [%rd6+4];
	{
	.reg .pred 	p;
	mbarrier.try_wait.parity.shared::cta.b64 p, [%r1], %r2;
	selp.u32 	%r12, 1, 0, p;
	}
	cp.async.wait_group 15; // RING_WAIT
	cp.async.wait_group 0;

$L__BB0_9:
	ret;

}
)";

// The clean kernel with the line ending in "// tag" replaced by `line` (empty: removed).
inline std::string planted(const std::string& tag, const std::string& line, std::string ptx = kCleanPtx) {
    const std::string key = "// " + tag + "\n";
    const size_t at = ptx.find(key);
    REQUIRE_MESSAGE(at != std::string::npos, "no line tagged ", tag);
    REQUIRE_MESSAGE(ptx.find(key, at + 1) == std::string::npos, "two lines tagged ", tag);
    const size_t begin = ptx.rfind('\n', at) + 1;
    ptx.replace(begin, at + key.size() - begin, line.empty() ? "" : "\t" + line + "\n");
    return ptx;
}

inline ordering::Summary summary_of(const std::string& ptx_text) {
    const ptx::Module m = ptx::parse(ptx_text, "fixture.ptx");
    return ordering::summarize(m, ordering::Layout::from(m, "fixture.ptx"), "fixture.cu");
}

// The rules that fired on a kernel, by name, one entry a violation.
inline std::vector<std::string> fired(const std::string& ptx_text) {
    std::vector<std::string> out;
    for (const ordering::Violation& v : ordering::check(summary_of(ptx_text))) out.push_back(to_string(v.rule));
    return out;
}

}  // namespace monokda::test
