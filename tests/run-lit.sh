#!/usr/bin/env bash
# A small lit: runs each `RUN:` line of a test file through bash with
# substitutions, failing on the first line that fails.
#   %kiln -> the kiln driver   %s -> this file   %S -> its folder
#   %t    -> a scratch path    FileCheck -> LLVM 19's FileCheck
#   %not  -> inverts an exit status (`%not %kiln run bad.kiln` must fail)
# A `REQUIRES-PATH: PATH` line (same substitutions, then expanded by bash, so
# `${KILN_SHARED_DIR:-%S/../../../shared}/conformance` works) skips the test
# when PATH does not exist: it prints "SKIPPED: ..." and exits 77, which
# ctest reports as skipped (SKIP_RETURN_CODE in tests/CMakeLists.txt). Use it
# for inputs outside the clone, such as the conformance corpus in ../shared.
# Usage: run-lit.sh FILE KILN FILECHECK TMPDIR
set -uo pipefail
file=$1 kiln=$2 filecheck=$3 tmp=$4
mkdir -p "$tmp"
name=$(echo "$file" | tr '/' '_')
scratch="$tmp/$name.tmp"
rm -rf "$scratch" && mkdir -p "$scratch"
dir=$(cd "$(dirname "$file")" && pwd)
notfn="$scratch/not"  # per test: parallel tests must not rewrite each other's
cat >"$notfn" <<'NOT'
#!/usr/bin/env bash
"$@"; rc=$?
if [[ $rc -eq 0 ]]; then exit 1; fi
# A crash (signal) or internal error is never an expected failure.
if [[ $rc -ge 2 ]]; then echo "not: command exited $rc (internal error or crash)" >&2; exit 1; fi
exit 0
NOT
chmod +x "$notfn"
subst() {
  local cmd=$1
  cmd=${cmd//%kiln/$kiln}
  cmd=${cmd//%not/$notfn}
  cmd=${cmd//%s/$file}
  cmd=${cmd//%S/$dir}
  cmd=${cmd//%t/$scratch/t}
  cmd=${cmd//FileCheck/$filecheck}
  printf '%s' "$cmd"
}
while IFS= read -r line; do
  path=$(subst "${line#*REQUIRES-PATH:}")
  path=${path#"${path%%[![:space:]]*}"}  # trim leading and trailing blanks
  path=${path%"${path##*[![:space:]]}"}
  if ! path=$(bash -uc "printf '%s' \"$path\""); then  # expands ${VAR:-default}
    echo "bad REQUIRES-PATH line in $file: $line" >&2
    exit 1
  fi
  if [[ ! -e "$path" ]]; then
    echo "SKIPPED: required path $path does not exist"
    exit 77
  fi
done < <(grep -E '(#|//) *REQUIRES-PATH:' "$file")
# A build without LLVM (scripts/gpu-check's) may have no FileCheck at all.
if [[ ! -x "$filecheck" ]] && ! command -v "$filecheck" >/dev/null 2>&1 && grep -qE 'RUN:.*FileCheck' "$file"; then
  echo "SKIPPED: FileCheck not found ($filecheck); install llvm-19-tools"
  exit 77
fi
status=0
n=0
while IFS= read -r line; do
  cmd=$(subst "${line#*RUN:}")
  n=$((n + 1))
  echo "RUN[$n]: $cmd"
  if ! (cd "$scratch" && bash -o pipefail -c "$cmd"); then
    echo "FAILED: RUN line $n of $file" >&2
    status=1
    break
  fi
done < <(grep -E '(#|//) *RUN:' "$file")
if [[ $n -eq 0 ]]; then
  echo "no RUN: lines in $file" >&2
  exit 1
fi
exit $status
