package render

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// groupDeployment is a Deployment of one container, app, asking for cpu.
func groupDeployment(name, cpu string) string {
	return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " + name + "\nspec:\n  template:\n    spec:\n      containers:\n" +
		"        - name: app\n          image: example/" + name + ":1\n          resources:\n            requests:\n              cpu: " + cpu + "\n"
}

func sessionChange(ns, name, cpu string) Change {
	return Change{Target: Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: name}, Container: "app",
		Requests: quantities(map[string]string{"cpu": cpu})}
}

// TestSessionGroupsStayApart applies two groups, one after the other, from
// one session: each finds the tree as the base has it, so the files both
// edit hold only the edits of the group that wrote them last, and the
// patches one group lists in a kustomization are not the other's.
func TestSessionGroupsStayApart(t *testing.T) {
	overlay := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: prod\nresources:\n  - ../../base\n"
	tests := []struct {
		name  string
		files map[string]string
		mode  Mode
		// groups are the changes of each group; want what each group's
		// tree holds in file, and not what it must not.
		groups      [][]Change
		file        string
		want, unwan []string
	}{
		{
			name:   "one file, two documents, in place",
			files:  map[string]string{"apps/two.yaml": groupDeployment("web", "500m") + "---\n" + groupDeployment("api", "500m")},
			mode:   ModeInPlace,
			groups: [][]Change{{sessionChange("prod", "web", "250m")}, {sessionChange("prod", "api", "125m")}},
			file:   "apps/two.yaml",
			want:   []string{"cpu: 250m", "cpu: 125m"},
			unwan:  []string{"cpu: 125m", "cpu: 250m"},
		},
		{
			name: "one kustomization, a patch each",
			files: map[string]string{
				"base/kustomization.yaml":          "resources:\n  - web.yaml\n  - api.yaml\n",
				"base/web.yaml":                    groupDeployment("web", "500m"),
				"base/api.yaml":                    groupDeployment("api", "500m"),
				"overlays/prod/kustomization.yaml": overlay,
			},
			mode:   ModePatch,
			groups: [][]Change{{sessionChange("prod", "web", "250m")}, {sessionChange("prod", "api", "125m")}},
			file:   "overlays/prod/kustomization.yaml",
			want:   []string{"recommend-job-deployment-web.yaml", "recommend-job-deployment-api.yaml"},
			unwan:  []string{"recommend-job-deployment-api.yaml", "recommend-job-deployment-web.yaml"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			root := t.TempDir()
			writeFiles(t, root, tt.files)
			var all []Change
			for _, g := range tt.groups {
				all = append(all, g...)
			}
			s, err := Prepare(ctx, root, ".", all, WithMode(tt.mode))
			if err != nil {
				t.Fatalf("Prepare() error = %v", err)
			}
			defer s.Close()
			for i, g := range tt.groups {
				out, err := s.Apply(ctx, g)
				if err != nil {
					t.Fatalf("group %d: Apply() error = %v", i, err)
				}
				for _, r := range out.Results {
					if r.Err != nil || !r.Changed {
						t.Fatalf("group %d: %s: changed %v, error %v", i, r.Change.Target, r.Changed, r.Err)
					}
				}
				data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(tt.file)))
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(data), tt.want[i]) || strings.Contains(string(data), tt.unwan[i]) {
					t.Errorf("group %d: %s =\n%s\nwant %q and not %q", i, tt.file, data, tt.want[i], tt.unwan[i])
				}
				for _, f := range out.Files {
					if strings.Contains(f, "recommend-job-") && !strings.Contains(f, g[0].Target.Name) {
						t.Errorf("group %d wrote %s, another group's patch", i, f)
					}
				}
			}
			if err := s.Restore(); err != nil {
				t.Fatalf("Restore() error = %v", err)
			}
			sameTree(t, root, tt.files)
		})
	}
}

// sameTree fails unless the tree at root holds exactly files.
func sameTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	seen := 0
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		want, ok := files[filepath.ToSlash(rel)]
		if !ok || want != string(data) {
			t.Errorf("after Restore, %s = %q, want %q (in the base: %v)", rel, data, want, ok)
		}
		seen++
		return nil
	})
	if err != nil || seen != len(files) {
		t.Errorf("after Restore, %d files (%v), want the base's %d", seen, err, len(files))
	}
}

// TestSessionIndexesOnce shows that a session's Applies read the index
// Prepare built: a manifest written after Prepare is not found by them,
// as it is by Apply, which indexes the tree it is given.
func TestSessionIndexesOnce(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"apps/web.yaml": groupDeployment("web", "500m")})
	late := sessionChange("prod", "late", "250m")
	s, err := Prepare(ctx, root, ".", []Change{sessionChange("prod", "web", "250m"), late})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	writeFiles(t, root, map[string]string{"apps/late.yaml": groupDeployment("late", "500m")})
	out, err := s.Apply(ctx, []Change{sessionChange("prod", "web", "250m")})
	if err != nil || !out.Results[0].Changed {
		t.Fatalf("Apply(web) = %+v, %v; want it changed", out, err)
	}
	out, err = s.Apply(ctx, []Change{late})
	if err != nil || !errors.Is(out.Results[0].Err, ErrTargetNotFound) {
		t.Fatalf("session Apply(late) = %+v, %v; want %v: the index is Prepare's", out, err, ErrTargetNotFound)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "apps", "web.yaml")); string(got) != groupDeployment("web", "500m") {
		t.Errorf("web.yaml after the second group = %q, want the base's", got)
	}
	if out, err := Apply(ctx, root, ".", []Change{late}); err != nil || !out.Results[0].Changed {
		t.Errorf("Apply(late) = %+v, %v; want it found and changed", out, err)
	}
}
