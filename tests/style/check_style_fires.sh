#!/usr/bin/env bash
# scripts/check-style.py must catch each planted defect, by rule and by place, pass the same tree
# without it, and stay quiet on the shapes its heuristics must not take for a long function.
# Usage: check_style_fires.sh PYTHON
set -uo pipefail
py=${1:-python3}
check="$(cd "$(dirname "$0")/../.." && pwd)/scripts/check-style.py"
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
fail=0
lines() { for ((k = 0; k < $1; ++k)); do echo "    x += $k;"; done; }
clean_tree() {
    rm -rf "$tmp/t" && mkdir -p "$tmp/t/src" && git -C "$tmp/t" init -q
    # a 120-line function (at the limit); a 200-line doctest suite of short cases; braces in a
    # comment, a string and a raw string; a constructor with a brace initialiser; a Python def
    { echo '// a function at the limit'; echo 'int f(int x) {'; lines 117; echo '    return x;'; echo '}'; } >"$tmp/t/src/at_limit.cpp"
    { echo '// a suite'; echo 'TEST_SUITE("s") {'
      for ((c = 0; c < 20; ++c)); do echo "TEST_CASE(\"c$c\") {"; lines 8; echo '}'; done; echo '}'; } >"$tmp/t/src/suite.cpp"
    { echo '// braces that are not code'; echo 'struct A { int v; A(int x) : v{x} {'; lines 50; echo '} };'
      echo 'const char* s = "{{{{"; // }}}}'; echo 'const char* r = R"x({ { {)x";'; echo '/* { */'; } >"$tmp/t/src/odd.hpp"
    { echo '"""a module"""'; echo 'def g():'; for ((k = 0; k < 100; ++k)); do echo "    y = $k"; done; } >"$tmp/t/src/mod.py"
    printf '#!/bin/sh\n# a script\necho hi\n' >"$tmp/t/src/run.sh"
}
run() { out=$("$py" "$check" "$@" "$tmp/t" 2>&1); rc=$?; }
expect() {  # expect PATTERN DESCRIPTION [--allow KEY]...: the check fails with a line matching PATTERN
    local pat=$1 what=$2; shift 2
    run "$@"
    if [ $rc -ne 1 ] || ! grep -qE "$pat" <<<"$out"; then
        echo "FAIL: $what: expected /$pat/ (rc $rc): $out"; fail=1
    else
        echo "ok: $what -> $(grep -E "$pat" <<<"$out" | head -1)"
    fi
}
clean_tree; run --allow src/at_limit.cpp:f
[ $rc -eq 1 ] && grep -qx 'allowed: src/at_limit.cpp:f: within its limit now (or not found): delete its entry' <<<"$out" &&
    [ "$(wc -l <<<"$out")" -eq 1 ] || { echo "FAIL: the clean tree: only the stale entry expected (rc $rc): $out"; fail=1; }
clean_tree; { echo '// big'; for ((k = 0; k < 600; ++k)); do echo "int v$k;"; done; } >"$tmp/t/src/big.cpp"
expect '^file: src/big.cpp: 601 lines \(limit 600\)$' "a file over 600 lines"
clean_tree; { echo '// long'; echo 'namespace n {'; echo 'void Long::run(int x) const {'; lines 119; echo '}'; echo '}'; } >"$tmp/t/src/long.cpp"
expect '^function: src/long.cpp:3 Long::run: 121 lines \(limit 120\)$' "a function over 120 lines"
clean_tree; { echo '// long test'; echo 'TEST_SUITE("s") {'; echo 'TEST_CASE("long") {'; lines 119; echo '}'; echo '}'; } >"$tmp/t/src/t.cpp"
expect '^function: src/t.cpp:3 TEST_CASE: 121 lines' "a test case over 120 lines inside a suite"
clean_tree; { echo '"""m"""'; echo 'class C:'; echo '    def h(self):'; for ((k = 0; k < 120; ++k)); do echo "        z = $k"; done; } >"$tmp/t/src/long.py"
expect '^function: src/long.py:3 h: 121 lines' "a Python def over 120 lines"
clean_tree; { echo '// ctor'; echo 'Pool::Pool(int n) : n_(n), v_{n} {'; lines 119; echo '}'; } >"$tmp/t/src/ctor.cpp"
expect '^function: src/ctor.cpp:2 Pool::Pool: 121 lines' "a constructor with a brace initialiser over 120 lines"
clean_tree; sed -i 1d "$tmp/t/src/odd.hpp"; expect '^header: src/odd.hpp: ' "a C++ file without a header comment"
clean_tree; printf '#!/bin/sh\necho hi\n' >"$tmp/t/src/run.sh"; expect '^header: src/run.sh: ' "a script without a header comment"
clean_tree; printf 'add_executable(x x.cpp)\n' >"$tmp/t/CMakeLists.txt"; expect '^header: CMakeLists.txt: ' "a CMakeLists.txt without a header comment"
# an allowed file or function stays quiet; the entry of one that no longer exceeds fires
clean_tree; { echo '// big'; for ((k = 0; k < 600; ++k)); do echo "int v$k;"; done; } >"$tmp/t/src/big.cpp"
run --allow src/big.cpp
[ $rc -eq 0 ] && [ -z "$out" ] || { echo "FAIL: an allowed file still fires (rc $rc): $out"; fail=1; }
clean_tree; expect '^allowed: src/gone.cpp: ' "an allowed entry that names nothing" --allow src/gone.cpp
exit $fail
