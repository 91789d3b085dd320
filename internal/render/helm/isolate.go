package helm

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Limits bound one render of a chart in a render process (Isolation).
type Limits struct {
	// Memory bounds the child's data segment (RLIMIT_DATA), where Go
	// keeps its heap; the Go runtime itself takes some 80 MiB of it.
	Memory int64
	// CPU bounds the child's processor time (RLIMIT_CPU).
	CPU time.Duration
	// Output bounds the bytes of the rendered templates.
	Output int64
}

// DefaultLimits returns the limits of a render unless the run says
// otherwise: with a run's own memory they fit a job limited to 512Mi.
func DefaultLimits() Limits {
	return Limits{Memory: 256 << 20, CPU: 30 * time.Second, Output: 8 << 20}
}

// errLimit means a render was stopped at one of its limits: the chart is
// not rendered again in the run.
var errLimit = errors.New("render limit reached")

// Isolation is the render process in which each render of an Engine
// runs: a program, Command with Args, whose body is ServeRender (the
// job's own binary with a hidden command), and the Limits it is given. A
// chart's templates are then bounded in memory, processor time and
// output by Limits, and in time by the Engine's MaxTime, after which the
// process is killed: a chart that reaches a limit fails its release
// alone. Helm's engine stops for none of these in the job's own process.
// The zero Isolation (Command "") renders in the job's own process.
type Isolation struct {
	// Command is the program to start, the job's own binary; "" renders
	// in this process.
	Command string
	// Args are the arguments that make Command a render process; the
	// limits are added after them.
	Args []string
	// Limits bound each render.
	Limits Limits
}

// renderRequest is what a child renders: the chart with values above its
// defaults, for a release, the values checked against the schema when
// Validate is set.
type renderRequest struct {
	Chart           *wireChart
	Values          map[string]any
	Name, Namespace string
	Validate        bool
	// Cluster is the render's capabilities; nil for Helm's defaults.
	Cluster *Cluster
}

// renderAnswer is the child's answer: the output of every template by
// its name, or the error of the chart, or the limit the render reached.
type renderAnswer struct {
	Files     map[string]string
	Unchecked []string
	Err       string
	Limit     string
}

// wireChart is what Helm's engine reads of a chart and its subcharts,
// which a chart does not encode on its own (its subcharts are
// unexported).
type wireChart struct {
	Metadata     *chartv2.Metadata
	Templates    []*common.File
	Files        []*common.File
	Values       map[string]any
	Schema       []byte
	Dependencies []*wireChart
}

func init() {
	// The types of values that YAML, JSON and the probes hold.
	gob.Register(map[string]any{})
	gob.Register(common.Values{})
	gob.Register([]any{})
}

// toWire copies the parts of ch the engine reads; nil entries, which gob
// cannot encode and Helm skips, are left out of the metadata.
func toWire(ch *chartv2.Chart) *wireChart {
	w := &wireChart{Templates: ch.Templates, Files: ch.Files, Values: ch.Values, Schema: ch.Schema}
	if ch.Metadata != nil {
		md := *ch.Metadata
		md.Maintainers = slices.DeleteFunc(slices.Clone(md.Maintainers), func(m *chartv2.Maintainer) bool { return m == nil })
		md.Dependencies = slices.DeleteFunc(slices.Clone(md.Dependencies), func(d *chartv2.Dependency) bool { return d == nil })
		w.Metadata = &md
	}
	for _, d := range ch.Dependencies() {
		w.Dependencies = append(w.Dependencies, toWire(d))
	}
	return w
}

// chart rebuilds the chart w was made of.
func (w *wireChart) chart() *chartv2.Chart {
	ch := &chartv2.Chart{Metadata: w.Metadata, Templates: w.Templates, Files: w.Files, Values: w.Values, Schema: w.Schema}
	if ch.Metadata == nil {
		ch.Metadata = &chartv2.Metadata{}
	}
	for _, d := range w.Dependencies {
		ch.AddDependency(d.chart())
	}
	return ch
}

// render renders ch in a new render process within maxTime, with cl as
// its capabilities.
func (c Isolation) render(ctx context.Context, ch *chartv2.Chart, values map[string]any, options common.ReleaseOptions, validate bool, cl *Cluster, maxTime time.Duration) (map[string]string, []string, error) {
	var in bytes.Buffer
	req := renderRequest{Chart: toWire(ch), Values: values, Name: options.Name, Namespace: options.Namespace, Validate: validate, Cluster: cl}
	if err := gob.NewEncoder(&in).Encode(&req); err != nil {
		return nil, nil, fmt.Errorf("encoding the chart for its render process: %w", err)
	}
	renderCtx, cancel := context.WithTimeout(ctx, maxTime)
	defer cancel()
	args := append(slices.Clone(c.Args),
		fmt.Sprintf("--memory=%d", c.Limits.Memory),
		fmt.Sprintf("--cpu=%d", int64(c.Limits.CPU.Round(time.Second)/time.Second)),
		fmt.Sprintf("--output=%d", c.Limits.Output))
	cmd := exec.CommandContext(renderCtx, c.Command, args...)
	cmd.Stdin = &in
	// The answer holds the output and its encoding: a little above the
	// output limit, which the child checks first.
	out := &cappedBuffer{limit: c.Limits.Output + c.Limits.Output/8 + 64<<10}
	// Go's runtime says why it died first, a trace of every goroutine
	// after.
	errHead := &headBuffer{size: 4 << 10}
	cmd.Stdout, cmd.Stderr = out, errHead
	cmd.WaitDelay = time.Second
	runErr := cmd.Run()
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if renderCtx.Err() != nil {
		return nil, nil, fmt.Errorf("%w (%s)", errStalled, maxTime)
	}
	if out.over {
		return nil, nil, fmt.Errorf("%w: its output, above %s", errLimit, quantity(c.Limits.Output))
	}
	if runErr != nil {
		return nil, nil, c.failure(cmd.ProcessState, runErr, errHead.String())
	}
	var answer renderAnswer
	if err := gob.NewDecoder(&out.buf).Decode(&answer); err != nil {
		return nil, nil, fmt.Errorf("reading the answer of the render process: %w", err)
	}
	switch {
	case answer.Limit != "":
		return nil, nil, fmt.Errorf("%w: %s", errLimit, answer.Limit)
	case answer.Err != "":
		return nil, nil, errors.New(answer.Err)
	}
	return answer.Files, answer.Unchecked, nil
}

// failure says why a render process failed: the limit it reached, from
// what Go's runtime writes when its memory runs out and from the
// processor time the kernel counted, or else how it ended.
func (c Isolation) failure(state *os.ProcessState, err error, stderr string) error {
	// A thread's stack counts in the data limit too: a thread that cannot
	// be started ran out of the same memory.
	if strings.Contains(stderr, "out of memory") || strings.Contains(stderr, "cannot allocate memory") ||
		strings.Contains(stderr, "pthread_create failed") || strings.Contains(stderr, "failed to create new OS thread") {
		return fmt.Errorf("%w: its memory, %s", errLimit, quantity(c.Limits.Memory))
	}
	if state != nil && c.Limits.CPU > 0 && state.UserTime()+state.SystemTime() >= c.Limits.CPU-time.Second/2 {
		return fmt.Errorf("%w: its processor time, %s", errLimit, c.Limits.CPU)
	}
	line, _, _ := strings.Cut(strings.TrimSpace(stderr), "\n")
	if line == "" {
		return fmt.Errorf("render process: %w", err)
	}
	return fmt.Errorf("render process: %w: %s", err, line)
}

// quantity spells a number of bytes as a setting would: 256Mi.
func quantity(n int64) string {
	return resource.NewQuantity(n, resource.BinarySI).String()
}

// cappedBuffer keeps what is written up to limit bytes, and fails the
// write that goes past it, which ends the child's output.
type cappedBuffer struct {
	buf   bytes.Buffer
	limit int64
	over  bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if int64(b.buf.Len()+len(p)) > b.limit {
		b.over = true
		return 0, errLimit
	}
	return b.buf.Write(p)
}

// headBuffer keeps the first size bytes written, and takes the rest
// without keeping it.
type headBuffer struct {
	buf  []byte
	size int
}

func (b *headBuffer) Write(p []byte) (int, error) {
	if room := b.size - len(b.buf); room > 0 {
		b.buf = append(b.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (b *headBuffer) String() string { return string(b.buf) }

// ServeRender is the body of a render process (Isolation): it takes its
// limits from args (--memory, --cpu and --output, in bytes and seconds)
// before it reads anything, renders the request it reads from in and
// writes the answer to out. It returns the process's exit code.
func ServeRender(args []string, in io.Reader, out, stderr io.Writer) int {
	flags := flag.NewFlagSet("render", flag.ContinueOnError)
	flags.SetOutput(stderr)
	memory := flags.Int64("memory", 0, "bytes of data segment")
	cpu := flags.Int64("cpu", 0, "seconds of processor time")
	output := flags.Int64("output", 0, "bytes of output")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if err := limitSelf(*memory, *cpu); err != nil {
		fmt.Fprintf(stderr, "render: %v\n", err)
		return 1
	}
	var req renderRequest
	if err := gob.NewDecoder(in).Decode(&req); err != nil {
		fmt.Fprintf(stderr, "render: reading the request: %v\n", err)
		return 1
	}
	options := common.ReleaseOptions{Name: req.Name, Namespace: req.Namespace, Revision: 1, IsInstall: true}
	files, unchecked, err := engineOutput(context.Background(), req.Chart.chart(), req.Values, options, req.Validate, req.Cluster)
	var answer renderAnswer
	switch {
	case err != nil:
		answer.Err = err.Error()
	case *output > 0 && outputSize(files) > *output:
		answer.Limit = "its output, above " + quantity(*output)
	default:
		answer.Files, answer.Unchecked = files, unchecked
	}
	if err := gob.NewEncoder(out).Encode(&answer); err != nil {
		fmt.Fprintf(stderr, "render: writing the answer: %v\n", err)
		return 1
	}
	return 0
}

// limitSelf sets the process's limits: its data segment and, below it,
// the heap Go's garbage collector aims for, and its processor time, past
// which the kernel kills it. Zero leaves a limit alone.
func limitSelf(memory, cpuSeconds int64) error {
	if memory > 0 {
		if err := syscall.Setrlimit(syscall.RLIMIT_DATA, &syscall.Rlimit{Cur: uint64(memory), Max: uint64(memory)}); err != nil {
			return fmt.Errorf("limiting memory: %w", err)
		}
		debug.SetMemoryLimit(memory / 2)
	}
	if cpuSeconds > 0 {
		if err := syscall.Setrlimit(syscall.RLIMIT_CPU, &syscall.Rlimit{Cur: uint64(cpuSeconds), Max: uint64(cpuSeconds)}); err != nil {
			return fmt.Errorf("limiting processor time: %w", err)
		}
	}
	return nil
}

// outputSize is the bytes of rendered templates.
func outputSize(files map[string]string) int64 {
	var n int64
	for _, text := range files {
		n += int64(len(text))
	}
	return n
}
