package testbed

import (
	"fmt"
	"io"
	"os"
	"time"
)

// progressInterval is the longest a tool build or a package install goes
// without a line of progress.
const progressInterval = 20 * time.Second

// progressOut receives the progress of tool builds and package installs,
// which take minutes the first time and print nothing of their own.
var progressOut io.Writer = os.Stderr

// Progressf prints a line of progress where the tool builds print theirs,
// for a wait that would otherwise look like a hang.
func Progressf(format string, args ...any) {
	fmt.Fprintf(progressOut, format+"\n", args...)
}

// progress reports on w a step that takes minutes: a line as it starts,
// one for each tick while it runs, and one as it ends, each with the time
// it has taken.
type progress struct {
	w io.Writer
	// doing and done name the step while it runs and once it has, e.g.
	// "building kube-apiserver" and "built kube-apiserver".
	doing, done string
	now         func() time.Time
}

// start prints first, then a line for each tick (a ticker's time) until
// the returned function is called with the step's result; that one prints
// the last line, once the tick lines are out.
func (p progress) start(first string, ticks <-chan time.Time) (end func(error)) {
	began := p.now()
	fmt.Fprintln(p.w, first)
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case at := <-ticks:
				fmt.Fprintf(p.w, "still %s: %s\n", p.doing, elapsed(began, at))
			case <-stop:
				return
			}
		}
	}()
	return func(err error) {
		close(stop)
		<-stopped
		if err != nil {
			fmt.Fprintf(p.w, "%s failed after %s\n", p.doing, elapsed(began, p.now()))
			return
		}
		fmt.Fprintf(p.w, "%s in %s\n", p.done, elapsed(began, p.now()))
	}
}

// reportStep reports a step on progressOut with the wall clock, a tick
// every progressInterval.
func reportStep(doing, done, first string) func(error) {
	ticker := time.NewTicker(progressInterval)
	end := progress{w: progressOut, doing: doing, done: done, now: time.Now}.start(first, ticker.C)
	return func(err error) {
		ticker.Stop()
		end(err)
	}
}

// elapsed is the time from began to now in whole seconds.
func elapsed(began, now time.Time) time.Duration {
	return now.Sub(began).Round(time.Second)
}
