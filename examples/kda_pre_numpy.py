#!/usr/bin/env python3
"""kda_pre in numpy: SPEC §3's original path, as a kernel monokda did not write.

    python3 examples/kda_pre_numpy.py FIXTURE OUT [--bug NAME]

Reads a fixture, computes steps A-F in float32 with the seven bf16 roundings in place, and writes
every output and hand-off (SPEC §2) to OUT. Every sum runs sequentially, term by term, in the order
SPEC writes it, so a row's result never depends on the step's shape (R, L, slots): the properties
the fuzzer checks hold bit for bit. Exponentials are evaluated in float64 and rounded once to float32.

--bug NAME (or MONOKDA_EXAMPLE_BUG=NAME) plants one bug, so that `monokda verify` and
`monokda fuzz --target exec` can be watched catching it; --list-bugs names them. Exit codes: 0 ok,
1 a planted crash, 2 bad input (a message names the problem and nothing is written).
"""
import argparse
import os
import sys
import time

import numpy as np

try:
    import monokda
except ImportError:  # run from a checkout without PYTHONPATH: the package is ../python
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import monokda
from monokda import bf16

f32 = np.float32

BUGS = {
    "conv-round-before-silu": "rounds the conv accumulator to bf16 before SiLU (a second, misplaced rounding)",
    "last-state-only": "writes only the last token's ssm_state, not one state a token",
    "null-state-reads-slot0": "a request without an initial state starts from slot 0's state",
    "ssm-transposed": "writes ssm_state as [slots, H, K, V]",
    "crash-on-nb8": "raises an exception when nb = 8",
    "hang-on-l7": "never returns when L = 7",
}


def f(bits):
    return bf16.to_f32(bits)


def rnd(values):
    return bf16.from_f32(np.asarray(values, dtype=f32))


def exp(x):
    return np.exp(np.asarray(x, dtype=np.float64)).astype(f32)


def sigmoid(z):
    return f32(1) / (f32(1) + exp(-z))


def seq_sum(terms):
    """Σ over the last axis, sequentially from the first term: ((t0 + t1) + t2) + ..."""
    t = np.moveaxis(terms, -1, 0)
    acc = t[0].copy()
    for i in range(1, t.shape[0]):
        acc += t[i]
    return acc


def gemm_rows(a, w):
    """out[s, n] = Σ_d a[s, d] · w[n, d] in float32, d sequential (a: [S, K], w: [N, K] float32)."""
    wt = np.ascontiguousarray(w.T)
    acc = a[:, 0:1] * wt[0]
    tmp = np.empty_like(acc)
    for d in range(1, wt.shape[0]):
        np.multiply(a[:, d:d + 1], wt[d], out=tmp)
        acc += tmp
    return acc


def attnres(fx):
    """A: prefix_out (#1), blocks, x (#2)."""
    c = fx.config
    prefix_out = rnd(f(fx["prefix"]) + f(fx["delta"]))
    blocks = fx["blocks"].copy()
    if c.block_write:
        blocks[:, c.nb] = prefix_out
    src = np.concatenate([f(fx["blocks"][:, :c.nb]), f(prefix_out)[:, None]], axis=1)  # [S, nb+1, D], prefix last
    wq = f(fx["res_norm_w"]) * f(fx["res_proj_w"])
    eps, D = f32(c.eps), f32(c.D)
    r = f32(1) / np.sqrt(seq_sum(src * src) / D + eps)
    logit = seq_sum(src * wq) * r
    e = exp(logit - logit.max(axis=1, keepdims=True))
    den = seq_sum(e)
    mixed = seq_sum(np.moveaxis(e[:, :, None] * src, 1, 2)) / den[:, None]
    rr = f32(1) / np.sqrt(seq_sum(mixed * mixed) / D + eps)
    x = rnd((mixed * rr[:, None]) * f(fx["input_norm_w"]))
    return prefix_out, blocks, x


def short_conv(fx, proj, bug):
    """D: qkv (#5) and the conv state written back once per step."""
    c = fx.config
    W, L, C = c.W, c.L, c.C
    old = fx.conv_state_sd()  # [slots, W-2+L, C]
    new = old.copy()
    slot, acc_n = fx["state_indices"][:, 0], fx["num_accepted"]
    x = proj[:, :C].reshape(c.R, L, C)
    qkv = np.zeros((c.R, L, C), dtype=np.uint16)
    for r in range(c.R):
        live = slot[r] > 0
        a = int(acc_n[r])
        window = f(old[slot[r], a - 1:a + W - 2]) if live else np.zeros((W - 1, C), f32)
        seq = np.concatenate([window, f(x[r])])  # [W-1+L, C]
        w = fx["conv_w"]  # [C, W], tap j multiplies seq[t + j], oldest first
        for t in range(L):
            acc = seq[t] * w[:, 0]
            for j in range(1, W):
                acc = acc + seq[t + j] * w[:, j]
            if bug == "conv-round-before-silu":
                acc = f(rnd(acc))
            qkv[r, t] = rnd(acc / (f32(1) + exp(-acc)))
        if live:
            new[slot[r], :W - 2] = old[slot[r], a:a + W - 2]
            new[slot[r], W - 2:] = x[r]
    return qkv.reshape(c.S, C), fx.conv_state_in_layout(new)


def recurrence(fx, qkv, proj, g1, bug):
    """E: o (#6) and one ssm_state written per token."""
    c = fx.config
    H, K, V, E, L = c.H, c.K, c.V, c.E, c.L
    idx, acc_n = fx["state_indices"], fx["num_accepted"]
    ssm = fx["ssm_state"].copy()
    o = np.zeros((c.S, E), dtype=np.uint16)  # +0 for a request without an initial state
    A = exp(fx["A_log"])[:, None]  # [H, 1]
    dt_bias = fx["dt_bias"].reshape(H, K)
    l2eps, lb, kscale = f32(c.l2_eps), f32(c.lower_bound), f32(K ** -0.5)
    for r in range(c.R):
        init = idx[r, acc_n[r] - 1]
        if init <= 0:
            if bug != "null-state-reads-slot0":
                continue
            init = 0
        St = fx["ssm_state"][init].copy()  # [H, V, K]
        for t in range(L):
            s = r * L + t
            q = f(qkv[s, :E]).reshape(H, K)
            k = f(qkv[s, E:2 * E]).reshape(H, K)
            v = f(qkv[s, 2 * E:]).reshape(H, V)
            qn = (q / np.sqrt(seq_sum(q * q) + l2eps)[:, None]) * kscale
            kn = k / np.sqrt(seq_sum(k * k) + l2eps)[:, None]
            gate = lb * sigmoid(A * (f(g1[s]).reshape(H, K) + dt_bias))
            St = St * exp(gate)[:, None, :]  # decay per key column, first
            beta = sigmoid(f(proj[s, c.col_beta:c.col_beta + H]))
            u = (v - seq_sum(St * kn[:, None, :])) * beta[:, None]
            St = St + u[:, :, None] * kn[:, None, :]
            o[s] = rnd(seq_sum(St * qn[:, None, :])).reshape(E)
            last = t == L - 1
            if idx[r, t] > 0 and (bug != "last-state-only" or last):
                ssm[idx[r, t]] = St
    if bug == "ssm-transposed":
        ssm = np.ascontiguousarray(np.swapaxes(ssm, 2, 3))
    return o, ssm


def out_norm(fx, o, proj):
    """F: core_out (#7), per row and head."""
    c = fx.config
    H, V = c.H, c.V
    ob = f(o).reshape(c.S, H, V)
    rr = f32(1) / np.sqrt(seq_sum(ob * ob) / f32(V) + f32(c.eps))
    g2 = f(proj[:, c.col_g2:c.col_g2 + c.E]).reshape(c.S, H, V)
    return rnd(((ob * rr[:, :, None]) * f(fx["o_norm_w"])) * sigmoid(g2)).reshape(c.S, c.E)


def kda_pre(fx, bug=None):
    """Steps A-F on a fixture: a dict of SPEC §2 outputs."""
    c = fx.config
    if bug == "crash-on-nb8" and c.nb == 8:
        raise RuntimeError("planted crash: nb = 8")
    if bug == "hang-on-l7" and c.L == 7:
        while True:
            time.sleep(60)
    prefix_out, blocks, x = attnres(fx)
    proj = rnd(gemm_rows(f(x), f(fx["in_proj_w"])))
    g1 = rnd(gemm_rows(f(proj[:, c.col_fa:c.col_fa + c.F]), f(fx["f_b_w"])))
    qkv, conv_state = short_conv(fx, proj, bug)
    o, ssm_state = recurrence(fx, qkv, proj, g1, bug)
    core_out = out_norm(fx, o, proj)
    return dict(prefix_out=prefix_out, blocks=blocks, conv_state=conv_state, ssm_state=ssm_state, x=x,
                proj=proj, g1=g1, qkv=qkv, o=o, core_out=core_out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("fixture", nargs="?")
    ap.add_argument("out", nargs="?")
    ap.add_argument("--bug", default=os.environ.get("MONOKDA_EXAMPLE_BUG") or None, help="plant a bug (--list-bugs)")
    ap.add_argument("--list-bugs", action="store_true")
    args = ap.parse_args(argv)
    if args.list_bugs:
        for name, what in BUGS.items():
            print(f"{name:24} {what}")
        return 0
    if not args.fixture or not args.out:
        ap.error("give FIXTURE and OUT")
    if args.bug is not None and args.bug not in BUGS:
        ap.error(f"unknown bug '{args.bug}' (known: {', '.join(BUGS)})")
    try:
        fx = monokda.load_fixture(args.fixture)
    except (OSError, ValueError) as e:
        print(f"kda_pre_numpy: error: {e}", file=sys.stderr)
        return 2
    outputs = kda_pre(fx, args.bug)
    # (ssm-transposed keeps the shape, since K = V: only the values give it away)
    monokda.save_outputs(args.out, outputs, fx, extra_metadata={"producer": "examples/kda_pre_numpy.py"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
