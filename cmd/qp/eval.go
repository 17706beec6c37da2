package main

import (
	"fmt"
	"os"

	"github.com/qpengine/qp/eval"
)

func init() {
	c := command{name: "eval", args: "RUN QRELS", summary: "score a TREC run against relevance judgments (MAP, P@10, nDCG@10)"}
	c.run = func(args []string) error {
		fs := newFlags(c, `Computes trec_eval's map, P_10 and ndcg_cut_10 (and P/nDCG at the usual
cutoffs) of a TREC run file (qid Q0 docid rank score tag) against a qrels
file (qid iter docid rel). Like trec_eval, queries are averaged over those in
both the run and the qrels unless --complete counts judged queries missing
from the run as 0 (trec_eval -c), and documents are ranked by score, ties by
docid descending, unless --order rank keeps the run's own ranks.`)
		complete := fs.Bool("complete", false, "count judged queries without results as 0 (trec_eval -c)")
		order := fs.String("order", "trec_eval", "ranking: trec_eval (score desc, docid desc) or rank (the file's rank column)")
		perQuery := fs.Bool("q", false, "print per-query values too")
		pos, err := parseArgs(fs, args, 2)
		if err != nil {
			return err
		}
		opt := eval.Options{Complete: *complete}
		switch *order {
		case "trec_eval":
			opt.Order = eval.OrderTrecEval
		case "rank":
			opt.Order = eval.OrderRank
		default:
			return fmt.Errorf("--order %q: want trec_eval or rank", *order)
		}
		s, err := evalFiles(pos[0], pos[1], opt)
		if err != nil {
			return err
		}
		if *perQuery {
			for _, q := range s.Queries {
				fmt.Printf("%-10s AP %.4f  P@10 %.4f  rel %d  rel_ret %d\n", q.QID, q.AP, q.P[indexOf(s.Cutoffs, 10)], q.NumRel, q.NumRelRet)
			}
		}
		return eval.FormatSummary(os.Stdout, s)
	}
	register(c)
}

func indexOf(xs []int, v int) int {
	for i, x := range xs {
		if x == v {
			return i
		}
	}
	return 0
}

func evalFiles(runPath, qrelsPath string, opt eval.Options) (eval.Summary, error) {
	rf, err := os.Open(runPath)
	if err != nil {
		return eval.Summary{}, err
	}
	defer rf.Close()
	run, err := eval.ReadRun(rf)
	if err != nil {
		return eval.Summary{}, fmt.Errorf("%s: %w", runPath, err)
	}
	qf, err := os.Open(qrelsPath)
	if err != nil {
		return eval.Summary{}, err
	}
	defer qf.Close()
	qrels, err := eval.ReadQrels(qf)
	if err != nil {
		return eval.Summary{}, fmt.Errorf("%s: %w", qrelsPath, err)
	}
	return eval.EvaluateWith(run, qrels, opt)
}
