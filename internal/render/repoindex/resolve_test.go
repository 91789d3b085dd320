package repoindex

import (
	"errors"
	"strings"
	"testing"
)

func TestChainTransform(t *testing.T) {
	base := &Kustomization{Dir: "base", NamePrefix: "b-"}
	mid := &Kustomization{Dir: "mid", Namespace: "inner", NameSuffix: "-m"}
	top := &Kustomization{Dir: "top", Namespace: "outer", NamePrefix: "t-", NameSuffix: "-t"}
	for _, tc := range []struct {
		name          string
		c             Chain
		ns, n         string
		wantNS, wantN string
	}{
		{"none", Chain{}, "a", "web", "a", "web"},
		// Inner layers first: t- + (b-web-m) + -t; the outermost namespace wins.
		{"three layers", Chain{base, mid, top}, "", "web", "outer", "t-b-web-m-t"},
		{"namespace kept when no layer sets one", Chain{base}, "shop", "web", "shop", "b-web"},
		{"inner namespace", Chain{base, mid}, "shop", "web", "inner", "b-web-m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns, n := tc.c.Transform(tc.ns, tc.n)
			if ns != tc.wantNS || n != tc.wantN {
				t.Errorf("transform(%q, %q) = %q, %q; want %q, %q", tc.ns, tc.n, ns, n, tc.wantNS, tc.wantN)
			}
		})
	}
}

func TestParseMarker(t *testing.T) {
	for _, tc := range []struct {
		comment, want string
		ok            bool
	}{
		{`# {"$recommend": "shop/web:app"}`, "shop/web:app", true},
		{`#{"$recommend":"a/b:c"} trailing words`, "a/b:c", true},
		{`# note {"$recommend": "x/y:z", "other": 1}`, "x/y:z", true},
		{`# {"$imagepolicy": "flux-system:web"}`, "", false},
		{`# $recommend without JSON`, "", false},
		{`# {"$recommend": 3}`, "", false},
		{`# {"$recommend": ""}`, "", false},
		{`# {"$recommend": "unterminated`, "", false},
	} {
		got, ok := ParseMarker(tc.comment)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseMarker(%q) = %q, %v; want %q, %v", tc.comment, got, ok, tc.want, tc.ok)
		}
	}
}

// TestHelmAdvice checks that only a target Helm installed, and that no
// file defines at all, is told to mark its values.
func TestHelmAdvice(t *testing.T) {
	base := errors.New("target not found")
	web := Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"}
	helm := web
	helm.Annotations = map[string]string{"meta.helm.sh/release-name": "shop"}
	for _, tc := range []struct {
		name   string
		target Target
		none   bool
		advice bool
	}{
		{"no Helm metadata", web, true, false},
		{"installed by Helm", helm, true, true},
		{"installed by Helm, but defined for another namespace", helm, false, false},
	} {
		err := HelmAdvice(base, Sought{Target: tc.target, Container: "app"}, tc.none)
		if !errors.Is(err, base) {
			t.Errorf("%s: %v does not wrap the error", tc.name, err)
		}
		if got := strings.Contains(err.Error(), `{"$recommend": "shop/web:app"}`); got != tc.advice {
			t.Errorf("%s: advice = %v, want %v: %v", tc.name, got, tc.advice, err)
		}
	}
}
