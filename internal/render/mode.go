package render

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/recommend-job/recommend-job/internal/helm"
)

// Mode says how a change lands in the repository.
type Mode string

const (
	// ModeAuto edits in place where the defining file is rendered for the
	// target alone, and writes a patch in the overlay otherwise.
	ModeAuto Mode = "auto"
	// ModeInPlace edits the container's resources in the file that defines
	// them; where that file is a base other overlays also use, it writes a
	// patch instead.
	ModeInPlace Mode = "inplace"
	// ModePatch writes or updates a strategic-merge patch in the
	// kustomization that renders the target, and lists it in its patches.
	ModePatch Mode = "patch"
)

// Annotations of a ResourceRecommend that steer rendering; the job copies
// them into Change.Mode and Change.Path.
const (
	// AnnotationMode overrides the run's mode for one ResourceRecommend:
	// auto, inplace or patch.
	AnnotationMode = "recommend-job.io/mode"
	// AnnotationPath names the directory, relative to the repository root,
	// that renders the target: only sources under it, or rendered by a
	// kustomization under it, are considered.
	AnnotationPath = "recommend-job.io/path"
)

// Metadata of live objects written by Argo CD and Flux, which narrow the
// search to what their Application or Kustomization renders.
const (
	// ArgoTrackingID is <app>:<group>/<kind>:<namespace>/<name>.
	ArgoTrackingID = "argocd.argoproj.io/tracking-id"
	// InstanceLabel names the Argo CD application under label tracking;
	// it is used only when an Application of that name is in the repository.
	InstanceLabel = "app.kubernetes.io/instance"
	// FluxNameLabel and FluxNamespaceLabel name the Flux Kustomization
	// that applied the object.
	FluxNameLabel      = "kustomize.toolkit.fluxcd.io/name"
	FluxNamespaceLabel = "kustomize.toolkit.fluxcd.io/namespace"
)

// ParseMode reads a mode as the render-mode setting or AnnotationMode
// spells it; "" is ModeAuto.
func ParseMode(s string) (Mode, error) {
	m := Mode(s)
	if err := m.check(); err != nil {
		return "", err
	}
	if m == "" {
		return ModeAuto, nil
	}
	return m, nil
}

// check refuses a mode that is none of the modes; "" stands for ModeAuto.
func (m Mode) check() error {
	switch m {
	case "", ModeAuto, ModeInPlace, ModePatch:
		return nil
	}
	return fmt.Errorf("mode %q: want auto, inplace or patch", string(m))
}

// Option tunes Apply.
type Option func(*options)

type options struct {
	mode        Mode
	paths       map[string]string
	maxFileSize int64
	charts      ChartFetcher
	repoURL     string
	keys        *helm.Finder
}

// WithMode sets the run's mode; a Change's own Mode overrides it.
func WithMode(m Mode) Option { return func(o *options) { o.mode = m } }

// WithPaths maps a namespace to the directory, relative to the repository
// root, that renders its workloads: the Path of the changes of that
// namespace that have none of their own.
func WithPaths(byNamespace map[string]string) Option {
	return func(o *options) { o.paths = byNamespace }
}

// ParsePaths reads namespace=path entries, as the render-paths setting
// holds them, for WithPaths.
func ParsePaths(entries []string) (map[string]string, error) {
	out := map[string]string{}
	for _, e := range entries {
		ns, p, ok := strings.Cut(e, "=")
		ns, p = strings.TrimSpace(ns), strings.TrimSpace(p)
		switch {
		case !ok || ns == "" || p == "":
			return nil, fmt.Errorf("%q: want namespace=path", e)
		case !filepath.IsLocal(filepath.FromSlash(p)):
			return nil, fmt.Errorf("%q: path %q is not inside the repository", e, p)
		case out[ns] != "":
			return nil, fmt.Errorf("%q: namespace %s is mapped twice", e, ns)
		}
		out[ns] = p
	}
	return out, nil
}
