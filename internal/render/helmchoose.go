package render

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/recommend-job/recommend-job/internal/kinds"
	"github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/render/helmsource"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
)

// chooseRelease picks, when the HelmRelease that installs c's target is
// rendered by several environments and nothing names one (err, from
// FindRelease, wraps the AmbiguousError), the environment whose release
// renders the live pod template: each candidate's release is put
// together as its controllers would (the environment's build of the
// HelmRelease, its chart and values) and rendered, and c's object in it
// compared with the live one. It returns the release chosen with a
// sentence saying why; else nil and err, with each candidate's first
// difference when they were rendered.
func (h *helmPhase) chooseRelease(ctx context.Context, c Change, err error) (*helmsource.Release, string, error) {
	var amb *repoindex.AmbiguousError
	if c.Target.PodPrint == "" || !errors.As(err, &amb) {
		return nil, "", err
	}
	var matched []*helmsource.Release
	var said, labels []string
	for _, ref := range amb.Candidates {
		if ref.Key.Group != repoindex.FluxHelmGroup || ref.Key.Kind != "HelmRelease" {
			return nil, "", err
		}
		r := &helmsource.Release{Kind: "HelmRelease", Ref: ref, Source: -1, LiveNamespace: ref.Namespace,
			Name: c.Target.Annotations[repoindex.HelmReleaseName], Namespace: c.Target.Annotations[repoindex.HelmReleaseNS]}
		labels = append(labels, ref.Label())
		p, perr := h.releasePrint(ctx, r, c.Target)
		switch {
		case perr != nil:
			said = append(said, ref.Label()+": "+perr.Error())
		case p.Diff(c.Target.PodPrint) != "":
			said = append(said, ref.Label()+": "+p.Diff(c.Target.PodPrint))
		default:
			said = append(said, ref.Label()+": as live")
			matched = append(matched, r)
		}
	}
	switch len(matched) {
	case 0:
		return nil, "", fmt.Errorf("%w; none of them renders the live pod template (%s)", err, strings.Join(said, "; "))
	case 1:
		return matched[0], fmt.Sprintf("chosen among %s as the one whose release renders the live pod template (%s)",
			strings.Join(labels, ", "), strings.Join(said, "; ")), nil
	}
	return nil, "", fmt.Errorf("%w; %d of them render the live pod template (%s)", err, len(matched), strings.Join(said, "; "))
}

// releasePrint renders r as the repository holds it and returns the print
// of t's object in it. Post-renderers are not applied: a release whose
// post-renderer changes the pod template does not match.
func (h *helmPhase) releasePrint(ctx context.Context, r *helmsource.Release, t Target) (kinds.PodPrint, error) {
	h.a.src.FetchCharts(ctx, []*helmsource.Release{r})
	st, err := h.a.src.Load(ctx, r, false)
	if err != nil {
		return "", fmt.Errorf("not loaded: %w", err)
	}
	objs, err := h.a.charts.Render(ctx, helm.Release{Name: r.Name, Namespace: r.Namespace, Chart: r.Chart, Values: helmsource.MergeLayers(st.Layers), SkipSchema: r.SkipSchema})
	if err != nil {
		return "", fmt.Errorf("does not render: %w", err)
	}
	group := repoindex.Group(t.APIVersion)
	for _, o := range objs {
		if o.Kind != t.Kind || o.Name != t.Name || o.Namespace != t.Namespace || repoindex.Group(o.APIVersion) != group {
			continue
		}
		if p, ok := kinds.PodPrintOf(group, o.Kind, o.Body); ok {
			return p, nil
		}
		return "", fmt.Errorf("its %s has no pod template", t)
	}
	return "", fmt.Errorf("its release renders no %s", t)
}
