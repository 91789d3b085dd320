package helm

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
)

var (
	// ErrNoKey means no values key sets a container's resource value: the
	// chart hard-codes it, or computes it from something no key moves.
	ErrNoKey = errors.New("no values key")
	// ErrSharedKey means the key that sets a container's resource value
	// sets another container's too, so it cannot be changed for one.
	ErrSharedKey = errors.New("shared values key")
	// ErrRender means the chart could not be rendered with the release's
	// values.
	ErrRender = errors.New("chart render failed")
	// ErrNotRendered means the release does not render the container
	// asked for.
	ErrNotRendered = errors.New("not rendered")
	// ErrProofFailed means rendering after the change did not give the
	// targets the new values, or changed something else.
	ErrProofFailed = errors.New("helm proof failed")
)

// Chart is a loaded chart.
type Chart struct {
	// Name and Version are the chart's, from its Chart.yaml.
	Name, Version string
	// Source says where the chart came from: a directory of the
	// repository, or a chart repository URL or OCI reference and the chart.
	Source string
	// Digest identifies the chart's content: renders are cached by it.
	Digest string

	chart *chartv2.Chart
	// stalled is set once a render of the chart reached a limit (an
	// Engine's MaxTime, an Isolation's Limits).
	stalled atomic.Pointer[error]
	// unchecked lists the values schemas its renders could not check.
	mu        sync.Mutex
	unchecked []string
}

// Release is one Helm release to render.
type Release struct {
	Name, Namespace string
	Chart           *Chart
	// Values are the release's values above the chart's defaults, merged
	// from every layer in Helm's order (Merge).
	Values map[string]any
	// SkipSchema renders without checking the values against the chart's
	// schema, as a HelmRelease's disableSchemaValidation asks.
	SkipSchema bool
}

// Step is one step of a Path: a mapping key, or a list index.
type Step struct {
	// Key is the mapping key when Index is negative.
	Key string
	// Index is the list index, or -1 for a mapping key.
	Index int
}

// Key is a Step into a mapping.
func Key(k string) Step { return Step{Key: k, Index: -1} }

// Index is a Step into a list.
func Index(i int) Step { return Step{Index: i} }

// Path is where a value sits in a release's values.
type Path []Step

// String returns the path as Helm's --set would name it:
// web.resources, sidecars[0].resources; a key that holds a dot or a
// bracket is quoted: annotations["example.com/x"].
func (p Path) String() string {
	var b strings.Builder
	for i, s := range p {
		switch {
		case s.Index >= 0:
			b.WriteString("[" + strconv.Itoa(s.Index) + "]")
		case strings.ContainsAny(s.Key, `.[]"\ `) || s.Key == "":
			b.WriteString("[" + strconv.Quote(s.Key) + "]")
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.Key)
		}
	}
	return b.String()
}

// Field is one resource value of a container: requests.cpu,
// requests.memory, limits.cpu or limits.memory.
type Field string

// The fields Keys looks for.
const (
	RequestsCPU    Field = "requests.cpu"
	RequestsMemory Field = "requests.memory"
	LimitsCPU      Field = "limits.cpu"
	LimitsMemory   Field = "limits.memory"
)

// Fields returns the fields Keys looks for, in order.
func Fields() []Field { return []Field{RequestsCPU, RequestsMemory, LimitsCPU, LimitsMemory} }

// Container names one container of a rendered workload. Namespace ""
// is the release's.
type Container struct {
	Kind, Namespace, Name string
	Container             string
}

func (c Container) String() string {
	return c.Kind + " " + c.Namespace + "/" + c.Name + ":" + c.Container
}

// Keys says where in a release's values each resource value of one
// container is set: the path of the scalar, which may not exist yet in
// the values (the chart writes a whole mapping, such as
// web.resources, and reads web.resources.limits.cpu from it).
type Keys map[Field]Path
