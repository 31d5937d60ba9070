#!/usr/bin/env bash
# check_docs.sh must catch each planted defect, by name, and pass the same tree without it.
set -uo pipefail
check="$(cd "$(dirname "$0")" && pwd)/check_docs.sh"
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
fail=0
clean_tree() {
    rm -rf "$tmp/t" && mkdir -p "$tmp/t/docs/results" "$tmp/t/docs/decisions"
    printf '# Index\n\n| record |\n|---|\n| [2026-01-01-h200-a.md](2026-01-01-h200-a.md) |\n' >"$tmp/t/docs/results/INDEX.md"
    printf '# a run\n\ncommit 0123abc, measured.\n' >"$tmp/t/docs/results/2026-01-01-h200-a.md"
    printf '# Design\n\nThe evidence: [a](results/2026-01-01-h200-a.md); 90144768 bytes, eps 1.0000000000000001e-05.\n' >"$tmp/t/docs/design.md"
    printf '# 0001\n\nSee [the run](../results/2026-01-01-h200-a.md).\n' >"$tmp/t/docs/decisions/0001-x.md"
    table='| R | L | S | fused µs |\n|---|---|---|---|\n| 1 | 1 | 1 | 48.5 |\n'
    printf "# sweep\n\n$table\n## more\n\n| a |\n|---|\n" >"$tmp/t/docs/results/perf-h200.md"
    printf "# Performance\n\n<!-- latest sweep: begin -->\n$table<!-- latest sweep: end -->\n" >"$tmp/t/docs/performance.md"
    printf '| [perf-h200.md](perf-h200.md) |\n' >>"$tmp/t/docs/results/INDEX.md"
}
expect() {  # expect RULE DESCRIPTION: the check fails and names RULE
    out=$(bash "$check" "$tmp/t" 2>&1); rc=$?
    if [ $rc -ne 1 ] || ! grep -q "^$1: " <<<"$out"; then
        echo "FAIL: $2: expected '$1' (rc $rc): $out"; fail=1
    else
        echo "ok: $2 -> $(head -1 <<<"$out")"
    fi
}
clean_tree
out=$(bash "$check" "$tmp/t" 2>&1) || { echo "FAIL: the clean tree does not pass: $out"; fail=1; }
clean_tree; echo x >"$tmp/t/docs/results/2026-01-02-h200-b.txt"; expect unlisted "a record not in INDEX.md"
clean_tree; printf '| [gone](2026-01-03-h200-gone.md) |\n' >>"$tmp/t/docs/results/INDEX.md"; expect missing "INDEX.md links a missing file"
clean_tree; printf 'Measured on 4804eeb.\n' >>"$tmp/t/docs/design.md"; expect hash "a commit hash in a design page"
clean_tree; printf 'Since c54d2fb.\n' >>"$tmp/t/docs/decisions/0001-x.md"; expect hash "a commit hash in a decision record"
clean_tree; printf '[b](../results/none.md)\n' >>"$tmp/t/docs/decisions/0001-x.md"; expect missing "a decision record links a missing file"
clean_tree; printf 'Faster (call 7).\n' >>"$tmp/t/docs/design.md"; expect call "a device call named in a design page"
clean_tree; sed -i 's/48.5/47.9/' "$tmp/t/docs/results/perf-h200.md"; expect table "a new sweep not copied into docs/performance.md"
bash "$check" --sync "$tmp/t" >/dev/null && grep -q '47.9' "$tmp/t/docs/performance.md" ||
    { echo "FAIL: --sync does not copy the sweep's table"; fail=1; }
exit $fail
