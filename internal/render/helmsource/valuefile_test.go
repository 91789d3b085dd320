package helmsource

import (
	"strings"
	"testing"
)

// TestArgoValueFileOutsideRepository checks that a values file that
// climbs out of the repository is refused, as Argo CD refuses it, rather
// than read (and written) at the repository's root.
func TestArgoValueFileOutsideRepository(t *testing.T) {
	for _, vf := range []string{"../../../values.yaml", "/../values.yaml"} {
		files := map[string]string{
			"charts/web/Chart.yaml": "apiVersion: v2\nname: web\nversion: 0.1.0\n",
			"values.yaml":           "replicas: 9\n",
			"argocd/web.yaml":       application("web", "  source:\n    repoURL: "+thisRepo+"\n    path: charts/web\n    helm:\n      valueFiles: ['"+vf+"']\n"),
		}
		_, l, _, err := load(t, files, argoTarget, nil)
		if err == nil || !strings.Contains(err.Error(), "outside the repository root") {
			t.Errorf("valueFiles %s: loaded with layers %v, error %v; want a refusal, outside the repository root", vf, l.Layers, err)
		}
	}
}

func TestInRepository(t *testing.T) {
	tests := []struct{ in, want string }{
		{"charts/web/values.yaml", "charts/web/values.yaml"},
		{"/env/prod.yaml", "env/prod.yaml"},
		{"charts/web/../../env/prod.yaml", "env/prod.yaml"},
		{"charts/web/../../../x.yaml", ""},
		{"..", ""},
	}
	for _, tt := range tests {
		got, err := inRepository(tt.in)
		if got != tt.want || (err != nil) != (tt.want == "") {
			t.Errorf("inRepository(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}
