package helm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	"sigs.k8s.io/yaml"
)

// Object is one Kubernetes object a release renders.
type Object struct {
	APIVersion, Kind string
	// Namespace is the object's, or the release's when the object names
	// none.
	Namespace, Name string
	// Template is the template file that rendered it, by its path in the
	// chart: templates/deployment.yaml, or
	// charts/db/templates/statefulset.yaml for a subchart's.
	Template string
	// Body is the object as rendered.
	Body map[string]any
}

// DefaultMaxRenderTime bounds one render of a chart when the Engine
// sets no MaxTime.
const DefaultMaxRenderTime = 30 * time.Second

// Engine is how charts are rendered: where (in this process, or each
// render in a render process, Isolation), with which capabilities
// (Cluster) and within how long (MaxTime). A run builds one and gives it
// to everything that renders charts; the zero Engine renders in this
// process with Helm's default capabilities within DefaultMaxRenderTime.
// An Engine in use is not changed.
type Engine struct {
	// Isolation is the render process each render runs in; the zero
	// Isolation renders in this process.
	Isolation Isolation
	// Cluster is what templates see as .Capabilities, as helm-controller
	// and Argo CD give it to them, and the version a chart's kubeVersion
	// must admit; nil is Helm's defaults, with which no kubeVersion is
	// checked.
	Cluster *Cluster
	// MaxTime bounds one render of a chart; zero is DefaultMaxRenderTime.
	// Helm's engine does not stop for a context while a template runs,
	// and a chart's templates may take as long as they like (an include
	// that calls itself twice doubles with each level): a render past it
	// is killed in its render process (Isolation), or left to finish on
	// its own in this one; its release is reported, and the chart is not
	// rendered again in the run, so that one release's chart never holds
	// up the others.
	MaxTime time.Duration
}

// maxTime is the bound of one render.
func (e Engine) maxTime() time.Duration {
	if e.MaxTime > 0 {
		return e.MaxTime
	}
	return DefaultMaxRenderTime
}

// Render renders a release as helm template would: its values coalesced
// with the chart's defaults and checked against the chart's
// values.schema.json, for a first install in the release's namespace,
// with e.Cluster as its capabilities (else Helm's defaults) and no
// connection to it. NOTES.txt, partials and empty documents are left
// out. Errors of the chart wrap ErrRender.
func (e Engine) Render(ctx context.Context, r Release) ([]Object, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ch, err := releaseChart(r)
	if err != nil {
		return nil, err
	}
	return e.render(ctx, r, ch, r.Values, asInstalled)
}

// releaseChart returns the release's chart as Helm installs it with the
// release's values: subcharts that conditions or tags disable removed,
// aliases applied and import-values imported. The loaded chart is not
// modified, so that releases can share it.
func releaseChart(r Release) (*chartv2.Chart, error) {
	if r.Chart == nil || r.Chart.chart == nil {
		return nil, fmt.Errorf("release %s/%s has no loaded chart", r.Namespace, r.Name)
	}
	if err := checkDependencies(r.Chart.chart); err != nil {
		return nil, renderError(r, "", err)
	}
	if !declaresDependencies(r.Chart.chart) {
		return r.Chart.chart, nil
	}
	ch := cloneChart(r.Chart.chart)
	values := r.Values
	if values == nil {
		values = map[string]any{}
	}
	if err := chartutil.ProcessDependencies(ch, common.Values(deepCopyMap(values))); err != nil {
		return nil, renderError(r, "", fmt.Errorf("process dependencies: %w", err))
	}
	return ch, nil
}

// checkDependencies refuses a chart that declares a dependency its
// charts/ directory does not hold, as helm install does: rendering without
// it would silently leave out its objects.
func checkDependencies(ch *chartv2.Chart) error {
	loaded := map[string]bool{}
	for _, d := range ch.Dependencies() {
		loaded[d.Name()] = true
	}
	for _, d := range ch.Metadata.Dependencies {
		if d != nil && !loaded[d.Name] {
			return fmt.Errorf("chart %s declares dependency %s, which is not in its charts/ directory", ch.Name(), d.Name)
		}
	}
	for _, d := range ch.Dependencies() {
		if err := checkDependencies(d); err != nil {
			return err
		}
	}
	return nil
}

// declaresDependencies reports whether the chart or a subchart lists
// dependencies in its Chart.yaml, which Helm processes before rendering.
func declaresDependencies(ch *chartv2.Chart) bool {
	if ch.Metadata.Dependencies != nil {
		return true
	}
	return slices.ContainsFunc(ch.Dependencies(), declaresDependencies)
}

// cloneChart copies what processing dependencies changes: the metadata,
// its dependency list and the tree of subcharts. Templates, files and
// default values are shared, as processing replaces rather than changes
// them.
func cloneChart(ch *chartv2.Chart) *chartv2.Chart {
	out := *ch
	md := *ch.Metadata
	if ch.Metadata.Dependencies != nil {
		md.Dependencies = make([]*chartv2.Dependency, len(ch.Metadata.Dependencies))
		for i, d := range ch.Metadata.Dependencies {
			if d != nil {
				dd := *d
				md.Dependencies[i] = &dd
			}
		}
	}
	out.Metadata = &md
	deps := ch.Dependencies()
	out.SetDependencies()
	for _, d := range deps {
		out.AddDependency(cloneChart(d))
	}
	return &out
}

// renderMode says what a render is for.
type renderMode int

const (
	// asInstalled renders as Helm installs: the values are checked
	// against the schema, and every document is parsed.
	asInstalled renderMode = iota
	// forProbes renders values that hold probes: the schema, which would
	// refuse them, is not checked, and only the documents that may hold a
	// pod template are parsed, as no other is read.
	forProbes
)

// render renders ch, the release's chart processed for its values, with
// values above the chart's defaults, and parses the output.
func (e Engine) render(ctx context.Context, r Release, ch *chartv2.Chart, values map[string]any, mode renderMode) ([]Object, error) {
	files, err := e.renderFiles(ctx, r, ch, values, mode == asInstalled && !r.SkipSchema)
	if err != nil {
		return nil, err
	}
	return parseObjects(r, files, mode)
}

// renderFiles runs the template engine: the output of every template
// file, by its path in the chart, NOTES.txt and partials left out.
func (e Engine) renderFiles(ctx context.Context, r Release, ch *chartv2.Chart, values map[string]any, validate bool) (map[string]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if values == nil {
		values = map[string]any{}
	}
	options := common.ReleaseOptions{Name: r.Name, Namespace: r.Namespace, Revision: 1, IsInstall: true}
	out, unchecked, err := e.runEngine(ctx, r, ch, values, options, validate)
	if ctxErr := ctx.Err(); ctxErr != nil {
		return nil, ctxErr
	}
	if err != nil {
		return nil, renderError(r, "", err)
	}
	if r.Chart != nil {
		r.Chart.noteUnchecked(unchecked)
	}
	files := make(map[string]string, len(out))
	prefix := ch.Name() + "/"
	for name, text := range out {
		base := path.Base(name)
		if base == "NOTES.txt" || strings.HasPrefix(base, "_") {
			continue
		}
		files[strings.TrimPrefix(name, prefix)] = text
	}
	return files, nil
}

// engineOutput is Helm's values of the release, values over the chart's
// defaults (checked against its schema when validate is set), rendered
// by its template engine with c as its capabilities (Helm's defaults when
// nil), and the schemas that could not be checked.
func engineOutput(ctx context.Context, ch *chartv2.Chart, values map[string]any, options common.ReleaseOptions, validate bool, c *Cluster) (map[string]string, []string, error) {
	caps, err := capabilitiesOf(c)
	if err != nil {
		return nil, nil, err
	}
	if err := checkKubeVersion(ch, c, caps); err != nil {
		return nil, nil, err
	}
	top, err := util.ToRenderValuesWithSchemaValidation(ch, values, options, caps, true)
	if err != nil {
		return nil, nil, err
	}
	var unchecked []string
	if validate {
		vals, _ := top["Values"].(common.Values)
		if unchecked, err = checkSchemas(ch, vals); err != nil {
			return nil, nil, err
		}
	}
	var e engine.Engine
	out, err := e.RenderWithContext(ctx, ch, top)
	return out, unchecked, err
}

// errStalled means a render of the chart ran past the Engine's MaxTime.
var errStalled = fmt.Errorf("%w: a render took longer than the limit", errLimit)

// runEngine renders ch within e's limits, in a render process when e has
// an Isolation, unless a render of the same chart reached a limit before;
// a chart that reaches one is not rendered again.
func (e Engine) runEngine(ctx context.Context, r Release, ch *chartv2.Chart, values map[string]any, options common.ReleaseOptions, validate bool) (map[string]string, []string, error) {
	if r.Chart != nil {
		if err := r.Chart.stalled.Load(); err != nil {
			return nil, nil, *err
		}
	}
	var out map[string]string
	var unchecked []string
	var err error
	if e.Isolation.Command != "" {
		out, unchecked, err = e.Isolation.render(ctx, ch, values, options, validate, e.Cluster, e.maxTime())
	} else {
		out, unchecked, err = runInProcess(ctx, ch, values, options, validate, e.Cluster, e.maxTime())
	}
	if errors.Is(err, errLimit) && ctx.Err() == nil {
		err = fmt.Errorf("%w: the chart is not rendered again in this run", err)
		if r.Chart != nil {
			r.Chart.stalled.Store(&err)
		}
	}
	return out, unchecked, err
}

// runInProcess renders ch in this process within maxTime, after which
// the render is left to finish on its own.
func runInProcess(ctx context.Context, ch *chartv2.Chart, values map[string]any, options common.ReleaseOptions, validate bool, c *Cluster, maxTime time.Duration) (map[string]string, []string, error) {
	type result struct {
		out       map[string]string
		unchecked []string
		err       error
	}
	done := make(chan result, 1)
	go func() {
		out, unchecked, err := engineOutput(ctx, ch, values, options, validate, c)
		done <- result{out, unchecked, err}
	}()
	timer := time.NewTimer(maxTime)
	defer timer.Stop()
	select {
	case res := <-done:
		return res.out, res.unchecked, res.err
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	case <-timer.C:
		return nil, nil, fmt.Errorf("%w (%s)", errStalled, maxTime)
	}
}

// documentSeparator splits a template's output into documents as Helm
// does.
var documentSeparator = regexp.MustCompile(`(?m)^---[ \t]*`)

// parseObjects parses the documents of every rendered file, in file name
// order and document order; for probes, only those that may hold a pod
// template.
func parseObjects(r Release, files map[string]string, mode renderMode) ([]Object, error) {
	var objects []Object
	for _, name := range slices.Sorted(maps.Keys(files)) {
		for i, doc := range documentSeparator.Split(files[name], -1) {
			if strings.TrimSpace(doc) == "" || (mode == forProbes && !strings.Contains(doc, "containers")) {
				continue
			}
			var body map[string]any
			if err := yaml.Unmarshal([]byte(doc), &body); err != nil {
				return nil, renderError(r, name, fmt.Errorf("document %d does not parse as a YAML mapping: %w", i+1, err))
			}
			if len(body) == 0 {
				continue
			}
			o := Object{Template: name, Body: body}
			o.APIVersion, _ = body["apiVersion"].(string)
			o.Kind, _ = body["kind"].(string)
			if md, ok := body["metadata"].(map[string]any); ok {
				o.Name, _ = md["name"].(string)
				o.Namespace, _ = md["namespace"].(string)
			}
			if o.Namespace == "" {
				o.Namespace = r.Namespace
			}
			objects = append(objects, o)
		}
	}
	return objects, nil
}

// renderError wraps ErrRender with the release, the chart and, when
// known, the template.
func renderError(r Release, template string, err error) error {
	chart := "?"
	if r.Chart != nil {
		chart = r.Chart.Name + " " + r.Chart.Version
	}
	where := fmt.Sprintf("release %s/%s, chart %s", r.Namespace, r.Name, chart)
	if template != "" {
		where += ", " + template
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: %s: %w", ErrRender, where, err)
}
