package render

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/render/helmsource"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
	"github.com/recommend-job/recommend-job/internal/render/yamledit"
)

// Autoscaler asks that a HorizontalPodAutoscaler's utilisation targets be
// set along with a change's requests.
type Autoscaler struct {
	Target repoindex.Target
	// Utilization are the targets to set, each the averageUtilization of
	// metric Index of the HPA's spec.metrics: a ContainerResource metric of
	// Container when it is set, a Resource metric otherwise. An
	// autoscaling/v1 manifest holds one Resource metric of cpu, as
	// targetCPUUtilizationPercentage.
	Utilization []plan.Utilization
}

// AutoscalerResult says where an Autoscaler's targets were set.
type AutoscalerResult struct {
	File    string
	Changed bool
}

// autoscale sets the targets of c.Autoscaler in the environment that
// renders the target (ref): in the HPA's manifest, or, where the target's
// values went to a patch or the HPA's file is shared with another
// environment, with a patch of the HPA next to the target's. It returns
// what it did, the files touched, and what the proof must find.
func (a *applier) autoscale(c Change, ref repoindex.DocRef, dir string, patch bool) (AutoscalerResult, []string, *expectation, error) {
	as := c.Autoscaler
	hc := Change{Target: as.Target, Path: c.Path}
	hr, _, err := a.idx.Resolve(hc.sought(), dir)
	if err != nil {
		return AutoscalerResult{}, nil, nil, err
	}
	if (ref.Chain == nil) != (hr.Chain == nil) || ref.Chain != nil && ref.Chain.Root() != hr.Chain.Root() {
		return AutoscalerResult{File: hr.File}, nil, nil, fmt.Errorf("%w: %s is rendered %s, the target %s", repoindex.ErrUnsafeFile, as.Target, renderedBy(hr), renderedBy(ref))
	}
	var exp *expectation
	if hr.Chain != nil {
		// As rendered: a manifest without a namespace renders without one.
		id := repoindex.Group(as.Target.APIVersion) + "/" + as.Target.Kind + "/" + hr.Namespace + "/" + hr.Key.Name
		exp = &expectation{change: hc, object: id, sets: utilizationSets(as.Utilization)}
	}
	hr.Shared = a.idx.SharedFor(hr)
	if hr.Chain == nil || !patch && hr.Shared == "" {
		fe, err := a.file(hr.File)
		if err != nil {
			return AutoscalerResult{File: hr.File}, nil, nil, err
		}
		if fe.unsafe != nil {
			return AutoscalerResult{File: hr.File}, nil, nil, fmt.Errorf("%s: %w", hr.File, fe.unsafe)
		}
		changed, err := a.setUtilization(fe, hr.Doc, as)
		return AutoscalerResult{File: hr.File, Changed: changed}, []string{hr.File}, exp, err
	}
	pf, fe, d, err := a.objectPatch(hr)
	if err != nil {
		return AutoscalerResult{File: pf}, nil, nil, err
	}
	if fe != nil {
		docs, err := fe.currentDocs()
		if err != nil {
			return AutoscalerResult{File: pf}, nil, nil, err
		}
		_, spec, _ := yamledit.Lookup(yamledit.DocRoot(docs[d]), "spec")
		if _, metrics, _ := yamledit.Lookup(spec, "metrics"); metrics != nil {
			// The patch's list replaces the base's: it is the one to edit.
			changed, err := a.setUtilization(fe, d, as)
			return AutoscalerResult{File: pf, Changed: changed}, []string{pf}, exp, err
		}
	}
	base, err := a.Doc(hr.File, hr.Doc)
	if err != nil {
		return AutoscalerResult{File: hr.File}, nil, nil, err
	}
	lines, err := metricsPatch(base, as)
	if err != nil {
		return AutoscalerResult{File: hr.File}, nil, nil, fmt.Errorf("%s: %w", hr.File, err)
	}
	file, changed, files, err := a.newObjectPatch(hr, lines)
	return AutoscalerResult{File: file, Changed: changed}, files, exp, err
}

// renderedBy says what renders the document r points at.
func renderedBy(r repoindex.DocRef) string {
	if r.Chain == nil {
		return "from " + r.File + " by no kustomization"
	}
	return "by " + r.Chain.Root().File
}

// utilizationSets are the values the proof must find in the rendered HPA.
func utilizationSets(us []plan.Utilization) []helmsource.Assignment {
	var sets []helmsource.Assignment
	for _, u := range us {
		sets = append(sets, helmsource.Assignment{Path: utilizationPath(u), Quantity: *resource.NewQuantity(int64(u.Percent), resource.DecimalSI)})
	}
	return sets
}

// utilizationPath is where an autoscaling/v2 HPA holds u.
func utilizationPath(u plan.Utilization) helm.Path {
	field := "resource"
	if u.Container != "" {
		field = "containerResource"
	}
	return helm.Path{helm.Key("spec"), helm.Key("metrics"), helm.Index(u.Index), helm.Key(field), helm.Key("target"), helm.Key("averageUtilization")}
}

// setUtilization splices the targets of as into document doc of fe.
func (a *applier) setUtilization(fe *fileEdit, doc int, as *Autoscaler) (bool, error) {
	docs, err := fe.currentDocs()
	if err != nil {
		return false, err
	}
	changed, err := fe.edit(docs, doc, Change{}, func(p *yamledit.Planner, d *yaml.Node, _ Change) error {
		root := yamledit.DocRoot(d)
		p.Step = yamledit.IndentStep(root)
		p.Scopes = []*yaml.Node{root}
		for _, u := range as.Utilization {
			k, v, err := utilizationNode(root, u)
			if err != nil {
				return err
			}
			if want := strconv.Itoa(int(u.Percent)); v.Value != want {
				p.Replace(k, v, want)
			}
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("%s: %w", fe.name, err)
	}
	return changed, nil
}

// utilizationNode finds the key and scalar that hold u in an HPA's
// manifest, checking that the metric there is the one u names: the
// manifest may list its metrics differently from the live object.
func utilizationNode(root *yaml.Node, u plan.Utilization) (k, v *yaml.Node, err error) {
	apiVersion, _ := yamledit.ScalarField(root, "apiVersion")
	_, spec, _ := yamledit.Lookup(root, "spec")
	if err := yamledit.UnsafeNode(spec, "spec"); err != nil {
		return nil, nil, err
	}
	if apiVersion == "autoscaling/v1" {
		if u.Index != 0 || u.Resource != corev1.ResourceCPU || u.Container != "" {
			return nil, nil, fmt.Errorf("%w: an autoscaling/v1 HorizontalPodAutoscaler has no metric %d of %s", repoindex.ErrUnsafeFile, u.Index, u.Resource)
		}
		k, v, _ := yamledit.Lookup(spec, "targetCPUUtilizationPercentage")
		if k == nil || v.Kind != yaml.ScalarNode {
			return nil, nil, fmt.Errorf("%w: sets no spec.targetCPUUtilizationPercentage (the default 80%%); set it to let it be adjusted", repoindex.ErrUnsafeFile)
		}
		return k, v, nil
	}
	_, metrics, _ := yamledit.Lookup(spec, "metrics")
	if metrics == nil || metrics.Kind != yaml.SequenceNode {
		return nil, nil, fmt.Errorf("%w: sets no spec.metrics (the default 80%% cpu); set them to let them be adjusted", repoindex.ErrUnsafeFile)
	}
	if u.Index >= len(metrics.Content) {
		return nil, nil, fmt.Errorf("%w: spec.metrics has no item %d, which the live object scales on", repoindex.ErrUnsafeFile, u.Index)
	}
	m := metrics.Content[u.Index]
	field := "resource"
	if u.Container != "" {
		field = "containerResource"
	}
	where := fmt.Sprintf("spec.metrics[%d].%s", u.Index, field)
	_, src, _ := yamledit.Lookup(m, field)
	name, _ := yamledit.ScalarField(src, "name")
	container, _ := yamledit.ScalarField(src, "container")
	if src == nil || name != string(u.Resource) || container != u.Container {
		return nil, nil, fmt.Errorf("%w: %s is not the %s utilization the live object scales on", repoindex.ErrUnsafeFile, where, u.Resource)
	}
	_, target, _ := yamledit.Lookup(src, "target")
	if typ, _ := yamledit.ScalarField(target, "type"); typ != "Utilization" {
		return nil, nil, fmt.Errorf("%w: %s.target is of type %q, not the utilization the live object scales on", repoindex.ErrUnsafeFile, where, typ)
	}
	k, v, dup := yamledit.Lookup(target, "averageUtilization")
	if k == nil || dup || v.Kind != yaml.ScalarNode {
		return nil, nil, fmt.Errorf("%w: %s.target.averageUtilization is not a single number", repoindex.ErrUnsafeFile, where)
	}
	return k, v, nil
}

// metricsPatch is the body of a strategic-merge patch that sets the HPA's
// metrics: its list is replaced whole, so the patch holds every metric of
// base with the new targets.
func metricsPatch(base *yaml.Node, as *Autoscaler) (func(step int) []string, error) {
	root := yaml.CopyYNode(yamledit.DocRoot(base))
	for _, u := range as.Utilization {
		_, v, err := utilizationNode(root, u)
		if err != nil {
			return nil, err
		}
		v.Value, v.Tag, v.Style = strconv.Itoa(int(u.Percent)), "", 0
	}
	_, spec, _ := yamledit.Lookup(root, "spec")
	mk, metrics, _ := yamledit.Lookup(spec, "metrics")
	// The patch indents its list as the base does.
	wide := metrics.Column > mk.Column
	doc := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Value: "spec"},
		{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: "metrics"}, metrics}},
	}}
	encode := func(step int) ([]string, error) {
		var buf bytes.Buffer
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(step)
		if wide {
			enc.DefaultSeqIndent()
		}
		if err := enc.Encode(doc); err != nil {
			return nil, err
		}
		if err := enc.Close(); err != nil {
			return nil, err
		}
		return strings.Split(strings.TrimRight(buf.String(), "\n"), "\n"), nil
	}
	if _, err := encode(2); err != nil {
		return nil, fmt.Errorf("writing the HPA's metrics: %w", err)
	}
	return func(step int) []string {
		lines, _ := encode(step) // encodes as it did above, at another step
		return lines
	}, nil
}

// journal holds, while an edit may still be undone, the state of each
// file before it: a.file records a file the first time it hands it out,
// newPatch a file it creates (nil). Only the files the edit touched are
// kept, however many the run has edited.
type journal map[string]*fileEdit

// record keeps fe's state in the journal, if one is open and fe is not in
// it yet.
func (a *applier) record(name string, fe *fileEdit) {
	if a.journal == nil {
		return
	}
	if _, seen := a.journal[name]; seen {
		return
	}
	if fe == nil {
		a.journal[name] = nil
		return
	}
	before := *fe
	a.journal[name] = &before
}

// undo puts every file the journal recorded back as it was, and drops
// the patches written since, from their kustomizations too. It closes the
// journal.
func (a *applier) undo() {
	var gone []string
	for name, before := range a.journal {
		fe := a.files[name]
		switch {
		case fe == nil:
		case before == nil:
			delete(a.files, name)
			a.recent = slices.DeleteFunc(a.recent, func(r *fileEdit) bool { return r == fe })
			gone = append(gone, name)
		default:
			*fe = *before
			fe.docs = nil
		}
	}
	a.journal = nil
	if len(gone) == 0 {
		return
	}
	for _, k := range a.idx.Graph.ByDir {
		k.Patches = slices.DeleteFunc(k.Patches, func(f string) bool { return slices.Contains(gone, f) })
	}
}

// withoutAutoscaled is c without the requests and limits of the resources
// its Autoscaler scales on, and without the Autoscaler: those resources,
// and whether nothing is left to set.
func withoutAutoscaled(c Change) (Change, []corev1.ResourceName, bool) {
	var held []corev1.ResourceName
	requests, limits := slices.Clone(c.Requests), slices.Clone(c.Limits)
	for _, u := range c.Autoscaler.Utilization {
		_, inRequests := requests.Get(u.Resource)
		_, inLimits := limits.Get(u.Resource)
		if (inRequests || inLimits) && !slices.Contains(held, u.Resource) {
			held = append(held, u.Resource)
		}
		scaled := func(v Value) bool { return v.Resource == u.Resource }
		requests, limits = slices.DeleteFunc(requests, scaled), slices.DeleteFunc(limits, scaled)
	}
	c.Requests, c.Limits, c.Autoscaler = requests, limits, nil
	return c, held, len(requests) == 0 && len(limits) == 0
}
