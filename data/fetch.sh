#!/usr/bin/env bash
# Fetches the public data sets the paper reproductions and the real-data tests read, from
# their public repositories at pinned commits, checks every file's SHA-256 against
# data/checksums.sha256 and puts them where the tests, benches and CLI examples look:
# $IMPULSE_DATA when set, else data/external/ in this repository (docs/data.md).
#
#   bash data/fetch.sh [SET ...]            SET: cube, elbow, impacts, mm, contactnets_qps, all (default)
#   bash data/fetch.sh --check DIR [SET ...]  verify DIR against the manifest (no network)
#   bash data/fetch.sh --help
#
# Downloadable, byte-identical to the upstream files:
#   cube   DAIRLab/contact-nets @ c3dc21c94577ff4ed99123f0b00bfe57bb2d1d90:
#          data/tosses_processed/0.pt ... 569.pt and data/params_processed/experiment.json
#          -> cube_toss/contact-nets/data/... (571 files, 9.3 MB)
#   elbow  ebianchi/dair_pll @ 9a9514e027c4fc7662cb490543a4d8415402df28:
#          the even-numbered originals of assets/contactnets_elbow/, renumbered:
#          articulated_elbow/k.pt = original (2k).pt, k = 0 ... 270 (271 files, 4 MB).
#          The odd-numbered half is held out to judge models and is never fetched.
# Not downloadable as published (the script says where they come from and exits 3):
#   impacts (planar_impact/), mm (maros_meszaros_small/): conversions of public .mat files,
#   subsets of them; contactnets_qps/: recorded from the reference implementation.
#
# Each file comes from https://raw.githubusercontent.com/OWNER/REPO/COMMIT/PATH (curl, 100
# files a call, else wget; retried, then one by one), into a temporary folder beside the destination; once every file of a set
# is there and verified, the set's folder is swapped in with renames: a set is either the
# old one or the whole new one, never half. Files already present and verified are not
# downloaded again. IMPULSE_FETCH_BASE replaces https://raw.githubusercontent.com (a mirror
# laid out as OWNER/REPO/COMMIT/PATH; file:// works with curl; tests/check_fetch.sh uses it).
#
# The manifest data/checksums.sha256 (sha256sum format, paths relative to the data root)
# was made from the copies CI reads (../shared/data beside the checkout, byte-identical to
# the upstream files), from the repository root, with:
#   (cd ../shared/data && { ls cube_toss/contact-nets/data/tosses_processed/*.pt | sort -V
#      echo cube_toss/contact-nets/data/params_processed/experiment.json
#      ls articulated_elbow/*.pt | sort -V; } | xargs sha256sum) > data/checksums.sha256
#
# Exit status: 0 every requested set is in place (with --check: verified); 1 a download or a
# check failed (the files are named); 2 usage; 3 a requested set is not downloadable.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
MANIFEST="$HERE/checksums.sha256"
BASE=${IMPULSE_FETCH_BASE:-https://raw.githubusercontent.com}
BASE=${BASE%/}

CUBE_REPO=DAIRLab/contact-nets
CUBE_COMMIT=c3dc21c94577ff4ed99123f0b00bfe57bb2d1d90
ELBOW_REPO=ebianchi/dair_pll
ELBOW_COMMIT=9a9514e027c4fc7662cb490543a4d8415402df28

usage() {
  cat <<EOF
usage: bash data/fetch.sh [SET ...]
       bash data/fetch.sh --check DIR [SET ...]
       bash data/fetch.sh --help

Fetches the public data sets the tests and paper reproductions read, checks their SHA-256
sums (data/checksums.sha256) and puts them in \$IMPULSE_DATA, else data/external/ in the
repository (now: $(dest_root)).

Sets:
  cube             570 real cube tosses and experiment.json (ContactNets; DAIRLab/contact-nets
                   @ ${CUBE_COMMIT:0:7}) -> cube_toss/contact-nets/data/
  elbow            271 real elbow tosses (CCN; ebianchi/dair_pll @ ${ELBOW_COMMIT:0:7}, the
                   even-numbered originals renumbered: k.pt = 2k.pt) -> articulated_elbow/
  impacts          planar_impact/: not downloadable as published (says where it comes from)
  mm               maros_meszaros_small/: not downloadable as published (likewise)
  contactnets_qps  recorded from the reference implementation, not published (likewise)
  all              cube and elbow, and the notes on the others (the default)

Options:
  --check DIR      verify the sets' files under DIR against the manifest, without network;
                   names every missing or altered file; exits 1 if there is one
  --manifest FILE  another manifest (tests)
  -h, --help       this text

Environment: IMPULSE_DATA (the destination), IMPULSE_FETCH_BASE (a mirror instead of
https://raw.githubusercontent.com, laid out as OWNER/REPO/COMMIT/PATH), IMPULSE_FETCH_TOOL
(curl or wget; default curl when installed).
Exit status: 0 done, 1 a download or check failed, 2 usage, 3 a set is not downloadable.
EOF
}

dest_root() {
  if [ -n "${IMPULSE_DATA:-}" ]; then printf '%s\n' "$IMPULSE_DATA"; else printf '%s\n' "$REPO/data/external"; fi
}

die() { echo "fetch.sh: $*" >&2; exit 1; }

# canonical set name, or "" when unknown
set_name() {
  case $1 in
    cube|cube_toss) echo cube ;;
    elbow|articulated_elbow) echo elbow ;;
    impacts|impact|planar_impact) echo impacts ;;
    mm|maros_meszaros_small) echo mm ;;
    contactnets_qps|qps) echo contactnets_qps ;;
    all) echo all ;;
    *) echo "" ;;
  esac
}

# the folder of a set under the data root, swapped in whole; its prefix in the manifest
set_dir() {
  case $1 in
    cube) echo cube_toss/contact-nets/data ;;
    elbow) echo articulated_elbow ;;
  esac
}

# where a file of the manifest (path under the data root) comes from: the URL, in $URL
URL=""
source_url() {
  local set=$1 path=$2 f k
  case $set in
    cube)
      URL="$BASE/$CUBE_REPO/$CUBE_COMMIT/data/${path#cube_toss/contact-nets/data/}" ;;
    elbow)
      # articulated_elbow/k.pt is the original (2k).pt
      f=${path#articulated_elbow/}; k=${f%.pt}
      [[ $k =~ ^[0-9]+$ ]] || die "manifest: $path is not articulated_elbow/N.pt"
      URL="$BASE/$ELBOW_REPO/$ELBOW_COMMIT/assets/contactnets_elbow/$((2 * 10#$k)).pt" ;;
  esac
}

# the note for a set this script does not download (stdout)
not_downloadable() {
  case $1 in
    impacts) cat <<'EOF'
impacts: not downloadable as published. planar_impact/ellipse_impacts.npz is a conversion
  (scipy, one NumPy archive) of 1,200 of the 1,718 impacts of the public repository
  mcubelab/planar-impact-dataset @ f24a7e3 (processed_data/*.mat; Fazeli et al. 2017);
  the conversion is not published and the other impacts are held out to judge models.
  Get the planar_impact/ folder from the project's maintainers (the ../shared/data copy CI
  reads) and put it under the data root; its README gives the format.
EOF
    ;;
    mm) cat <<'EOF'
mm: not downloadable as published. maros_meszaros_small/ holds 13 Maros-Meszaros QPs
  converted (numpy/scipy) into impulse batch files with cvxopt references (refs.json); the
  originals are .mat files in Simple-Robotics/proxsuite (test/data/maros_meszaros_data/),
  the conversion is not published. Get the maros_meszaros_small/ folder from the
  project's maintainers (the ../shared/data copy CI reads) and put it under the data root.
EOF
    ;;
    contactnets_qps) cat <<'EOF'
contactnets_qps: recorded, not published. The 1,000 ContactNets loss QPs were recorded
  from the reference implementation (DAIRLab/contact-nets @ c3dc21c, Polytope, seed 0)
  as it handed them to OSQP during training on the real cube tosses, with cvxopt
  references; there is no public copy. Get the contactnets_qps/ folder from the
  project's maintainers (the ../shared/data copy CI reads) and put it under the data root.
EOF
    ;;
  esac
}

# the manifest lines of a set ("HASH  PATH"), to stdout
set_lines() {
  local prefix
  prefix="$(set_dir "$1")/"
  awk -v p="$prefix" 'NF == 2 && substr($2, 1, length(p)) == p { print $1 "  " $2 }' "$MANIFEST"
}

# checks the files of a sub-manifest under ROOT; prints the paths that are not verified
unverified() {
  local root=$1 lines=$2
  [ -d "$root" ] || { awk '{ print $2 }' "$lines"; return 0; }
  (cd "$root" && sha256sum -c "$lines" 2>/dev/null || true) | sed -n 's/: FAILED.*$//p'
}

# --check DIR SET...
check_sets() {
  local root=$1; shift
  local status=0 set lines n bad path
  [ -d "$root" ] || { echo "fetch.sh: $root is not a folder" >&2; return 1; }
  lines=$(mktemp); TMPFILES+=("$lines")
  for set in "$@"; do
    case $set in
      impacts|mm|contactnets_qps)
        echo "$set: no checksums in the manifest (this script does not fetch it: bash data/fetch.sh $set says where it comes from)"
        status=$(( status == 0 ? 3 : status )); continue ;;
    esac
    set_lines "$set" > "$lines"
    n=$(wc -l < "$lines")
    [ "$n" -gt 0 ] || { echo "$set: no files in the manifest $MANIFEST" >&2; status=1; continue; }
    bad=$(unverified "$root" "$lines")
    if [ -z "$bad" ]; then
      echo "$set: $n/$n files verified in $root/$(set_dir "$set")"
      continue
    fi
    status=1
    while IFS= read -r path; do
      if [ -e "$root/$path" ]; then echo "$set: altered (SHA-256 differs): $path"; else echo "$set: missing: $path"; fi
    done <<< "$bad"
    echo "$set: $(wc -l <<< "$bad") of $n files missing or altered in $root (bash data/fetch.sh $set fetches them)"
  done
  return "$status"
}

TOOL=""
pick_tool() {
  if [ -n "${IMPULSE_FETCH_TOOL:-}" ]; then TOOL=$IMPULSE_FETCH_TOOL  # curl or wget (tests)
  elif command -v curl >/dev/null 2>&1; then TOOL=curl
  elif command -v wget >/dev/null 2>&1; then TOOL=wget
  else die "neither curl nor wget is installed"; fi
}

# one file, with retries; 0 when it arrived
download() {
  local url=$1 out=$2 try
  for try in 1 2 3; do
    if [ "$TOOL" = curl ]; then
      curl -fsSL --connect-timeout 20 --max-time 300 --retry 2 --retry-delay 2 -o "$out" "$url" && return 0
    else
      wget -q --timeout=60 --tries=2 -O "$out" "$url" && return 0
    fi
    rm -f "$out"
    [ "$try" = 3 ] || sleep "$try"
  done
  return 1
}

STAGE=""
TMPFILES=()
cleanup() {
  if [ -n "$STAGE" ] && [ -d "$STAGE" ]; then rm -rf "$STAGE"; fi
  if [ ${#TMPFILES[@]} -gt 0 ]; then rm -f "${TMPFILES[@]}"; fi
}
on_exit() {
  local rc=$?
  cleanup
  if [ "$rc" != 0 ] && [ ${#DONE[@]} -gt 0 ]; then
    local put="" d
    for d in "${DONE[@]}"; do put+="${put:+, }$d"; done
    echo "fetch.sh: stopped; in place before that: $put" >&2
  fi
}
DONE=()
trap on_exit EXIT
trap 'exit 130' INT TERM

# fetches one downloadable set into ROOT; prints progress; appends to DONE. Any failure
# ends the script (set -e; the EXIT trap removes the temporary folder): sets fetched before
# it stay in place, the failed one is as it was.
fetch_set() {
  local set=$1 root=$2
  local dir lines n bad i=0 got=0 hash path url tmp tty=0 old f cfg=""
  dir=$(set_dir "$set")
  lines=$(mktemp); TMPFILES+=("$lines")
  set_lines "$set" > "$lines"
  n=$(wc -l < "$lines")
  [ "$n" -gt 0 ] || die "$set: no files in the manifest $MANIFEST"
  bad=$(unverified "$root" "$lines")
  if [ -z "$bad" ]; then
    echo "$set: $n/$n files already present and verified in $root/$dir"
    DONE+=("$set ($n files) in $root/$dir")
    return 0
  fi
  [ -t 1 ] && tty=1
  echo "$set: $(wc -l <<< "$bad") of $n files to fetch into $root/$dir"
  STAGE=$(mktemp -d "$root/.fetch-$set.XXXXXX")
  declare -A missing=() made=()
  local todo=() d k retry=()
  while IFS= read -r path; do missing[$path]=1; done <<< "$bad"
  while read -r hash path; do
    d=${path%/*}
    [ -n "${made[$d]:-}" ] || { mkdir -p "$STAGE/$d"; made[$d]=1; }
    if [ -z "${missing[$path]:-}" ]; then
      # present and verified: linked (or copied) into the new set, not downloaded again
      ln "$root/$path" "$STAGE/$path" 2>/dev/null || cp -p "$root/$path" "$STAGE/$path"
    else
      todo+=("$path")
    fi
  done < "$lines"
  got=${#todo[@]}
  # curl: 100 files a call (one connection kept open); whatever did not arrive verified is
  # fetched again one by one below, where a failure is named
  if [ "$TOOL" = curl ]; then
    cfg=$(mktemp); TMPFILES+=("$cfg")
    for ((k = 0; k < got; k += 100)); do
      for path in "${todo[@]:k:100}"; do
        source_url "$set" "$path"
        printf 'url = "%s"\noutput = "%s"\n' "$URL" "$STAGE/$path"
      done > "$cfg"
      curl -fsSL --connect-timeout 20 --max-time 900 --retry 2 --retry-delay 2 -K "$cfg" 2>/dev/null || true
      i=$((k + 100 < got ? k + 100 : got))
      if [ "$tty" = 1 ]; then printf '\r%s: %d/%d downloaded' "$set" "$i" "$got"; else echo "$set: $i/$got downloaded"; fi
    done
    [ "$tty" = 1 ] && echo
    bad=$(unverified "$STAGE" "$lines")
    if [ -n "$bad" ]; then mapfile -t retry <<< "$bad"; fi
  else
    retry=("${todo[@]}")
  fi
  i=0
  for path in "${retry[@]}"; do
    i=$((i + 1))
    hash=$(awk -v p="$path" '$2 == p { print $1; exit }' "$lines")
    source_url "$set" "$path"; url=$URL
    tmp="$STAGE/$path"
    local ok=0 attempt
    for attempt in 1 2; do  # a file whose sum differs is fetched once more before giving up
      if ! download "$url" "$tmp"; then
        echo >&2; die "$set: could not download $url (nothing of $set was changed)"
      fi
      if [ "$(sha256sum < "$tmp" | cut -d' ' -f1)" = "$hash" ]; then ok=1; break; fi
    done
    if [ "$ok" != 1 ]; then
      echo >&2
      die "$set: $path (from $url) does not match its SHA-256 in $MANIFEST (nothing of $set was changed)"
    fi
    if [ "$tty" = 1 ]; then printf '\r%s: %d/%d' "$set" "$i" "${#retry[@]}"
    elif [ $((i % 100)) = 0 ] || [ "$i" = "${#retry[@]}" ]; then echo "$set: $i/${#retry[@]}${cfg:+ (one by one)}"; fi
  done
  [ "$tty" = 1 ] && [ "$i" -gt 0 ] && echo
  # every file once more, in place, before the swap
  bad=$(unverified "$STAGE" "$lines")
  [ -z "$bad" ] || die "$set: not verified after download: $bad"
  # files of the old folder that are not in the manifest (a README, say) stay
  if [ -d "$root/$dir" ]; then
    while IFS= read -r -d '' f; do
      f=${f#"$root/"}
      if [ ! -e "$STAGE/$f" ]; then
        mkdir -p "$STAGE/$(dirname "$f")"
        ln "$root/$f" "$STAGE/$f" 2>/dev/null || cp -p "$root/$f" "$STAGE/$f"
      fi
    done < <(find -H "$root/$dir" ! -type d -print0)
  fi
  # the swap: two renames on one file system
  mkdir -p "$(dirname "$root/$dir")"
  old="$STAGE/.old"
  if [ -e "$root/$dir" ]; then mv "$root/$dir" "$old"; fi
  mv "$STAGE/$dir" "$root/$dir"
  rm -rf "$STAGE"; STAGE=""
  echo "$set: $n/$n files verified in $root/$dir ($got downloaded)"
  DONE+=("$set ($n files) in $root/$dir")
}

main() {
  local mode=fetch check_dir="" args=() a s sets=() status=0
  while [ $# -gt 0 ]; do
    case $1 in
      -h|--help) usage; exit 0 ;;
      --check) [ $# -ge 2 ] || { echo "fetch.sh: --check needs a folder" >&2; exit 2; }; mode=check; check_dir=$2; shift 2 ;;
      --check=*) mode=check; check_dir=${1#--check=}; shift ;;
      --manifest) [ $# -ge 2 ] || { echo "fetch.sh: --manifest needs a file" >&2; exit 2; }; MANIFEST=$2; shift 2 ;;
      --manifest=*) MANIFEST=${1#--manifest=}; shift ;;
      -*) echo "fetch.sh: unknown option $1 (bash data/fetch.sh --help)" >&2; exit 2 ;;
      *) args+=("$1"); shift ;;
    esac
  done
  [ ${#args[@]} -gt 0 ] || args=(all)
  for a in "${args[@]}"; do
    s=$(set_name "$a")
    [ -n "$s" ] || { echo "fetch.sh: unknown set '$a' (cube, elbow, impacts, mm, contactnets_qps, all)" >&2; exit 2; }
    if [ "$s" = all ]; then sets+=(cube elbow all-notes); else sets+=("$s"); fi
  done
  [ -f "$MANIFEST" ] || die "the manifest $MANIFEST is missing"

  if [ "$mode" = check ]; then
    local checked=()
    for s in "${sets[@]}"; do [ "$s" = all-notes ] || checked+=("$s"); done
    check_sets "$check_dir" "${checked[@]}" || status=$?
    exit "$status"
  fi

  local root
  root=$(dest_root)
  case " ${sets[*]} " in
    *" cube "*|*" elbow "*) mkdir -p "$root"; root=$(cd "$root" && pwd); pick_tool ;;
  esac
  local notes=()
  for s in "${sets[@]}"; do
    case $s in
      cube|elbow) fetch_set "$s" "$root" ;;
      impacts|mm|contactnets_qps) not_downloadable "$s" >&2; [ "$status" != 0 ] || status=3 ;;
      all-notes) notes+=(impacts mm contactnets_qps) ;;
    esac
  done
  for s in "${notes[@]}"; do not_downloadable "$s"; done
  if [ ${#DONE[@]} -gt 0 ]; then
    local put="" d
    for d in "${DONE[@]}"; do put+="${put:+, }$d"; done
    echo "fetch.sh: put $put; tests and benches read them with IMPULSE_DATA=$root (docs/data.md)"
  fi
  exit "$status"
}

main "$@"
