#!/usr/bin/env bash
# check_fetch.sh MODE SOURCE_DIR DATA_DIR: data/fetch.sh and its manifest (ctest data.*).
#   checksums  `fetch.sh --check` on the data the tests read ($IMPULSE_DATA, else DATA_DIR,
#              CMake's IMPULSE_DATA_DIR) for every set present: every sum matches. Exits 77
#              (ctest: skipped) when the data are absent; fails instead under CI (CI set).
#   offline    no network: --check names an altered and a missing file and exits non-zero
#              (small made-up sets; and the real sets, when present, as a linked copy with
#              one file altered and one missing); the fetch itself from a local file://
#              mirror (IMPULSE_FETCH_BASE): a failed set leaves the old one as it was, a
#              second run downloads nothing, the real sets arrive verified and renumbered.
set -euo pipefail
mode=$1 src=$2 data=${IMPULSE_DATA:-$3}  # the data the tests read
fetch="$src/data/fetch.sh"
CUBE_PIN=DAIRLab/contact-nets/c3dc21c94577ff4ed99123f0b00bfe57bb2d1d90
ELBOW_PIN=ebianchi/dair_pll/9a9514e027c4fc7662cb490543a4d8415402df28
failures=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
in_ci() { [ -n "${CI:-}" ] && [ "${CI}" != false ] && [ "${CI}" != 0 ]; }
skip() {
  if in_ci; then echo "FAIL: $* (CI must have ../shared/data)"; exit 1; fi
  echo "skipped: $*"; exit 77
}
have_cube() { [ -d "$data/cube_toss/contact-nets/data/tosses_processed" ]; }
have_elbow() { [ -d "$data/articulated_elbow" ]; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/check_fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export IMPULSE_DATA="$tmp/default_dest"  # nothing is written into the source tree

# runs fetch.sh ARGS..., its output in $tmp/out and its status in $rc
run() { rc=0; bash "$fetch" "$@" > "$tmp/out" 2>&1 || rc=$?; }
expect() {  # expect RC WHAT PATTERN...: the last run's status and lines of its output
  local want=$1 what=$2 p ok=1; shift 2
  [ "$rc" = "$want" ] || { fail "$what: exit $rc, expected $want"; ok=0; }
  for p in "$@"; do grep -qF -- "$p" "$tmp/out" || { fail "$what: no line '$p' in the output"; ok=0; }; done
  if [ "$ok" = 1 ]; then pass "$what"; else sed 's/^/    /' "$tmp/out" | head -40; fi
}

if [ "$mode" = checksums ]; then
  have_cube || have_elbow ||
    skip "real cube and elbow tosses absent (looked in $data): bash data/fetch.sh cube elbow"
  for set in cube elbow; do
    if ! "have_$set"; then
      in_ci && fail "$set absent from $data (CI must have ../shared/data)"
      echo "note: $set absent from $data, not checked (bash data/fetch.sh $set)"
      continue
    fi
    n=$(grep -c "^[0-9a-f]\{64\}  $( [ $set = cube ] && echo cube_toss/ || echo articulated_elbow/ )" "$src/data/checksums.sha256")
    run --check "$data" "$set"
    expect 0 "$set: the manifest's $n sums match $data" "$set: $n/$n files verified"
  done
  [ "$failures" = 0 ] || { echo "$failures failed"; exit 1; }
  exit 0
fi
[ "$mode" = offline ] || { echo "usage: check_fetch.sh checksums|offline SOURCE_DIR DATA_DIR" >&2; exit 2; }

# ---- a made-up pair of sets: --check and the fetch from a mirror ---------------------------
mk() { mkdir -p "$(dirname "$1")"; head -c "$2" /dev/urandom > "$1"; }
orig="$tmp/orig"
mk "$orig/cube_toss/contact-nets/data/tosses_processed/0.pt" 3000
mk "$orig/cube_toss/contact-nets/data/tosses_processed/1.pt" 2000
mk "$orig/cube_toss/contact-nets/data/params_processed/experiment.json" 300
mk "$orig/articulated_elbow/0.pt" 1000
mk "$orig/articulated_elbow/1.pt" 1000
(cd "$orig" && find . -type f | sed 's|^\./||' | sort | xargs sha256sum) > "$tmp/manifest"

run --manifest "$tmp/manifest" --check "$orig"
expect 0 "made-up sets verify" "cube: 3/3 files verified" "elbow: 2/2 files verified"

bad="$tmp/bad"; cp -a "$orig" "$bad"
printf 'x' >> "$bad/articulated_elbow/1.pt"
rm "$bad/cube_toss/contact-nets/data/tosses_processed/0.pt"
run --manifest "$tmp/manifest" --check "$bad"
expect 1 "an altered and a missing file are named, exit 1" \
  "elbow: altered (SHA-256 differs): articulated_elbow/1.pt" \
  "cube: missing: cube_toss/contact-nets/data/tosses_processed/0.pt"
run --manifest "$tmp/manifest" --check "$bad" elbow
expect 1 "one set checked alone" "elbow: altered (SHA-256 differs): articulated_elbow/1.pt"
grep -q "^cube" "$tmp/out" && fail "--check DIR elbow looked at cube"

run --check "$bad" impacts
expect 3 "impacts has no sums: said so, exit 3" "impacts: no checksums"
run --check "$tmp/nowhere"
expect 1 "--check of a folder that is not there fails" "is not a folder"
run mm
expect 3 "mm: not downloadable, says where it comes from" "mm: not downloadable" "Simple-Robotics/proxsuite"
run impacts
expect 3 "impacts: not downloadable, says where it comes from" "impacts: not downloadable" "mcubelab/planar-impact-dataset"
run contactnets_qps
expect 3 "contactnets_qps: recorded, not published" "contactnets_qps: recorded, not published"
run nonsense
expect 2 "an unknown set is a usage error" "unknown set"
run --help
expect 0 "--help" "usage: bash data/fetch.sh"

if ! command -v curl > /dev/null; then
  echo "note: no curl: the fetch from a file:// mirror is not tested"
else
  # the mirror: OWNER/REPO/COMMIT/PATH; elbow's k.pt is the original (2k).pt
  mirror="$tmp/mirror"
  mkdir -p "$mirror/$CUBE_PIN/data" "$mirror/$ELBOW_PIN/assets/contactnets_elbow"
  cp -a "$orig/cube_toss/contact-nets/data/." "$mirror/$CUBE_PIN/data/"
  cp "$orig/articulated_elbow/0.pt" "$mirror/$ELBOW_PIN/assets/contactnets_elbow/0.pt"
  cp "$orig/articulated_elbow/1.pt" "$mirror/$ELBOW_PIN/assets/contactnets_elbow/2.pt"
  export IMPULSE_FETCH_BASE="file://$mirror"
  out="$tmp/dest"
  IMPULSE_DATA="$out" run --manifest "$tmp/manifest"
  expect 0 "fetch from a mirror: both sets, renumbered, and the final line" \
    "cube: 3/3 files verified in $out/cube_toss/contact-nets/data (3 downloaded)" \
    "elbow: 2/2 files verified in $out/articulated_elbow (2 downloaded)" \
    "fetch.sh: put cube (3 files) in $out/cube_toss/contact-nets/data, elbow (2 files) in $out/articulated_elbow"
  cmp -s "$out/articulated_elbow/1.pt" "$orig/articulated_elbow/1.pt" || fail "articulated_elbow/1.pt is not the original 2.pt"
  run --manifest "$tmp/manifest" --check "$out"
  expect 0 "the fetched tree verifies" "cube: 3/3 files verified" "elbow: 2/2 files verified"

  mv "$mirror" "$mirror.off"  # a second run needs no download
  IMPULSE_DATA="$out" run --manifest "$tmp/manifest" cube elbow
  expect 0 "present and verified files are not downloaded again" \
    "cube: 3/3 files already present and verified" "elbow: 2/2 files already present and verified"
  mv "$mirror.off" "$mirror"

  # a set whose download does not verify: the old set stays as it was, no temporary folder left
  echo "a note of the user's" > "$out/articulated_elbow/README.md"
  rm "$out/articulated_elbow/1.pt"
  printf 'y' >> "$mirror/$ELBOW_PIN/assets/contactnets_elbow/2.pt"
  IMPULSE_DATA="$out" run --manifest "$tmp/manifest" elbow
  expect 1 "a download that does not match its sum fails, named" \
    "articulated_elbow/1.pt (from file://$mirror/$ELBOW_PIN/assets/contactnets_elbow/2.pt) does not match its SHA-256"
  [ -f "$out/articulated_elbow/0.pt" ] && [ ! -e "$out/articulated_elbow/1.pt" ] && [ -f "$out/articulated_elbow/README.md" ] \
    && pass "the failed set is left as it was" || fail "the failed set was changed: $(ls "$out/articulated_elbow")"
  leftovers=$(find "$out" -maxdepth 1 -name '.fetch-*')
  [ -z "$leftovers" ] && pass "no temporary folder left" || fail "left behind: $leftovers"

  # a file missing from the mirror: named, nothing changed
  rm "$mirror/$ELBOW_PIN/assets/contactnets_elbow/2.pt"
  IMPULSE_DATA="$out" run --manifest "$tmp/manifest" elbow
  expect 1 "a file that cannot be downloaded fails, named" "could not download file://$mirror/$ELBOW_PIN/assets/contactnets_elbow/2.pt"

  cp "$orig/articulated_elbow/1.pt" "$mirror/$ELBOW_PIN/assets/contactnets_elbow/2.pt"
  IMPULSE_DATA="$out" run --manifest "$tmp/manifest" elbow
  expect 0 "the repaired mirror: only the missing file downloaded" "elbow: 2/2 files verified in $out/articulated_elbow (1 downloaded)"
  [ -f "$out/articulated_elbow/README.md" ] && pass "a file outside the manifest stays" || fail "README.md of the old set was lost"
  run --manifest "$tmp/manifest" --check "$out"
  expect 0 "the repaired tree verifies" "elbow: 2/2 files verified"
fi

# ---- the real sets, when present: a linked copy, altered; and the fetch from a mirror --------
if ! have_cube || ! have_elbow; then
  in_ci && fail "real data absent from $data (CI must have ../shared/data)"
  echo "note: real cube or elbow tosses absent (looked in $data): bash data/fetch.sh cube elbow; their part not run"
else
  real="$tmp/real"
  mkdir -p "$real/cube_toss/contact-nets/data/tosses_processed" "$real/cube_toss/contact-nets/data/params_processed" \
    "$real/articulated_elbow"
  while read -r _ path; do ln -s "$data/$path" "$real/$path"; done < "$src/data/checksums.sha256"
  rm "$real/articulated_elbow/5.pt"; cp "$data/articulated_elbow/5.pt" "$real/articulated_elbow/5.pt"
  printf '\0' >> "$real/articulated_elbow/5.pt"
  rm "$real/cube_toss/contact-nets/data/tosses_processed/100.pt"
  run --check "$real"
  expect 1 "real sets: an altered and a missing file are named" \
    "elbow: altered (SHA-256 differs): articulated_elbow/5.pt" \
    "cube: missing: cube_toss/contact-nets/data/tosses_processed/100.pt" \
    "cube: 1 of 571 files missing or altered" "elbow: 1 of 271 files missing or altered"

  if command -v curl > /dev/null; then
    # the upstream layout, linked to the copies (elbow: only the even-numbered originals)
    mirror="$tmp/real_mirror"
    mkdir -p "$mirror/$CUBE_PIN/data/tosses_processed" "$mirror/$CUBE_PIN/data/params_processed" \
      "$mirror/$ELBOW_PIN/assets/contactnets_elbow"
    while read -r _ path; do
      case $path in
        cube_toss/*) to="$mirror/$CUBE_PIN/data/${path#cube_toss/contact-nets/data/}" ;;
        articulated_elbow/*) k=${path#articulated_elbow/}; k=${k%.pt}
          to="$mirror/$ELBOW_PIN/assets/contactnets_elbow/$((2 * k)).pt" ;;
      esac
      ln -s "$data/$path" "$to"
    done < "$src/data/checksums.sha256"
    out="$tmp/real_dest"
    IMPULSE_FETCH_BASE="file://$mirror" IMPULSE_DATA="$out" run all
    expect 0 "real sets fetched from a mirror of the upstream layout, verified" \
      "cube: 571/571 files verified in $out/cube_toss/contact-nets/data (571 downloaded)" \
      "elbow: 271/271 files verified in $out/articulated_elbow (271 downloaded)" \
      "impacts: not downloadable" "mm: not downloadable" "contactnets_qps: recorded, not published"
    diff -r "$out/articulated_elbow" "$data/articulated_elbow" --exclude=README.md > /dev/null \
      && pass "the fetched elbow equals the copy the tests read" || fail "the fetched elbow differs from $data/articulated_elbow"
  fi
fi

[ "$failures" = 0 ] || { echo "$failures failed"; exit 1; }
echo "all passed"
