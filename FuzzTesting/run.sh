#!/usr/bin/env bash
# Builds the libFuzzer targets (FuzzTesting/Package.swift) with
# -sanitize=fuzzer,address and runs each for a fixed time. Prints the
# executions, coverage and findings of each target; exits 1 when a target
# found something (a crash, an invariant broken, a sanitizer report, a
# timeout or an allocation over the limit), 2 on a usage or build error.
#
#   FuzzTesting/run.sh [--time S] [--keep-going] [--build-only] [TARGET...]
#
# TARGET: config request recording registerdump diveimport (default: all five).
# --time S       seconds of fuzzing per target (default 60)
# --keep-going   fork mode: carry on after a finding, so one run collects
#                several (each in the findings folder); for long runs
# --build-only   build, seed, check the known findings; no fuzzing
#
# Fixed limits: -rss_limit_mb and -malloc_limit_mb 2048, -timeout 10 s per
# input. Everything the run makes is under .build/fuzz/ (FUZZ_OUT to move
# it): per target corpus/ (what the fuzzer learnt; kept between runs),
# seeds/ (made afresh from the repository's fixtures and FuzzTesting/corpus/
# on every run), findings/, and fuzz.log. FuzzTesting/README.md says how to
# reproduce and minimise a finding.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=${FUZZ_OUT:-$root/.build/fuzz}
scratch=$out/build
mkdir -p "$out"
rss_mb=2048
timeout_s=10
seconds=60
keep_going=0
build_only=0
targets=()

while [ $# -gt 0 ]; do
  case "$1" in
    --time) seconds=${2:?--time needs seconds}; shift 2 ;;
    --keep-going) keep_going=1; shift ;;
    --build-only) build_only=1; shift ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    config|request|recording|registerdump|diveimport) targets+=("$1"); shift ;;
    *) echo "run.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(config request recording registerdump diveimport)
case "$seconds" in ''|*[!0-9]*) echo "run.sh: --time takes whole seconds" >&2; exit 2 ;; esac

binary() {
  case "$1" in
    config) echo FuzzConfig ;; request) echo FuzzRequest ;;
    recording) echo FuzzRecording ;; registerdump) echo FuzzRegisterDump ;;
    diveimport) echo FuzzDiveImport ;;
  esac
}

# Longest input each target is given (the largest seed fits).
max_len() {
  case "$1" in
    config) echo 8192 ;; request) echo 8192 ;; recording) echo 20000 ;; registerdump) echo 4096 ;;
    diveimport) echo 65536 ;;
  esac
}

# --- build -------------------------------------------------------------------
# Debug configuration so @testable imports work (the targets call the CLI's
# internal EngineSetup, replay sink and decode formatting), with -O for
# speed: optimised code keeps Swift's overflow and bounds traps.
echo "== building the fuzz targets (swift build, -sanitize=fuzzer,address -O)"
start=$(date +%s)
if ! swift build --package-path "$here" --scratch-path "$scratch" -c debug \
       -Xswiftc -sanitize=fuzzer,address -Xswiftc -O >"$out/build.log" 2>&1; then
  tail -40 "$out/build.log"; echo "run.sh: build failed (log: $out/build.log)" >&2; exit 2
fi
bin=$(swift build --package-path "$here" --scratch-path "$scratch" -c debug \
        -Xswiftc -sanitize=fuzzer,address -Xswiftc -O --show-bin-path)
echo "   built in $(( $(date +%s) - start )) s: $bin"

# --- seeds -------------------------------------------------------------------
# One file per seed. The repository's own files, the documented examples,
# and FuzzTesting/corpus/TARGET/ (hand-written seeds and regressions/, the
# reproducers of past findings) except the known open findings, which would
# stop the run before it starts (they are checked separately below).
known_open() { grep -v '^\s*#' "$here/known-findings.txt" 2>/dev/null | awk -v t="$1" '$1 == t { print $2 }'; }

copy_seeds() {  # target dest files...
  local t=$1 dest=$2; shift 2
  local f
  for f in "$@"; do [ -f "$f" ] && cp "$f" "$dest/$(echo "${f#"$root"/}" | tr '/' '_')"; done
  return 0
}

# Lines of documented protocol examples: requests (client to agent) and the
# agent's messages, one seed each.
line_seeds() {  # dest prefix files...
  local dest=$1 prefix=$2; shift 2
  local n=0 line
  while IFS= read -r line; do
    n=$((n + 1)); printf '%s' "$line" >"$dest/$prefix-$n.jsonl"
  done < <(grep -ho '{"class":.*}' "$@" 2>/dev/null | grep -v '\\#(' | sort -u | head -400)
}

# The fenced block after `<!-- example: NAME -->` in a Markdown file.
doc_example() {  # file name dest
  awk -v n="$2" '$0 ~ "<!-- example: " n " -->" { want = 1; next }
                 want && /^```/ { if (inblock) exit; inblock = 1; next }
                 inblock { print }' "$1" >"$3"
}

make_seeds() {
  local t=$1 dest=$out/$1/seeds
  rm -rf "$dest"; mkdir -p "$dest"
  case "$t" in
    config)
      copy_seeds "$t" "$dest" "$root"/config/*.json5 "$root"/boards/*.json5 "$root"/scenarios/*.json5 \
        "$root"/deploy/*.json5 "$root"/Tests/Fixtures/agent/*.json5 "$root"/Tests/Fixtures/recordings/*.json5
      awk '/^```json$/ { b = 1; next } b && /^```/ { exit } b { print }' "$root/docs/calibration.md" \
        >"$dest/docs_calibration.json" ;;
    request)
      line_seeds "$dest" docs "$root"/docs/protocol.md "$root"/Sources/EdgeService/EdgeService.docc/*.md
      line_seeds "$dest" tests "$root"/Tests/EdgeServiceTests/*.swift
      # The agent's own lines, as a replay writes them (one of each class and stream).
      local f=$root/Tests/Fixtures/recordings/sim-maglost.log.expected.jsonl n=0 key line
      declare -A seen=()
      while IFS= read -r line; do
        key=$(printf '%s' "$line" | grep -o '"class":"[a-z]*"\(,"stream":"[A-Za-z]*"\)\?' | head -1 || true)
        [ -n "${seen[$key]:-}" ] && continue
        seen[$key]=1; n=$((n + 1)); printf '%s' "$line" >"$dest/agent-$n.jsonl"
      done <"$f" ;;
    recording)
      copy_seeds "$t" "$dest" "$root"/Tests/Fixtures/recordings/*.log "$root"/Tests/Fixtures/recordings/*.csv
      doc_example "$root/docs/recordings.md" transaction-log "$dest/docs_recordings_example.log" ;;
    registerdump)
      copy_seeds "$t" "$dest" "$root"/Tests/Fixtures/dumps/*.txt ;;
    diveimport)
      # A short dive as `edge-agent simulate --jsonl` writes it (corpus/diveimport/),
      # and the agent's lines of every class and stream.
      copy_seeds "$t" "$dest" "$root"/Tests/Fixtures/recordings/sim-maglost.log.expected.jsonl ;;
  esac
  # Hand-written seeds and past findings, less the known open ones.
  local f rel
  if [ -d "$here/corpus/$t" ]; then
    while IFS= read -r f; do
      rel=${f#"$here/corpus/$t/"}
      if known_open "$t" | grep -xF "$rel" >/dev/null; then continue; fi
      cp "$f" "$dest/committed_$(echo "$rel" | tr '/' '_')"
    done < <(find "$here/corpus/$t" -type f | sort)
  fi
  find "$dest" -type f -empty -delete
}

# --- known open findings -------------------------------------------------------
# known-findings.txt lists reproducers (TARGET PATH-under-corpus/TARGET) of
# findings that are reported but not yet fixed (in code other branches own).
# Each must still fail with the targets' skips of known findings turned
# off (FUZZ_NO_SKIPS=1); one that passes is reported so it can be removed
# from the list, with its skip in the target (it then runs as an ordinary
# regression seed).
check_known() {
  local t=$1 rel status=0
  while IFS= read -r rel; do
    [ -n "$rel" ] || continue
    if FUZZ_NO_SKIPS=1 "$bin/$(binary "$t")" -rss_limit_mb=$rss_mb -malloc_limit_mb=$rss_mb -timeout=$timeout_s \
         "$here/corpus/$t/$rel" >"$out/$t/known.log" 2>&1; then
      echo "   known finding now passes: $t $rel (remove it from FuzzTesting/known-findings.txt)"
    else
      echo "   known finding still open: $t $rel"
    fi
  done < <(known_open "$t")
  return $status
}

# --- run ---------------------------------------------------------------------
# A trap is reported by libFuzzer and AddressSanitizer (stack included);
# Swift's own backtracer would then read the crashed process's memory under
# ASan and report itself.
export SWIFT_BACKTRACE=enable=no
summary=()
found=0
for t in "${targets[@]}"; do
  b=$bin/$(binary "$t")
  mkdir -p "$out/$t/corpus" "$out/$t/findings"
  make_seeds "$t"
  echo "== $t: $(find "$out/$t/seeds" -type f | wc -l) seeds, $(find "$out/$t/corpus" -type f | wc -l) inputs kept from earlier runs"
  check_known "$t"
  [ "$build_only" = 1 ] && continue
  flags=(-max_total_time="$seconds" -rss_limit_mb=$rss_mb -malloc_limit_mb=$rss_mb -timeout=$timeout_s
         -max_len="$(max_len "$t")" -print_final_stats=1 -artifact_prefix="$out/$t/findings/")
  [ -f "$here/dict/$t.dict" ] && flags+=(-dict="$here/dict/$t.dict")
  [ "$keep_going" = 1 ] && flags+=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  before=$(find "$out/$t/findings" -type f | wc -l)
  start=$(date +%s)
  set +e
  "$b" "${flags[@]}" "$out/$t/corpus" "$out/$t/seeds" >"$out/$t/fuzz.log" 2>&1
  rc=$?
  set -e
  took=$(( $(date +%s) - start ))
  # Executions: the final stats (plain mode) or the last status line (fork mode).
  # (`|| true`: a pattern that is not in the log is no error here.)
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$out/$t/fuzz.log" | tail -1 | awk '{ print $2 }' || true)
  [ -n "$execs" ] || execs=$(grep -o '^#[0-9]*' "$out/$t/fuzz.log" | tail -1 | tr -d '#' || true)
  cov=$(grep -o 'cov: [0-9]*' "$out/$t/fuzz.log" | tail -1 | awk '{ print $2 }' || true)
  ft=$(grep -o 'ft: [0-9]*' "$out/$t/fuzz.log" | tail -1 | awk '{ print $2 }' || true)
  corpus=$(find "$out/$t/corpus" -type f | wc -l)
  new=$(( $(find "$out/$t/findings" -type f | wc -l) - before ))
  if [ "$rc" != 0 ] || [ "$new" -gt 0 ]; then
    found=1
    verdict="FINDING (exit $rc, $new new file(s) in $out/$t/findings)"
    grep -E '^(==[0-9]+==ERROR|SUMMARY|Fatal error|.*fuzz invariant|ERROR: libFuzzer)' "$out/$t/fuzz.log" | head -5 | sed 's/^/   /' || true
  else
    verdict="no finding"
  fi
  summary+=("$(printf '%-13s %5ss %10s execs  cov %-6s ft %-6s corpus %-5s %s' \
               "$t" "$took" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$corpus" "$verdict")")
  echo "   ${summary[-1]}"
done

if [ ${#summary[@]} -gt 0 ]; then
  echo "== fuzzing summary (${seconds} s per target; logs in $out/TARGET/fuzz.log)"
  printf '   %s\n' "${summary[@]}"
fi
exit $found
