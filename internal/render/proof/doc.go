// Package proof builds what an edit of the repository renders, before and
// after it, and tells whether the outputs differ by the changes' values
// alone: the kustomizations that render an edited target, the other
// environments that read an edited file, and a deployer's path built as
// that deployer builds it (its overrides, namespace and postBuild
// substitution).
package proof

import (
	"cmp"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/recommend-job/recommend-job/internal/render/repoindex"
)

// Repo is the repository a proof builds: its index, its root as an
// absolute path without symlinks, and the size above which its files are
// not read (<= 0: no limit).
type Repo struct {
	Index *repoindex.Index
	Abs   string
	Limit int64
}

// sortedNames are the resources of l in the order of their names.
func sortedNames(l corev1.ResourceList) []corev1.ResourceName {
	return slices.SortedFunc(maps.Keys(l), cmp.Compare)
}
