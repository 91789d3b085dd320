package repoindex

import "slices"

// AmbiguousError is an ErrAmbiguousTarget whose candidates are documents
// that each could define the target: a caller that can build them may
// tell them apart by what they render.
type AmbiguousError struct {
	// Candidates are the documents, in the order the error names them.
	Candidates []DocRef
	// Deployer names the deployer that narrowed the search to them ("" if
	// none), for the one a caller chooses.
	Deployer string
	err      error
}

// Error implements error.
func (e *AmbiguousError) Error() string { return e.err.Error() }

// Unwrap returns the error that names the candidates, which wraps
// ErrAmbiguousTarget.
func (e *AmbiguousError) Unwrap() error { return e.err }

// ambiguous is err, about candidates, as an AmbiguousError.
func ambiguous(err error, candidates []DocRef, deployer string) error {
	return &AmbiguousError{Candidates: slices.Clone(candidates), Deployer: deployer, err: err}
}

// Label names a candidate in a list of them: the directory of the
// kustomization that renders it, or its file when none does.
func (r DocRef) Label() string {
	if r.Chain != nil {
		return r.Chain.Root().Dir
	}
	return r.File
}

// DeployerOf returns the one deployer that builds exactly the
// kustomization rendering r (its path is that kustomization's directory)
// and gives r's object t's namespace and name; nil when there is none, or
// several.
func (idx *Index) DeployerOf(r DocRef, t Target) *Deployer {
	if r.Chain == nil {
		return nil
	}
	var found *Deployer
	for _, d := range idx.Deployers {
		if d.Chart || d.Path != r.Chain.Root().Dir || !idx.renders(d, r) {
			continue
		}
		if ns, name := idx.Identity(d, r); name != t.Name || ns != "" && ns != t.Namespace {
			continue
		}
		if found != nil {
			return nil
		}
		found = d
	}
	return found
}
