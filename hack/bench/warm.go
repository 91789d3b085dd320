package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Warm is what the job's warm run measured: its stages as Result's, the
// checkpoints it left, and how its values compare with those of a run
// without checkpoints at the same moment.
type Warm struct {
	// After is how long after the cold run ended it started.
	After  Duration `json:"after"`
	Stages []Row    `json:"stages"`
	Total  Row      `json:"total"`
	// ScannedOverCold is its samples scanned over the cold run's.
	ScannedOverCold float64 `json:"scannedOverCold"`
	// CheckpointBytes is the data of the checkpoint's pages after it,
	// CheckpointPages their number.
	CheckpointBytes int64 `json:"checkpointBytes"`
	CheckpointPages int   `json:"checkpointPages"`
	// Values counts the recommended values of the warm run, Differ those
	// that are not the stateless run's.
	Values int    `json:"values"`
	Differ int    `json:"differ"`
	Checks Checks `json:"checks"`
	// APICalls are the warm run's apiserver requests, method and path.
	APICalls []string `json:"apiCalls"`
	// Floor, FloorTotal and Concurrent are the warm run's floor, as
	// Result's; its apiserver part replays the run's reads, not its
	// writes of the checkpoints and the record.
	Floor      []Row `json:"floor,omitempty"`
	FloorTotal Row   `json:"floorTotal"`
	Concurrent *Row  `json:"concurrent,omitempty"`
	// Ratios are the warm run's; BaselineOverHistory sets the cold run's
	// baseline, which reads the same window, against the warm history
	// stage.
	Ratios Ratios `json:"ratios"`
}

// warm runs the job again Options.Warm after the cold run ended, then
// once with --checkpoints=false, and fills in res.Warm.
func (e *env) warm(ctx context.Context, res *Result, cold *JobRun) error {
	at := cold.End.Add(e.opts.Warm)
	e.opts.Logf("running the job again at %s, warm from its checkpoints", at.Format(time.TimeOnly))
	select {
	case <-time.After(time.Until(at)):
	case <-ctx.Done():
		return ctx.Err()
	}
	run, err := e.runJob(ctx, "job-warm.log")
	if err != nil {
		return err
	}
	e.opts.Logf("the warm run exited with %d after %s (log in %s)", run.ExitCode, run.End.Sub(run.Start).Round(time.Millisecond), filepath.Join(e.opts.WorkDir, "job-warm.log"))
	if run.ExitCode != 0 {
		return fmt.Errorf("the warm run exited with %d: %s%s", run.ExitCode, run.Report.Failed, run.Report.Interrupted)
	}
	stateless, err := e.runJob(ctx, "job-stateless.log", "--checkpoints=false")
	if err != nil {
		return err
	}
	if stateless.ExitCode != 0 {
		return fmt.Errorf("the run without checkpoints exited with %d: %s%s", stateless.ExitCode, stateless.Report.Failed, stateless.Report.Interrupted)
	}
	w := &Warm{After: Duration(run.Start.Sub(cold.End)), Checks: checks(run)}
	w.Values, w.Differ = compareValues(run.Report, stateless.Report)
	apiReqs := e.rec.Requests(ServerAPI, run.Start, run.End)
	promReqs := e.rec.Requests(ServerPrometheus, run.Start, run.End)
	for _, r := range apiReqs {
		w.APICalls = append(w.APICalls, r.Method+" "+r.Path+queryNote(r.Query))
	}
	rows := &Result{}
	promReplay, err := e.attribute(ctx, rows, run, apiReqs, promReqs)
	if err != nil {
		return err
	}
	if !e.opts.NoFloor {
		if err := e.floor(ctx, rows, run, apiReqs, promReqs, promReplay); err != nil {
			return err
		}
	}
	w.Stages, w.Total = rows.Stages, rows.Total
	w.Floor, w.FloorTotal, w.Concurrent, w.Ratios = rows.Floor, rows.FloorTotal, rows.Concurrent, rows.Ratios
	if res.Baseline != nil {
		if h := rowNamed(w.Stages, "history"); h != nil && h.Wall > 0 {
			w.Ratios.BaselineOverHistory = float64(res.Baseline.Wall) / float64(h.Wall)
		}
	}
	if res.Total.Samples > 0 {
		w.ScannedOverCold = float64(w.Total.Samples) / float64(res.Total.Samples)
	}
	if w.CheckpointBytes, w.CheckpointPages, err = e.checkpoints(ctx); err != nil {
		return err
	}
	res.Warm = w
	return nil
}

// checkpoints sums the data of the checkpoint's pages, as stored.
func (e *env) checkpoints(ctx context.Context) (int64, int, error) {
	kube, err := kubernetes.NewForConfig(e.bed.APIServer.RESTConfig())
	if err != nil {
		return 0, 0, fmt.Errorf("read the checkpoints: %w", err)
	}
	list, err := kube.CoreV1().ConfigMaps(CheckpointNamespace).List(ctx, metav1.ListOptions{LabelSelector: "recommend-job.io/checkpoint=true"})
	if err != nil {
		return 0, 0, fmt.Errorf("read the checkpoints: %w", err)
	}
	var size int64
	for _, cm := range list.Items {
		for _, v := range cm.BinaryData {
			size += int64(len(v))
		}
	}
	return size, len(list.Items), nil
}

// compareValues counts the recommended values of a and those b differs in.
func compareValues(a, b Report) (values, differ int) {
	want := map[string]string{}
	for _, rr := range b.ResourceRecommends {
		for _, c := range rr.Containers {
			for _, r := range c.Resources {
				want[rr.Namespace+"/"+rr.Name+"/"+c.Name+"/"+r.Resource] = r.Recommended
			}
		}
	}
	for _, rr := range a.ResourceRecommends {
		for _, c := range rr.Containers {
			for _, r := range c.Resources {
				if r.Recommended == "" {
					continue
				}
				values++
				if want[rr.Namespace+"/"+rr.Name+"/"+c.Name+"/"+r.Resource] != r.Recommended {
					differ++
				}
			}
		}
	}
	return values, differ
}
