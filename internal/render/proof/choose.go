package proof

import (
	"fmt"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/recommend-job/recommend-job/internal/kinds"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
	"github.com/recommend-job/recommend-job/internal/render/yamledit"
)

// Choose picks, among the candidates of an ambiguous target, the one that
// renders what the cluster runs: each is built as its deployer builds it
// (its kustomization, with the overrides of the one deployer that builds
// exactly that, or the file itself when no kustomization renders it),
// and its object's pod template print is compared with t's, the live
// one. The one candidate whose print is the same is returned, with a
// sentence saying why it was chosen; when none or several are, the error
// wraps amb and names each candidate with its first difference.
func (repo Repo) Choose(amb *repoindex.AmbiguousError, t repoindex.Target) (repoindex.DocRef, string, error) {
	matched, labels, said := AgainstLive(amb.Candidates, repoindex.DocRef.Label, func(r repoindex.DocRef) (kinds.PodPrint, error) {
		return repo.candidatePrint(r, t)
	}, t.PodPrint)
	switch len(matched) {
	case 0:
		return repoindex.DocRef{}, "", fmt.Errorf("%w; none of them builds the live pod template (%s)", amb, strings.Join(said, "; "))
	case 1:
		r := matched[0]
		if r.Deployer == "" {
			r.Deployer = amb.Deployer
		}
		return r, fmt.Sprintf("chosen among %s as the one whose build has the live pod template (%s)",
			strings.Join(labels, ", "), strings.Join(said, "; ")), nil
	}
	return repoindex.DocRef{}, "", fmt.Errorf("%w; %d of them build the live pod template (%s)", amb, len(matched), strings.Join(said, "; "))
}

// AgainstLive gives each candidate's print against live: the candidates whose
// print is live's, the labels of all, and what each said (its first
// difference, the error that kept it from a print, or "as live"), in the
// candidates' order.
func AgainstLive[T any](candidates []T, label func(T) string, print func(T) (kinds.PodPrint, error), live kinds.PodPrint) (matched []T, labels, said []string) {
	for _, c := range candidates {
		l := label(c)
		labels = append(labels, l)
		p, err := print(c)
		switch {
		case err != nil:
			said = append(said, l+": "+err.Error())
		case p.Diff(live) != "":
			said = append(said, l+": "+p.Diff(live))
		default:
			said = append(said, l+": as live")
			matched = append(matched, c)
		}
	}
	return matched, labels, said
}

// candidatePrint builds candidate r and returns the print of t's object
// in its output.
func (repo Repo) candidatePrint(r repoindex.DocRef, t repoindex.Target) (kinds.PodPrint, error) {
	group := repoindex.Group(t.APIVersion)
	var obj map[string]any
	if r.Chain == nil {
		f := repo.Index.Files[r.File]
		if f == nil {
			return "", fmt.Errorf("%s is not read", r.File)
		}
		docs, err := yamledit.ParseDocuments(f.Data)
		if err != nil {
			return "", fmt.Errorf("%s does not parse: %w", r.File, err)
		}
		if r.Doc >= len(docs) {
			return "", fmt.Errorf("%s has no document %d", r.File, r.Doc+1)
		}
		if err := docs[r.Doc].Decode(&obj); err != nil {
			return "", fmt.Errorf("%s: %w", r.File, err)
		}
	} else {
		out, err := repo.buildCandidate(r, t)
		if err != nil {
			return "", err
		}
		if obj = objectIn(out, group, t); obj == nil {
			return "", fmt.Errorf("its build has no %s", t)
		}
	}
	p, ok := kinds.PodPrintOf(group, t.Kind, obj)
	if !ok {
		return "", fmt.Errorf("%s has no pod template", t)
	}
	return p, nil
}

// buildCandidate builds the kustomization that renders r, as the one
// deployer that builds it does when there is one; a build that would
// reach the network or leave the repository is refused.
func (repo Repo) buildCandidate(r repoindex.DocRef, t repoindex.Target) (map[string]map[string]any, error) {
	k := r.Chain.Root()
	if err := repo.CheckExternal(k.Dir); err != nil {
		return nil, err
	}
	var out map[string]map[string]any
	var err error
	if d := repo.Index.DeployerOf(r, t); d != nil {
		out, err = repo.BuildAs(nil, d)
	} else {
		fsys := repoindex.ProofFS{FileSystem: filesys.MakeFsOnDisk(), Root: repo.Abs, Limit: repo.Limit}
		out, err = fsys.Build(filepath.Join(repo.Abs, filepath.FromSlash(k.Dir)))
	}
	if err != nil {
		return nil, fmt.Errorf("does not build: %w", err)
	}
	return out, nil
}

// objectIn is t's object in a build's output: of its group, kind and
// name, in its namespace or, failing that, in none.
func objectIn(out map[string]map[string]any, group string, t repoindex.Target) map[string]any {
	prefix := group + "/" + t.Kind + "/"
	if obj := out[prefix+t.Namespace+"/"+t.Name]; obj != nil {
		return obj
	}
	return out[prefix+"/"+t.Name]
}
