#!/usr/bin/env bash
# scripts/profsplit.sh PROFILE... — split Go CPU profiles of `qp bench sched
# --cpuprofile` (scripts/device/hostcpu.sh's prof-V-MODE-I.pprof) into what
# issue 24 charges to the processors and what it does not (docs/BENCHMARKS.md,
# "CPU and GPU together", hostcpu4). Runs on the Go machine (go tool pprof;
# the profiles embed their symbols). Per profile, seconds of samples:
#
#   outside   the harness outside the measured window: training, the result
#             slab's reserve, Summarize, the collector's background workers
#   window    inside it: the samples labelled qp=window (the replay's
#             submitter and every scheduler goroutine, with the backend work
#             they start) plus the CUDA owner goroutine (unlabelled; its
#             training share is small). Profiles of builds before hostcpu4
#             have no label: their window is what is not under the
#             functions of $out below (an estimate: the experiment
#             goroutine's other setup counts as in the window)
#   harness   of the window: the replay's own loop (timers, requests) and
#             its done function, not SubmitBatch (the results' records,
#             written in deliver, are counted with the scheduler)
#   scheduler of the window: scheduler code (submit, dispatch, slots,
#             deliver, job release, model updates) less the backends' work
#   submit    of scheduler: SubmitBatch (features given, predictions, jobs)
#   backend   of the window: engine/gpu, cuda, purego (the GPU's host work;
#             with --device cpu the CPU engine's is under "other")
#   other     the rest of the window: the Go scheduler's wake-ups and idle
#             spinning, the CPU engine
set -u
tot() { # seconds of samples: $1 tag filter, $2 focus, $3 ignore
  go tool pprof -top -nodecount=100000 -nodefraction=0 ${1:+-tagfocus="$1"} ${2:+-focus="$2"} ${3:+-ignore="$3"} "$P" 2>/dev/null |
    awk '/^Showing nodes accounting for/ { v = $5; sub(/,$/, "", v)
           if (v ~ /ms$/) { sub(/ms$/, "", v); v /= 1000 } else if (v ~ /s$/) sub(/s$/, "", v)
           print v; f = 1 } END { if (!f) print 0 }'
}
owner='qp/cuda\.\(\*Context\)\.loop'
be='qp/engine/gpu|qp/cuda|purego'
# Without labels (builds before hostcpu4): the window is what is not under
# these functions of the experiment's goroutine or the collector's workers.
out='replaySlab\)\.reserve|scheduler\.Summarize|scheduler\.Measure|scheduler\.measureBatches|scheduler\.HostCores|scheduler\.ProbeSplit|scheduler\.Train|scheduler\.QueryFeatures|Experiment\)\.capacity|runtime\.gcBgMarkWorker'
for P in "$@"; do
  all=$(tot '' '' '')
  tag=qp=window ign=
  win=$(tot "$tag" '' '')
  if [ "$win" = 0 ]; then # no labels
    tag= ign="$out|"
    win=$(awk -v a="$all" -v o="$(tot '' "$out" '')" 'BEGIN { print a - o }')
  fi
  own=$(tot '' "$owner" '')
  ownw=$(tot "$tag" "$owner" "${ign%|}")
  harness=$(tot "$tag" 'scheduler\.replay$|replayState\)\.done' "${ign}SubmitBatch")
  sched=$(tot "$tag" 'qp/scheduler\.' "$ign$be|qp/engine\.")
  sub=$(tot "$tag" 'SubmitBatch' "${ign%|}")
  be_w=$(tot "$tag" "$be" "${ign%|}")
  echo "$P" | awk -v a="$all" -v w="$win" -v o="$own" -v ow="$ownw" -v h="$harness" -v s="$sched" -v u="$sub" -v b="$be_w" '{
    w += o - ow; b += o - ow
    printf "%s: %.2fs; outside the window %.2fs; in it %.2fs: harness %.2fs (%.1f%%), scheduler %.2fs (%.1f%%; submit %.2fs), backend %.2fs (%.1f%%; CUDA owner %.2fs), other %.2fs (%.1f%%)\n",
      $0, a, a - w, w, h, 100*h/w, s - h, 100*(s-h)/w, u, b, 100*b/w, o, w - s - b, 100*(w-s-b)/w }'
done
