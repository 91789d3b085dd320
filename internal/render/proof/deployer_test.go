package proof

import (
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/recommend-job/recommend-job/internal/render/repoindex"
	"github.com/recommend-job/recommend-job/internal/render/yamledit"
)

// twoSources is an Argo CD Application with two sources, in the second
// document of its file.
const twoSources = `kind: ConfigMap
apiVersion: v1
metadata:
  name: other
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web
  namespace: argocd
spec:
  destination:
    namespace: %s
  sources:
  - repoURL: https://example.com/repo.git
    path: app
  - repoURL: https://example.com/repo.git
    path: extra
`

// TestRedecode covers reading a deployer again from its file's documents
// at another time, and SameDeployer telling one source of one object.
func TestRedecode(t *testing.T) {
	parse := func(dest string) []*yaml.Node {
		t.Helper()
		docs, err := yamledit.ParseDocuments([]byte(strings.Replace(twoSources, "%s", dest, 1)))
		if err != nil {
			t.Fatal(err)
		}
		return docs
	}
	before := parse("shop")
	ds := repoindex.DecodeDeployers(before[1], "argocd/app.yaml", "argocd/app.yaml", 1)
	if len(ds) != 2 {
		t.Fatalf("decoded %d sources, want 2", len(ds))
	}
	after := parse("prod")
	tests := []struct {
		name     string
		docs     []*yaml.Node
		d        *repoindex.Deployer
		wantPath string // "" for nil
		wantDest string
	}{
		{name: "the first source, edited", docs: after, d: ds[0], wantPath: "app", wantDest: "prod"},
		{name: "the second source, edited", docs: after, d: ds[1], wantPath: "extra", wantDest: "prod"},
		{name: "the document is gone", docs: after[:1], d: ds[1]},
		{name: "the document holds no deployer any more", docs: []*yaml.Node{before[0], before[0]}, d: ds[0]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Redecode(tt.docs, tt.d)
			switch {
			case tt.wantPath == "" && got != nil:
				t.Errorf("Redecode = %+v, want nil", got)
			case tt.wantPath == "":
			case got == nil:
				t.Errorf("Redecode = nil, want path %s", tt.wantPath)
			case got.Path != tt.wantPath || got.Destination != tt.wantDest || !SameDeployer(got, tt.d):
				t.Errorf("Redecode = path %s into %s (same %v), want path %s into %s, the same source", got.Path, got.Destination, SameDeployer(got, tt.d), tt.wantPath, tt.wantDest)
			}
		})
	}
	if SameDeployer(ds[0], ds[1]) {
		t.Error("two sources of one Application are the same deployer")
	}
	moved := *ds[0]
	moved.Doc = 0
	if SameDeployer(ds[0], &moved) {
		t.Error("deployers of two documents are the same deployer")
	}
}
