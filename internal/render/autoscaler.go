package render

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/render/edits"
	"github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/render/helmsource"
	"github.com/recommend-job/recommend-job/internal/render/proof"
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
func (a *applier) autoscale(c Change, ref repoindex.DocRef, dir string, patch bool) (AutoscalerResult, []string, *proof.Expectation, error) {
	as := c.Autoscaler
	hc := Change{Target: as.Target, Path: c.Path}
	hr, _, err := a.Index.Resolve(hc.sought(), dir)
	if err != nil {
		return AutoscalerResult{}, nil, nil, err
	}
	if (ref.Chain == nil) != (hr.Chain == nil) || ref.Chain != nil && ref.Chain.Root() != hr.Chain.Root() {
		return AutoscalerResult{File: hr.File}, nil, nil, fmt.Errorf("%w: %s is rendered %s, the target %s", repoindex.ErrUnsafeFile, as.Target, renderedBy(hr), renderedBy(ref))
	}
	var exp *proof.Expectation
	if hr.Chain != nil {
		// As rendered: a manifest without a namespace renders without one.
		id := repoindex.Group(as.Target.APIVersion) + "/" + as.Target.Kind + "/" + hr.Namespace + "/" + hr.Key.Name
		exp = &proof.Expectation{Want: hc.resources(), Object: id, Sets: utilizationSets(as.Utilization)}
	}
	hr.Shared = a.Index.SharedFor(hr)
	if hr.Chain == nil || !patch && hr.Shared == "" {
		fe, err := a.File(hr.File)
		if err != nil {
			return AutoscalerResult{File: hr.File}, nil, nil, err
		}
		if fe.Unsafe != nil {
			return AutoscalerResult{File: hr.File}, nil, nil, fmt.Errorf("%s: %w", hr.File, fe.Unsafe)
		}
		changed, err := edits.SetUtilization(fe, hr.Doc, as.Utilization)
		return AutoscalerResult{File: hr.File, Changed: changed}, []string{hr.File}, exp, err
	}
	pf, fe, d, err := a.ObjectPatch(hr)
	if err != nil {
		return AutoscalerResult{File: pf}, nil, nil, err
	}
	if fe != nil {
		docs, err := fe.CurrentDocs()
		if err != nil {
			return AutoscalerResult{File: pf}, nil, nil, err
		}
		_, spec, _ := yamledit.Lookup(yamledit.DocRoot(docs[d]), "spec")
		if _, metrics, _ := yamledit.Lookup(spec, "metrics"); metrics != nil {
			// The patch's list replaces the base's: it is the one to edit.
			changed, err := edits.SetUtilization(fe, d, as.Utilization)
			return AutoscalerResult{File: pf, Changed: changed}, []string{pf}, exp, err
		}
	}
	base, err := a.Doc(hr.File, hr.Doc)
	if err != nil {
		return AutoscalerResult{File: hr.File}, nil, nil, err
	}
	lines, err := edits.MetricsPatch(base, as.Utilization)
	if err != nil {
		return AutoscalerResult{File: hr.File}, nil, nil, fmt.Errorf("%s: %w", hr.File, err)
	}
	file, changed, files, err := a.NewObjectPatch(hr, lines)
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
