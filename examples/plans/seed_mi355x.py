#!/usr/bin/env python3
"""The seed kernel's layout (SPEC §4.1, vLLM's AMD mono kernel on a 256-CU MI355X) as a monokda plan file.

    python3 examples/plans/seed_mi355x.py --R 2 --L 4 -o seed.json
    monokda plan check seed.json
    monokda emulate --plan seed.json --schedule pct --seed 7

The layout, one CTA a CU, every CTA co-resident:
  * attn CTAs 0..55, one 128-column slice each: ATTN_PART, the gates of rows t with t mod 56 = the CTA
    (ATTN_GATE), ATTN_MIX, ATTN_X;
  * gemv CTAs 56..255: in_proj in 16-row groups, contiguous bands of two groups a CTA (393 groups:
    196 bands of two, one of one); a band's first group's weights are issued at launch
    (GEMV_PREFETCH before any wait), the next group's as the previous one ends;
  * kda tasks (r, h, chunk of 16 state rows: 8 a head) dealt round-robin over CTAs 0.. after each
    CTA's first role: task t on CTA t mod 256;
  * AMD in-order load retirement: a poll retires behind every earlier load of its CTA.

Edit it for your own kernel: the lists are plain Python lists, every wait and product is written out
(an entry is "BOX[dim i][dim j..k]", see docs/plan-file.md), and monokda checks each one against what
its instruction reads and stores. Nothing here needs numpy.
"""
import argparse
import json
import sys

# SPEC §1's production shape (one TP8 rank of Kimi-K3)
D, H, K, V, F, W = 7168, 12, 128, 128, 128, 4
E = H * K
C = 3 * E
N = (4 * E + F + H + 15) // 16 * 16  # q|k|v|g|f_a|beta, padded to a multiple of 16: 6288

SLICE = 128       # columns of D per attn CTA
GROUP_ROWS = 16   # in_proj rows (proj columns) per gemv group
CHUNK_ROWS = 16   # state rows per kda task
CUS = 256         # CTAs, one a CU
GROUPS_A_CTA = 2  # in_proj groups a gemv CTA


def rng(a, b):
    """An index (a == b) or an inclusive range, as an entry names it."""
    return str(a) if a == b else f"{a}..{b}"


def plan(R, L, nb, blocks=CUS):
    S = R * L
    n_attn = D // SLICE
    n_groups = N // GROUP_ROWS
    n_chunks = V // CHUNK_ROWS
    qs = K // n_chunks  # q (and k) channels a kda task convolves
    lists = [[] for _ in range(blocks)]

    # ---- attn: slice j on CTA j, all S rows (one row part)
    for j in range(n_attn):
        l = lists[j]
        l.append({"op": "ATTN_PART", "slice": j, "part": 0,
                  "produces": [f"PART[row {rng(0, S - 1)}][src {rng(0, nb)}][slice {j}]"]})
        for row in range(j, S, n_attn):  # the gate of row t on CTA t mod 56
            l.append({"op": "ATTN_GATE", "row": row,
                      "waits": [f"PART[row {row}][src {rng(0, nb)}][slice {rng(0, n_attn - 1)}]"],
                      "produces": [f"WGT[row {row}]"]})
        l.append({"op": "ATTN_MIX", "slice": j, "part": 0,
                  "waits": [{"each": "row", "on": f"WGT[row {rng(0, S - 1)}]"}],  # row by row
                  "produces": [f"MSQ[row {rng(0, S - 1)}][slice {j}]"]})
        l.append({"op": "ATTN_X", "slice": j, "part": 0,
                  "waits": [{"each": "row", "on": f"MSQ[row {rng(0, S - 1)}][slice {rng(0, n_attn - 1)}]"}],
                  "produces": [f"XRDY[slice {j}][part 0]"]})

    # ---- gemv: bands of GROUPS_A_CTA groups over the CTAs past the slices
    for g in range(n_groups):
        l = lists[n_attn + g // GROUPS_A_CTA]
        l.append({"op": "GEMV_PREFETCH", "group": g})
        l.append({"op": "GEMV_GROUP", "group": g,
                  "waits": [{"each": "slice", "on": f"XRDY[slice {rng(0, n_attn - 1)}][part 0]"}],  # x slice by slice
                  "produces": [f"PROJ[group {g}]"]})

    # ---- kda: a task's instructions in order; waits on the PROJ groups holding the columns it reads
    def groups(col0, ncols):
        return list(range(col0 // GROUP_ROWS, (col0 + ncols - 1) // GROUP_ROWS + 1))

    def proj_waits(gs):
        seen = []
        for g in gs:
            if g not in seen:
                seen.append(g)
        return [f"PROJ[group {g}]" for g in seen]

    task = 0
    for r in range(R):
        for h in range(H):
            for ch in range(n_chunks):
                l = lists[task % blocks]
                task += 1
                conv = (groups(h * K + ch * qs, qs) + groups(E + h * K + ch * qs, qs) +  # q and k shares
                        groups(2 * E + h * V + ch * CHUNK_ROWS, CHUNK_ROWS) +            # v rows
                        (groups(4 * E, F) if n_chunks > 1 else []))                       # f_a: the g1 share
                siblings = [c for c in range(n_chunks) if c != ch]
                rec = [f"QK[r {r}][h {h}][chunk {c}]" for c in siblings]
                if n_chunks == 1:
                    rec += proj_waits(groups(4 * E, F))
                rec += proj_waits(groups(4 * E + F + h, 1))  # beta
                norm = [f"ONRM[row {r * L + t}][h {h}][chunk {c}]" for t in range(L) for c in siblings]
                norm += proj_waits(groups(3 * E + h * V + ch * CHUNK_ROWS, CHUNK_ROWS))  # g2
                task_id = {"r": r, "h": h, "chunk": ch}
                l.append({"op": "KDA_LOAD", **task_id})
                l.append({"op": "KDA_CONV", **task_id, "waits": [proj_waits(conv)],
                          "produces": [f"QK[r {r}][h {h}][chunk {ch}]"]})
                l.append({"op": "KDA_REC", **task_id, "waits": [rec],
                          "produces": [f"ONRM[row {rng(r * L, r * L + L - 1)}][h {h}][chunk {ch}]"]})
                l.append({"op": "KDA_NORM", **task_id, **({"waits": [norm]} if norm else {})})

    split = lambda n: f"split:{n}"
    tree = "pairwise"  # a wave's 16-lane butterflies over the 128-term sums (change to your kernel's)
    return {
        "format": "monokda-plan",
        "version": 1,
        "name": f"seed MI355X layout (SPEC 4.1), R {R} L {L} nb {nb}",
        "comment": "generated by examples/plans/seed_mi355x.py",
        "config": {"D": D, "H": H, "K": K, "V": V, "F": F, "N": N, "C": C, "W": W, "R": R, "L": L, "nb": nb},
        "layout": {"slice_width": SLICE, "attn_row_parts": 1, "gemv_group_rows": GROUP_ROWS,
                   "kda_chunk_rows": CHUNK_ROWS},
        "target": {"name": "MI355X", "in_order_loads": True},
        "launch": {"co_resident": CUS, "cooperative": True, "order": list(range(blocks))},
        "mailboxes": {
            "PART": {"kind": "tagged", "words": 2, "dims": [["row", S], ["src", nb + 1], ["slice", n_attn]]},
            "WGT": {"kind": "tagged", "words": nb + 2, "dims": [["row", S]]},
            "MSQ": {"kind": "tagged", "words": 1, "dims": [["row", S], ["slice", n_attn]]},
            "XRDY": {"kind": "flag", "words": 1, "dims": [["slice", n_attn], ["part", 1]]},
            "PROJ": {"kind": "flag", "words": 1, "dims": [["group", n_groups]]},
            "QK": {"kind": "flag", "words": 1, "dims": [["r", R], ["h", H], ["chunk", n_chunks]]},
            "ONRM": {"kind": "tagged", "words": 1, "dims": [["row", S], ["h", H], ["chunk", n_chunks]]},
        },
        "reduction_order": {
            "attn_sumsq": split(n_attn), "attn_dot": split(n_attn), "softmax_den": "sequential",
            "mix": "sequential", "x_sumsq": split(n_attn), "in_proj": split(n_attn), "f_b": tree,
            "l2_q": tree, "l2_k": tree, "rec_kS": tree, "rec_oq": tree, "onorm_sumsq": split(n_chunks),
        },
        "ctas": [{"cta": i, "instrs": l} for i, l in enumerate(lists)],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--R", type=int, default=2, help="requests")
    ap.add_argument("--L", type=int, default=4, help="tokens a request")
    ap.add_argument("--nb", type=int, default=4, help="AttnRes bank rows in use")
    ap.add_argument("--blocks", type=int, default=CUS, help="CTAs (the kda tasks' round-robin; 256 on MI355X)")
    ap.add_argument("-o", "--output", required=True, help="the plan file to write")
    a = ap.parse_args()
    if not (1 <= a.R <= 4096 and 1 <= a.L <= 64 and 1 <= a.nb <= 8):
        sys.exit("seed_mi355x.py: R must be 1..4096, L 1..64, nb 1..8")
    if a.blocks < D // SLICE + (N // GROUP_ROWS + GROUPS_A_CTA - 1) // GROUPS_A_CTA:
        sys.exit(f"seed_mi355x.py: --blocks must hold the 56 attn CTAs and the gemv bands ({a.blocks} given)")
    p = plan(a.R, a.L, a.nb, a.blocks)
    with open(a.output, "w") as f:
        json.dump(p, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
