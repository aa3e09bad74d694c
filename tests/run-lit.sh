#!/usr/bin/env bash
# A small lit: runs each `RUN:` line of a test file through bash with
# substitutions, failing on the first line that fails.
#   %kiln -> the kiln driver   %s -> this file   %S -> its folder
#   %t    -> a scratch path    FileCheck -> LLVM 19's FileCheck
#   %not  -> inverts an exit status (`%not %kiln run bad.kiln` must fail)
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
status=0
n=0
while IFS= read -r line; do
  cmd=${line#*RUN:}
  cmd=${cmd//%kiln/$kiln}
  cmd=${cmd//%not/$notfn}
  cmd=${cmd//%s/$file}
  cmd=${cmd//%S/$dir}
  cmd=${cmd//%t/$scratch/t}
  cmd=${cmd//FileCheck/$filecheck}
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
