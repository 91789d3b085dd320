package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// rssEvery is how often the job's resident set size is read.
const rssEvery = 50 * time.Millisecond

// JobRun is what one run of the job left: its stage log lines, its
// memory over time, its report and its exit code.
type JobRun struct {
	Start, End time.Time
	ExitCode   int
	// MaxRSS is the job's peak resident set size in bytes, as the kernel
	// counted it: its VmHWM when last read, at most rssEvery before it
	// exited. (getrusage's ru_maxrss would not do: it counts the
	// benchmark's own memory, which the job's process shared until exec.)
	MaxRSS int64
	// RSS are the readings of its memory, every rssEvery.
	RSS []RSSReading
	// Stages are the job's "stage done" log lines, in order.
	Stages []StageLog
	// Report is the job's JSON report (--output json).
	Report Report
	// Warnings counts the job's log lines above info.
	Warnings int
}

// RSSReading is the job's resident set size (VmRSS) and its peak so far
// (VmHWM), in bytes, at a time.
type RSSReading struct {
	Time     time.Time
	RSS, HWM int64
}

// StageLog is one "stage done" line of the job's log: the stage ended at
// End after Took.
type StageLog struct {
	Name string
	End  time.Time
	Took time.Duration
}

// Report is the part of the job's JSON report the benchmark reads.
type Report struct {
	ResourceRecommends []struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
		Valid     bool   `json:"valid"`
		// Group is the pull request group of the item's changes.
		Group      string `json:"group"`
		Containers []struct {
			Name      string `json:"name"`
			Resources []struct {
				Resource    string `json:"resource"`
				Current     string `json:"current"`
				Recommended string `json:"recommended"`
				Changed     bool   `json:"changed"`
				Reason      string `json:"reason"`
			} `json:"resources"`
		} `json:"containers"`
	} `json:"resourceRecommends"`
	Git *struct {
		Branch string   `json:"branch"`
		Commit string   `json:"commit"`
		Pushed bool     `json:"pushed"`
		Files  []string `json:"files"`
		// Branches are every branch that holds the run's changes, its
		// groups' among them.
		Branches []string `json:"branches"`
		// PullRequest is the run's own branch's; PullRequests those of
		// every branch, its groups' among them.
		PullRequest  *ReportPullRequest  `json:"pullRequest"`
		PullRequests []ReportPullRequest `json:"pullRequests"`
	} `json:"git"`
	// Groups are the run's pull request groups, with why each waits or
	// is held, if it does.
	Groups []struct {
		Name    string `json:"name"`
		Held    string `json:"held"`
		Waiting string `json:"waiting"`
	} `json:"groups"`
	Interrupted string `json:"interrupted"`
	Failed      string `json:"failed"`
}

// ReportPullRequest is a pull request of the job's report.
type ReportPullRequest struct {
	Number int `json:"number"`
	// Action is created, updated, unchanged or closed.
	Action string `json:"action"`
}

// RunJob runs the job binary with args and env added to the environment,
// writes its log (stderr) to logPath, and reads its memory and its stage
// lines as it runs. A non-zero exit is not an error: the caller checks
// ExitCode.
func RunJob(ctx context.Context, bin string, args, env []string, logPath string) (*JobRun, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("run the job: %w", err)
	}
	defer logFile.Close()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("run the job: %w", err)
	}
	run := &JobRun{Start: time.Now()}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("run the job: %w", err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { run.RSS = sampleRSS(cmd.Process.Pid, stop) })
	run.Stages, run.Warnings = readLog(io.TeeReader(stderr, logFile))
	waitErr := cmd.Wait()
	run.End = time.Now()
	close(stop)
	wg.Wait()
	if cmd.ProcessState == nil {
		return nil, fmt.Errorf("run the job: %w", waitErr)
	}
	run.ExitCode = cmd.ProcessState.ExitCode()
	for _, r := range run.RSS {
		run.MaxRSS = max(run.MaxRSS, r.HWM)
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) {
		return run, fmt.Errorf("run the job: %w", waitErr)
	}
	if err := json.Unmarshal(stdout.Bytes(), &run.Report); err != nil {
		return run, fmt.Errorf("read the job's report (exit code %d, log in %s): %w", run.ExitCode, logPath, err)
	}
	return run, nil
}

// readLog reads the job's JSON log lines until EOF and returns its stage
// lines and the number of lines above info.
func readLog(r io.Reader) ([]StageLog, int) {
	var stages []StageLog
	warnings := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		var line struct {
			Time  time.Time `json:"time"`
			Level string    `json:"level"`
			Msg   string    `json:"msg"`
			Stage string    `json:"stage"`
			Took  string    `json:"took"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		if line.Level == "WARN" || line.Level == "ERROR" {
			warnings++
		}
		if line.Msg != "stage done" {
			continue
		}
		took, err := time.ParseDuration(line.Took)
		if err != nil {
			continue
		}
		stages = append(stages, StageLog{Name: line.Stage, End: line.Time, Took: took})
	}
	// Drain whatever is left, so that the job never blocks on its log.
	_, _ = io.Copy(io.Discard, r)
	return stages, warnings
}

// sampleRSS reads the memory of pid every rssEvery until stop is closed or
// the process is gone.
func sampleRSS(pid int, stop <-chan struct{}) []RSSReading {
	path := "/proc/" + strconv.Itoa(pid) + "/status"
	tick := time.NewTicker(rssEvery)
	defer tick.Stop()
	var out []RSSReading
	for {
		if rss, hwm, ok := readRSS(path); ok {
			out = append(out, RSSReading{Time: time.Now(), RSS: rss, HWM: hwm})
		}
		select {
		case <-stop:
			return out
		case <-tick.C:
		}
	}
}

// readRSS returns VmRSS and VmHWM of a /proc/<pid>/status file, in bytes;
// a process that has exited has neither.
func readRSS(path string) (rss, hwm int64, ok bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, false
	}
	found := 0
	for line := range strings.Lines(string(data)) {
		for key, dst := range map[string]*int64{"VmRSS:": &rss, "VmHWM:": &hwm} {
			rest, ok := strings.CutPrefix(line, key)
			if !ok {
				continue
			}
			fields := strings.Fields(rest)
			if len(fields) == 0 {
				return 0, 0, false
			}
			kib, err := strconv.ParseInt(fields[0], 10, 64)
			if err != nil {
				return 0, 0, false
			}
			*dst = kib * 1024
			found++
		}
	}
	return rss, hwm, found == 2
}
