package helm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"helm.sh/helm/v4/pkg/chart/common/util"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
)

// Found is what Keys found for one container.
type Found struct {
	Container Container
	// Keys are the fields of the container that one key of the release's
	// values sets, and sets for no other container. A limit that no key
	// sets is left out without an error. Two fields have the same key
	// when the chart writes one value to both, such as memory as request
	// and limit: they cannot be given different values.
	Keys Keys
	// Err says why the container has no key for requests.cpu or
	// requests.memory (ErrNoKey), why a field's key cannot be used
	// (ErrSharedKey), or that the release does not render the container
	// (ErrNotRendered). Keys holds the fields found even then.
	Err error
}

// Finder finds, by rendering, the values keys that size the containers of
// releases. It keeps what it learnt of each release (chart digest,
// release name and namespace, and values) for its lifetime, one run, so
// that asking again renders nothing. It is safe for concurrent use.
type Finder struct {
	engine   Engine
	mu       sync.Mutex
	releases map[releaseKey]*analysis
	renders  atomic.Int64
}

// NewFinder returns a Finder that renders with e and has rendered
// nothing.
func NewFinder(e Engine) *Finder {
	return &Finder{engine: e, releases: map[releaseKey]*analysis{}}
}

// Renders returns how many times the Finder has run the template engine.
func (f *Finder) Renders() int { return int(f.renders.Load()) }

// releaseKey identifies a release and its values.
type releaseKey struct{ chart, name, namespace, values string }

// analysis is what a Finder learnt of one release.
type analysis struct {
	mu sync.Mutex
	// rendered is set once the release rendered with its own values, or
	// failed to: err.
	rendered bool
	err      error
	// base are the containers the release renders with its own values,
	// without their bodies.
	base []podContainer
	// probing is what probe renders need; it is dropped after each call,
	// as a run asks for most releases once and it is the bulk of an
	// analysis.
	probing *probing
	// mappingsProbed is set once every mapping of the values was probed,
	// for every container; scalarsProbed are the containers scalars were
	// probed for, unsetProbed those the unset paths the templates read
	// were probed for as mappings.
	mappingsProbed bool
	scalarsProbed  map[containerID]bool
	unsetProbed    map[containerID]bool
	found          map[containerID]map[Field]finding
	// untried counts the candidates probing had no renders left for.
	untried int
	// wholeChart is set once a probe render showed that the chart needs
	// a template probeChart leaves out.
	wholeChart bool
}

// probing is what the probe renders of a release start from.
type probing struct {
	// full is the release's chart processed for its values, and chart
	// what probes render of it: full without the templates that render
	// none of the release's containers (probeChart), or full itself once
	// a render showed that the chart needs them. values are the release's
	// values coalesced with the chart's defaults.
	full, chart *chartv2.Chart
	values      map[string]any
	candidates  candidates
}

// finding is the key whose probe came out as one field of a container.
type finding struct {
	key Path
	// also are the other containers the probe came out in; empty when the
	// key sets this container alone.
	also []Container
}

// Keys finds, for each container of want, the keys of the release's
// values that set its requests and limits, in want's order. It renders
// the release with its own values, then with a probe quantity under every
// mapping of the values at once, then, for the fields still without a
// key, with a probe in every scalar, then, for the containers whose
// requests still have no key of their own, with a probe quantity under
// every path the templates read that the values do not set; a probe
// render that fails is split in halves (see the package documentation).
// The error is for the whole release: it does not render with its own
// values, or ctx ended.
func (f *Finder) Keys(ctx context.Context, r Release, want []Container) ([]Found, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(want) == 0 {
		return nil, nil
	}
	a := f.analysisOf(r)
	a.mu.Lock()
	defer a.mu.Unlock()
	defer func() { a.probing = nil }()
	if !a.rendered {
		if err := f.load(ctx, r, a); err != nil {
			return nil, err
		}
	}
	if a.err != nil {
		return nil, a.err
	}
	located := make([]*podContainer, len(want))
	anyLocated := false
	for i, w := range want {
		for j := range a.base {
			if w.matches(a.base[j].as, r.Namespace) {
				located[i] = &a.base[j]
				anyLocated = true
				break
			}
		}
	}
	if anyLocated && !a.mappingsProbed {
		if err := f.ready(ctx, r, a); err != nil {
			return nil, err
		}
		needed := map[containerID]bool{}
		for _, c := range a.base {
			needed[c.id] = true
		}
		if err := f.probe(ctx, r, a, a.probing.candidates.mappings, mappingProbeValues, needed); err != nil {
			return nil, err
		}
		a.mappingsProbed = true
	}
	if needed := a.needKeys(located, a.scalarsProbed, Fields()); len(needed) > 0 {
		if err := f.ready(ctx, r, a); err != nil {
			return nil, err
		}
		scalars := append(append([]Path{}, a.probing.candidates.scalars...), a.unsetReadsNotFound()...)
		if err := f.probe(ctx, r, a, scalars, scalarProbeValues, needed); err != nil {
			return nil, err
		}
		for id := range needed {
			a.scalarsProbed[id] = true
		}
	}
	// The paths the templates read that the values do not set go last,
	// as mappings, for the containers whose requests nothing else gave a
	// key of their own: a mapping written where a template reads a
	// string, as charts read nameOverride, breaks the render, and a large
	// chart reads hundreds of such paths, while a resources mapping the
	// values do not hold is nearly always under one they do, which the
	// first phase wrote it into.
	if needed := a.needKeys(located, a.unsetProbed, requestFields()); len(needed) > 0 {
		if err := f.ready(ctx, r, a); err != nil {
			return nil, err
		}
		if err := f.probe(ctx, r, a, a.probing.candidates.unsetMappings, mappingProbeValues, needed); err != nil {
			return nil, err
		}
		for id := range needed {
			a.unsetProbed[id] = true
		}
	}
	out := make([]Found, len(want))
	for i, w := range want {
		out[i] = a.result(r, w, located[i])
	}
	return out, nil
}

// analysisOf returns the Finder's analysis of r, new if r was not seen.
func (f *Finder) analysisOf(r Release) *analysis {
	key := releaseKey{name: r.Name, namespace: r.Namespace}
	if r.Chart != nil {
		key.chart = r.Chart.Digest
	}
	hash, ok := valuesHash(r.Values)
	if !ok || key.chart == "" {
		// Values JSON cannot hold, or a chart without a digest: not cached.
		return &analysis{}
	}
	key.values = hash
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.releases[key]
	if !ok {
		a = &analysis{}
		f.releases[key] = a
	}
	return a
}

// load renders the release with its own values and readies its
// probing. A render error is kept: the release fails the same way each
// time; an ended ctx is not.
func (f *Finder) load(ctx context.Context, r Release, a *analysis) error {
	ch, err := releaseChart(r)
	var objects []Object
	if err == nil {
		f.renders.Add(1)
		objects, err = f.engine.render(ctx, r, ch, r.Values, asInstalled)
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	var coalesced map[string]any
	if err == nil {
		coalesced, err = util.CoalesceValues(ch, deepCopyMap(r.Values))
		if err != nil {
			err = renderError(r, "", err)
		}
	}
	a.rendered, a.err = true, err
	if err != nil {
		return err
	}
	if a.found == nil {
		a.base = podContainers(installed(objects))
		for i := range a.base {
			a.base[i].body = nil
		}
		a.scalarsProbed, a.unsetProbed = map[containerID]bool{}, map[containerID]bool{}
		a.found = map[containerID]map[Field]finding{}
	}
	probed := ch
	if !a.wholeChart {
		probed = probeChart(ch, a.base)
	}
	// The templates left out read nothing a container of the release
	// depends on: their reads are no candidates.
	a.probing = &probing{full: ch, chart: probed, values: coalesced, candidates: findCandidates(coalesced, templateReads(probed))}
	return nil
}

// ready readies the release's probing if an earlier call dropped it: the
// release is rendered again, and renders as it did.
func (f *Finder) ready(ctx context.Context, r Release, a *analysis) error {
	if a.probing != nil {
		return nil
	}
	return f.load(ctx, r, a)
}

// maxProbeRenders bounds the renders of one phase of probes for one
// release: a chart that fails for many candidates costs at most this
// much, and its candidates left untried are said to be.
const maxProbeRenders = 128

// probe renders the values build writes for candidates and records where
// each probe comes out. A render that fails, or that loses a container of
// needed, is done again without the candidates its error quotes a probe
// of, if any, else for each half of the candidates, recursively; a single
// candidate that fails is dropped.
func (f *Finder) probe(ctx context.Context, r Release, a *analysis, candidates []Path, build probeBuilder, needed map[containerID]bool) error {
	run := &probeRun{f: f, r: r, a: a, build: build, needed: needed, left: maxProbeRenders}
	_, err := run.set(ctx, candidates, false)
	a.untried += run.untried
	return err
}

// probeBuilder writes probes for candidates into a copy of values.
type probeBuilder func(values map[string]any, candidates []Path) (map[string]any, *probes)

// probeRun is one phase of probes for one release.
type probeRun struct {
	f      *Finder
	r      Release
	a      *analysis
	build  probeBuilder
	needed map[containerID]bool
	// left is how many renders the phase may still do; untried counts the
	// candidates it had none left for.
	left, untried int
}

// set probes one set of candidates. failing says that the set is known
// to fail: it is half of a set that failed, and the other half rendered;
// it is then split without being rendered. set reports whether the set
// rendered at once.
func (p *probeRun) set(ctx context.Context, candidates []Path, failing bool) (bool, error) {
	if len(candidates) == 0 {
		return true, nil
	}
	if !failing || len(candidates) == 1 {
		if p.left == 0 {
			p.untried += len(candidates)
			return false, nil
		}
		p.left--
		culprits, err := p.try(ctx, candidates)
		switch {
		case err != nil:
			return false, err
		case culprits == nil:
			return true, nil
		case len(candidates) == 1:
			return false, nil
		case len(culprits) > 0:
			rest := make([]Path, 0, len(candidates)-len(culprits))
			for i, c := range candidates {
				if !slices.Contains(culprits, i) {
					rest = append(rest, c)
				}
			}
			_, err := p.set(ctx, rest, false)
			return false, err
		}
	}
	half := len(candidates) / 2
	firstRendered, err := p.set(ctx, candidates[:half], false)
	if err != nil {
		return false, err
	}
	_, err = p.set(ctx, candidates[half:], firstRendered)
	return false, err
}

// try renders the probes of candidates once and records what comes out.
// When the render fails, culprits is not nil: it lists the candidates
// whose probes the error quotes, possibly none.
func (p *probeRun) try(ctx context.Context, candidates []Path) (culprits []int, err error) {
	values, ps := p.build(p.a.probing.values, candidates)
	p.f.renders.Add(1)
	objects, err := p.f.engine.render(ctx, p.r, p.a.probing.chart, values, forProbes)
	if err != nil && p.a.probing.chart != p.a.probing.full && missingTemplate(err) && p.left > 0 {
		// A template left out defines or is included after all: the
		// whole chart is rendered from now on.
		p.a.probing.chart, p.a.wholeChart = p.a.probing.full, true
		p.left--
		p.f.renders.Add(1)
		objects, err = p.f.engine.render(ctx, p.r, p.a.probing.chart, values, forProbes)
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return nil, ctxErr
	}
	if err != nil {
		return append([]int{}, ps.culprits(err)...), nil
	}
	rendered := podContainers(installed(objects))
	ids := p.a.match(rendered)
	if !covers(ids, p.needed) {
		return []int{}, nil
	}
	p.a.record(rendered, ids, ps)
	return nil, nil
}

// match gives each container of a probe render the id of the base
// container it is: the one of the same object and container name, else,
// as probes may rename objects, the one from the same place of the same
// template. Containers that are neither get ids of their own.
func (a *analysis) match(rendered []podContainer) []containerID {
	ids := make([]containerID, len(rendered))
	matched := make([]bool, len(rendered))
	taken := map[containerID]bool{}
	byName := map[Container]containerID{}
	for _, b := range a.base {
		if _, dup := byName[b.as]; !dup {
			byName[b.as] = b.id
		}
	}
	for i, c := range rendered {
		if id, ok := byName[c.as]; ok && !taken[id] {
			ids[i], matched[i], taken[id] = id, true, true
		}
	}
	for i, c := range rendered {
		if !matched[i] && !taken[c.id] && a.isBase(c.id) {
			ids[i], matched[i], taken[c.id] = c.id, true, true
		}
	}
	for i, c := range rendered {
		if !matched[i] {
			ids[i] = c.id
			ids[i].unmatched = i + 1
		}
	}
	return ids
}

func (a *analysis) isBase(id containerID) bool {
	for _, b := range a.base {
		if b.id == id {
			return true
		}
	}
	return false
}

// covers reports whether ids hold every container of needed.
func covers(ids []containerID, needed map[containerID]bool) bool {
	n := 0
	for _, id := range ids {
		if needed[id] {
			n++
		}
	}
	return n == len(needed)
}

// record notes, for each field of each container a probe came out as,
// the probe's key, and the other containers it came out in.
func (a *analysis) record(rendered []podContainer, ids []containerID, ps *probes) {
	type hit struct {
		container int
		field     Field
	}
	var order []string
	hits := map[string][]hit{}
	keys := map[string]Path{}
	fields := Fields()
	for i, c := range rendered {
		for _, field := range fields {
			v, ok := resourceValue(c.body, field)
			if !ok {
				continue
			}
			key, ok := ps.key(v)
			if !ok {
				continue
			}
			s := key.String()
			if _, seen := hits[s]; !seen {
				order = append(order, s)
			}
			hits[s] = append(hits[s], hit{i, field})
			keys[s] = key
		}
	}
	for _, s := range order {
		for _, h := range hits[s] {
			var also []Container
			seen := map[containerID]bool{ids[h.container]: true}
			for _, o := range hits[s] {
				if id := ids[o.container]; !seen[id] {
					seen[id] = true
					also = append(also, a.describe(id, rendered[o.container]))
				}
			}
			a.note(ids[h.container], h.field, finding{key: keys[s], also: also})
		}
	}
}

// describe names a container of a probe render as the release renders it
// with its own values, when it is one of those.
func (a *analysis) describe(id containerID, rendered podContainer) Container {
	for _, b := range a.base {
		if b.id == id {
			return b.as
		}
	}
	return rendered.as
}

// note keeps the first key found for a field, unless it is shared and the
// new one is not.
func (a *analysis) note(id containerID, field Field, fd finding) {
	fields := a.found[id]
	if fields == nil {
		fields = map[Field]finding{}
		a.found[id] = fields
	}
	if old, ok := fields[field]; ok && (len(old.also) == 0 || len(fd.also) > 0) {
		return
	}
	fields[field] = fd
}

// requestFields returns the fields a container must have keys for: a
// limit that no key sets is left out without an error.
func requestFields() []Field { return []Field{RequestsCPU, RequestsMemory} }

// needKeys returns the located containers that have one of fields
// without a key of their own, and that are not in probed, the
// containers a phase probed for.
func (a *analysis) needKeys(located []*podContainer, probed map[containerID]bool, fields []Field) map[containerID]bool {
	needed := map[containerID]bool{}
	for _, c := range located {
		if c == nil || probed[c.id] {
			continue
		}
		for _, field := range fields {
			if fd, ok := a.found[c.id][field]; !ok || len(fd.also) > 0 {
				needed[c.id] = true
				break
			}
		}
	}
	return needed
}

// unsetReadsNotFound are the paths the templates read and the values do
// not set, but those the mapping probes found as keys.
func (a *analysis) unsetReadsNotFound() []Path {
	found := map[string]bool{}
	for _, fields := range a.found {
		for _, fd := range fields {
			found[fd.key.String()] = true
		}
	}
	var out []Path
	for _, p := range a.probing.candidates.unsetReads {
		if !found[p.String()] {
			out = append(out, p)
		}
	}
	return out
}

// result is what Keys says of w, c being its container with the
// release's own values, nil if there is none.
func (a *analysis) result(r Release, w Container, c *podContainer) Found {
	out := Found{Container: w}
	if c == nil {
		out.Err = a.notRendered(r, w)
		return out
	}
	out.Keys = Keys{}
	var noKey []string
	var errs []error
	for _, field := range Fields() {
		fd, ok := a.found[c.id][field]
		switch {
		case ok && len(fd.also) == 0:
			out.Keys[field] = fd.key
		case ok:
			errs = append(errs, fmt.Errorf("%s: %w: %s also sets %s", field, ErrSharedKey, fd.key, containerList(fd.also)))
		case slices.Contains(requestFields(), field):
			noKey = append(noKey, string(field))
		}
	}
	if len(noKey) > 0 {
		why := "the chart hard-codes it, or computes it from no single key"
		if a.untried > 0 {
			why += fmt.Sprintf(", or sets it from one of %d candidate keys left untried: the chart failed so many probe renders that probing stopped after %d", a.untried, maxProbeRenders)
		}
		errs = append([]error{fmt.Errorf("%s: %w: %s", strings.Join(noKey, ", "), ErrNoKey, why)}, errs...)
	}
	out.Err = errors.Join(errs...)
	return out
}

// notRendered says that the release does not render w, and what
// workloads it renders instead.
func (a *analysis) notRendered(r Release, w Container) error {
	if w.Namespace == "" {
		w.Namespace = r.Namespace
	}
	var workloads []string
	index := map[string]int{}
	for _, c := range a.base {
		name := c.as.Kind + " " + c.as.Namespace + "/" + c.as.Name
		i, ok := index[name]
		if !ok {
			i = len(workloads)
			index[name] = i
			workloads = append(workloads, name+" (")
		} else {
			workloads[i] += ", "
		}
		workloads[i] += c.as.Container
	}
	renders := "no workload"
	if len(workloads) > 0 {
		for i := range workloads {
			workloads[i] += ")"
		}
		renders = boundedList(workloads, 10)
	}
	return fmt.Errorf("%s: %w by release %s/%s (chart %s %s), which renders %s", w, ErrNotRendered, r.Namespace, r.Name, r.Chart.Name, r.Chart.Version, renders)
}

// containerList names containers, a bounded number of them.
func containerList(cs []Container) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.String()
	}
	return boundedList(names, 5)
}

// boundedList joins the first limit items with ", " and counts the
// others.
func boundedList(items []string, limit int) string {
	return boundedJoin(items, limit, ", ")
}

// boundedJoin joins the first limit items with sep and counts the others.
func boundedJoin(items []string, limit int, sep string) string {
	if len(items) <= limit {
		return strings.Join(items, sep)
	}
	return fmt.Sprintf("%s%sand %d more", strings.Join(items[:limit], sep), sep, len(items)-limit)
}
