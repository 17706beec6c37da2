package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// tuneEnv names the environment variable of qp query's batch-path switches
// (queryTune): measurement aids for A/B runs of one binary, not flags.
const tuneEnv = "QP_QUERY_TUNE"

// queryTune are the switches of qp query's batch path, each selectable at
// run time so that one device call can compare them (scripts/device/cliab.sh).
// Every switch leaves the run file byte-identical.
type queryTune struct {
	// prealloc gives the stream's responses their Results storage up
	// front (qp.StreamOptions.ResultCap = k): no allocation per query.
	prealloc bool
	// warm > 0 runs Engine.Warm with that many synthetic queries while
	// the query file is read and analyzed; warmAuto: as many as the
	// processor needs (warmQueries).
	warm     int
	warmAuto bool
	// fmtProcs > 0 formats each chunk's run on that many goroutines
	// (0: all cores). On the CPU backend the formatting competes with
	// the search for the cores.
	fmtProcs int
	// gcPercent, when gcSet, is the GOGC percentage during the stream
	// (-1: off; the collector then runs only under memory pressure,
	// bounded by gcLimit).
	gcPercent int
	gcSet     bool
	// parAnalyze analyzes the query file on all cores.
	parAnalyze bool
	// early reads and analyzes the query file while the processor opens
	// (qp.Options.Beside).
	early bool
	// cont runs the CPU processor's chunks without a barrier between
	// them (qp.StreamOptions.Continuous: the workers take grains of up to
	// 16 queries in order across chunk boundaries). It is the default
	// now; the switch is kept for scripts that name it.
	cont bool
	// barrier runs the CPU processor's chunks one SearchBatch at a time,
	// each waiting for its slowest query (the path before the continuous
	// stream became the default).
	barrier bool
	// emitFmt formats each chunk's run in the emit, on all cores, as
	// before the continuous CPU stream's workers formatted their own
	// pieces (qp.StreamOptions.Answered).
	emitFmt bool
	// noSlots formats the run from the index's id table (ExternalID,
	// every docid checked per answer) instead of index.IDSlots, as before
	// cliq5.
	noSlots bool
	// oldLines appends the run's lines from the slots field by field
	// (eval.AppendRunLine), as before cliq6, instead of in 8-byte words
	// (runWriter.appendSlotLines).
	oldLines bool
	// oneInFlight searches one chunk at a time on the GPU processor, as
	// before the stream pipelined two (qp.StreamOptions.InFlight).
	oneInFlight bool
	// noSplit is --auto-split=false (device auto: each batch on one
	// processor), for A/B runs of one command line.
	noSplit bool
	// gpuHandOff ends device auto's race once the CPU stopped and its
	// pieces are answered, the GPU's own stream taking the rest
	// (qp.StreamOptions.GPUHandOff, branch auto4's hand-over).
	gpuHandOff bool
	// raceNoHelp: device auto's race runs its CPU pieces without running
	// the GPU's fanned-out host work between their queries
	// (qp.StreamOptions.RaceNoHelp, before branch auto6).
	raceNoHelp bool
}

// parseTune parses a comma-separated list of switches: prealloc,
// warm[=N] (N synthetic queries; default: warmQueries'), fmt=N, gc=P|off,
// par, cont, barrier, early, emitfmt, nosplit,
// noslots, oldlines, inflight1, gpuhandoff, racenohelp; "" or "none" is no switch. An unknown switch is an error.
func parseTune(s string) (queryTune, error) {
	var t queryTune
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		name, val, hasVal := strings.Cut(f, "=")
		num := func() (int, error) {
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 {
				return 0, fmt.Errorf("%s %q: %s wants a positive count", tuneEnv, f, name)
			}
			return n, nil
		}
		var err error
		switch {
		case f == "" || f == "none":
		case f == "prealloc":
			t.prealloc = true
		case f == "par":
			t.parAnalyze = true
		case f == "cont":
			t.cont = true
		case f == "barrier":
			t.barrier = true
		case f == "early":
			t.early = true
		case f == "emitfmt":
			t.emitFmt = true
		case f == "nosplit":
			t.noSplit = true
		case f == "noslots":
			t.noSlots = true
		case f == "oldlines":
			t.oldLines = true
		case f == "inflight1":
			t.oneInFlight = true
		case f == "gpuhandoff":
			t.gpuHandOff = true
		case f == "racenohelp":
			t.raceNoHelp = true
		case name == "warm" && !hasVal:
			t.warmAuto = true
		case name == "warm":
			t.warm, err = num()
		case name == "fmt" && hasVal:
			t.fmtProcs, err = num()
		case name == "gc" && val == "off":
			t.gcPercent, t.gcSet = -1, true
		case name == "gc" && hasVal:
			t.gcPercent, err = num()
			t.gcSet = true
		default:
			return t, fmt.Errorf("%s: unknown switch %q (want prealloc, warm[=N], fmt=N, gc=P|off, par, cont, barrier, early, emitfmt, nosplit, noslots, oldlines, inflight1, gpuhandoff, racenohelp)", tuneEnv, f)
		}
		if err != nil {
			return t, err
		}
	}
	return t, nil
}

// tuneFromEnv is parseTune of $QP_QUERY_TUNE.
func tuneFromEnv() (queryTune, error) { return parseTune(os.Getenv(tuneEnv)) }

// warmQueries is the size of the warm switch's synthetic batch without
// =N: a chunk where a GPU answers (its launch sets, and so its device
// buffers, are then as large as the stream's), else 32 per CPU worker
// (each worker's buffers meet long lists).
func (t queryTune) warmQueries(gpu bool, chunk, workers int) int {
	switch {
	case t.warm > 0:
		return t.warm
	case !t.warmAuto:
		return 0
	case gpu:
		return chunk
	}
	return 32 * workers
}

func (t queryTune) String() string {
	var s []string
	if t.prealloc {
		s = append(s, "prealloc")
	}
	if t.warm > 0 {
		s = append(s, fmt.Sprintf("warm=%d", t.warm))
	} else if t.warmAuto {
		s = append(s, "warm")
	}
	if t.fmtProcs > 0 {
		s = append(s, fmt.Sprintf("fmt=%d", t.fmtProcs))
	}
	if t.gcSet {
		if t.gcPercent < 0 {
			s = append(s, "gc=off")
		} else {
			s = append(s, fmt.Sprintf("gc=%d", t.gcPercent))
		}
	}
	if t.parAnalyze {
		s = append(s, "par")
	}
	if t.cont {
		s = append(s, "cont")
	}
	if t.barrier {
		s = append(s, "barrier")
	}
	if t.early {
		s = append(s, "early")
	}
	if t.emitFmt {
		s = append(s, "emitfmt")
	}
	if t.noSplit {
		s = append(s, "nosplit")
	}
	if t.noSlots {
		s = append(s, "noslots")
	}
	if t.oldLines {
		s = append(s, "oldlines")
	}
	if t.oneInFlight {
		s = append(s, "inflight1")
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ",")
}
