package render

import (
	"fmt"

	"github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/render/helmsource"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
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
	charts      helmsource.ChartFetcher
	repoURL     string
	keys        *helm.Finder
	engine      helm.Engine
	deployers   []repoindex.DeployerObject
	cluster     string
	// again marks the second pass of Apply, for the changes the first
	// undid only because they shared a file with one that failed.
	again bool
	// stepHook, when a test sets it, is called after each step of Apply.
	stepHook stepHook
}

// WithMode sets the run's mode; a Change's own Mode overrides it.
func WithMode(m Mode) Option { return func(o *options) { o.mode = m } }

// WithPaths maps a namespace to the directory, relative to the repository
// root, that renders its workloads: the Path of the changes of that
// namespace that have none of their own.
func WithPaths(byNamespace map[string]string) Option {
	return func(o *options) { o.paths = byNamespace }
}

// WithMaxFileSize sets the size in bytes above which a file is not read:
// it is listed in Outcome.Skipped, a target it would define is reported
// with ErrFileTooLarge, and a kustomization that includes it is not built.
// The size is checked before the file is opened for reading. The default is
// DefaultMaxFileSize; n <= 0 removes the limit.
func WithMaxFileSize(n int64) Option { return func(o *options) { o.maxFileSize = n } }
