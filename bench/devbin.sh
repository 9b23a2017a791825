#!/usr/bin/env bash
# devbin.sh NAME [COMMIT]: build COMMIT's programs (default HEAD) for the
# device into .devbin/NAME, xz-compressed: libdpml.so, dpmlbench, gocall,
# the C clients dpmlbench-c and gocall-c, and dpmlrun, with COMMIT's hash
# in .devbin/NAME/COMMIT. The device has no Go toolchain: a device call
# carries .devbin (git-ignored; name it in the call's carry), and the
# measurement scripts' common.sh decompresses it there. COMMIT is built in a
# temporary worktree under bench/tmp (git-ignored), so the checkout's own
# files and bin/ stay as they are. A commit from before a program existed
# builds without it.
set -eu
name=${1:?usage: bench/devbin.sh NAME [COMMIT]}
rev=${2:-HEAD}
cd "$(git rev-parse --show-toplevel)"
commit=$(git rev-parse --verify "$rev^{commit}")
wt=bench/tmp/devbin-$name
git worktree remove --force "$wt" 2>/dev/null || rm -rf "$wt"
git worktree prune
mkdir -p bench/tmp
git worktree add --quiet --force --detach "$wt" "$commit" >/dev/null
trap 'git worktree remove --force "$wt" 2>/dev/null || true' EXIT
make -C "$wt" build >"$wt.log" 2>&1 || { echo "devbin.sh: make build of $commit failed: $wt.log" >&2; exit 1; }
out=.devbin/$name
rm -rf "$out"
mkdir -p "$out"
for p in libdpml.so dpmlbench gocall dpmlbench-c gocall-c dpmlrun; do
	[ -e "$wt/bin/$p" ] && cp "$wt/bin/$p" "$out/"
done
echo "$commit" >"$out/COMMIT"
xz -f -T0 $(ls -d "$out"/* | grep -v '/COMMIT$')
echo "$out: $commit ($(du -sh "$out" | cut -f1))"
