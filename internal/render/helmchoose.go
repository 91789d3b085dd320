package render

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/recommend-job/recommend-job/internal/kinds"
	"github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/render/helmsource"
	"github.com/recommend-job/recommend-job/internal/render/proof"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
)

// chooseRelease picks, when the HelmRelease that installs c's target is
// rendered by several environments and nothing names one (err, from
// FindRelease, wraps the AmbiguousError), the environment whose release
// renders the live pod template (chooseHelm). It returns the release
// chosen with a sentence saying why; else nil and err, with each
// candidate's first difference when they were rendered.
func (h *helmPhase) chooseRelease(ctx context.Context, c Change, err error) (*helmsource.Release, string, error) {
	var amb *repoindex.AmbiguousError
	if c.Target.PodPrint == "" || !errors.As(err, &amb) || !helmReleases(amb) {
		return nil, "", err
	}
	name, ns := c.Target.Annotations[repoindex.HelmReleaseName], c.Target.Annotations[repoindex.HelmReleaseNS]
	r, why, cerr := h.a.chooseHelm(ctx, amb, c.Target, name, ns)
	if cerr != nil {
		return nil, "", fmt.Errorf("%w; %w", err, cerr)
	}
	return r, why, nil
}

// helmReleases reports whether every candidate of amb is a Flux
// HelmRelease, rendered by a kustomization.
func helmReleases(amb *repoindex.AmbiguousError) bool {
	for _, ref := range amb.Candidates {
		if ref.Key.Group != repoindex.FluxHelmGroup || ref.Key.Kind != "HelmRelease" || ref.Chain == nil {
			return false
		}
	}
	return len(amb.Candidates) > 0
}

// chooseHelm renders the release of each of amb's candidates, a
// HelmRelease as each environment builds it, as its controllers would
// (the environment's build of the HelmRelease, its chart and values;
// the release's name and namespace as given, else the HelmRelease's),
// and compares t's object in it with the live pod template. The one
// candidate that renders it is returned with a sentence saying why; when
// none or several do, the error names each with its first difference.
func (a *applier) chooseHelm(ctx context.Context, amb *repoindex.AmbiguousError, t Target, name, ns string) (*helmsource.Release, string, error) {
	candidates := slices.SortedFunc(slices.Values(amb.Candidates), func(x, y repoindex.DocRef) int { return strings.Compare(x.Label(), y.Label()) })
	releases := make([]*helmsource.Release, len(candidates))
	for i, ref := range candidates {
		releases[i] = &helmsource.Release{Kind: "HelmRelease", Ref: ref, Source: -1, LiveNamespace: ref.Namespace, Name: name, Namespace: ns}
	}
	matched, labels, said := proof.AgainstLive(releases, func(r *helmsource.Release) string { return r.Ref.Label() },
		func(r *helmsource.Release) (kinds.PodPrint, error) { return a.releasePrint(ctx, r, t) }, t.PodPrint)
	switch len(matched) {
	case 0:
		return nil, "", fmt.Errorf("none of them renders the live pod template (%s)", strings.Join(said, "; "))
	case 1:
		return matched[0], fmt.Sprintf("chosen among %s as the one whose release renders the live pod template (%s)",
			strings.Join(labels, ", "), strings.Join(said, "; ")), nil
	}
	return nil, "", fmt.Errorf("%d of them render the live pod template (%s)", len(matched), strings.Join(said, "; "))
}

// chooseMarked is chooseHelm for a marker in a HelmRelease that several
// environments render: the candidate chosen, as the index found it.
func (a *applier) chooseMarked(ctx context.Context, amb *repoindex.AmbiguousError, t Target) (repoindex.DocRef, string, error) {
	r, why, err := a.chooseHelm(ctx, amb, t, "", "")
	if err != nil {
		return repoindex.DocRef{}, "", fmt.Errorf("%w; %w", amb, err)
	}
	return r.Ref, why, nil
}

// releasePrint renders r as the repository holds it and returns the print
// of t's object in it. Post-renderers are not applied: a release whose
// post-renderer changes the pod template does not match.
func (a *applier) releasePrint(ctx context.Context, r *helmsource.Release, t Target) (kinds.PodPrint, error) {
	a.src.FetchCharts(ctx, []*helmsource.Release{r})
	st, err := a.src.Load(ctx, r, false)
	if err != nil {
		return "", fmt.Errorf("not loaded: %w", err)
	}
	objs, err := a.charts.Render(ctx, helm.Release{Name: r.Name, Namespace: r.Namespace, Chart: r.Chart, Values: helmsource.MergeLayers(st.Layers), SkipSchema: r.SkipSchema})
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
