package helmsource

import (
	"context"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/recommend-job/recommend-job/internal/render/appset"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
)

// expandedSet is an ApplicationSet's document as appset expanded it: the
// text it was expanded from, the Applications it may generate, or why
// they are not known.
type expandedSet struct {
	text string
	apps []map[string]any
	err  error
}

// generatedApps returns the Applications the ApplicationSet of ref may
// generate, as appset expands it, within its budgets (the run's shared by
// every ApplicationSet the Sources read): those it generates, and the
// templates of the generators it cannot evaluate as written, whose
// parameters stand for any text. An ApplicationSet past a budget is an
// error that names its file: what it generates is not known. A document
// is expanded once for each text it has in the run.
func (a *Sources) generatedApps(ctx context.Context, ref repoindex.DocRef) ([]map[string]any, error) {
	doc, err := a.Edits.Doc(ref.File, ref.Doc)
	if err != nil {
		return nil, nil // not read, as decoded does not
	}
	// Written back with its anchors and aliases, which appset counts
	// before it decodes them.
	text, err := yaml.String(doc)
	if err != nil {
		return nil, nil
	}
	key := docKey{ref.File, ref.Doc}
	if e, ok := a.appSets[key]; ok && e.text == text {
		return e.apps, e.err
	}
	if a.appSets == nil {
		a.appSets = map[docKey]expandedSet{}
	}
	opts := appset.Options{RepoURL: a.RepoURL, Cluster: appset.Cluster{Name: a.ClusterName}, Limit: a.Limit, RunLeft: &a.appSetRun}
	x, err := appset.Expand(ctx, a.FS, opts, []byte(text), ref.File)
	e := expandedSet{text: text, err: err}
	for _, app := range x.Apps {
		e.apps = append(e.apps, app.Object)
	}
	e.apps = append(e.apps, x.AsWritten...)
	a.appSets[key] = e
	return e.apps, e.err
}

// docKey is a document of a file.
type docKey struct {
	file string
	doc  int
}
