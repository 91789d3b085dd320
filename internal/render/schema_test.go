package render

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestApplySchemaRefUnreachable renders the app-template case with a
// values schema whose $ref points at a loopback port where nothing
// listens, as app-template's point at the internet from a cluster without
// egress: the values are written and proved all the same, and the result
// names the schema that went unchecked.
func TestApplySchemaRefUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	unreachable := "http://" + l.Addr().String() + "/container.json"
	l.Close()

	base := filepath.Join("testdata", "helm-app-template")
	spec := readSpec(t, filepath.Join(base, "changes.yaml"))
	dir := t.TempDir()
	copyTree(t, filepath.Join(base, "original"), dir)
	schema := `{"type": "object", "properties": {"controllers": {"type": "object", "additionalProperties": {"$ref": "` + unreachable + `"}}}}`
	if err := os.WriteFile(filepath.Join(dir, "charts", "app-template", "values.schema.json"), []byte(schema), 0o644); err != nil {
		t.Fatal(err)
	}
	var changes []Change
	for _, g := range spec.Changes {
		changes = append(changes, g.change())
	}
	out, err := Apply(context.Background(), dir, spec.Path, changes)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	for i, r := range out.Results {
		if r.Err != nil || !r.Changed {
			t.Errorf("change %d: changed %v, err %v; want it written", i, r.Changed, r.Err)
			continue
		}
		if r.Helm == nil || len(r.Helm.SchemaUnchecked) == 0 || !strings.Contains(strings.Join(r.Helm.SchemaUnchecked, "\n"), unreachable) {
			t.Errorf("change %d: helm %+v, want the unchecked schema naming %s", i, r.Helm, unreachable)
		}
	}
	got, err := os.ReadFile(filepath.Join(dir, "apps", "media", "atuin", "helmrelease.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(base, "expected", "apps", "media", "atuin", "helmrelease.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("helmrelease.yaml:\n%s\nwant:\n%s", got, want)
	}
}

// TestApplyDisableSchemaValidation: values that break the chart's schema
// fail the release, unless its HelmRelease disables schema validation, as
// helm-controller then does not check them either.
func TestApplyDisableSchemaValidation(t *testing.T) {
	base := filepath.Join("testdata", "helm-app-template")
	spec := readSpec(t, filepath.Join(base, "changes.yaml"))
	var changes []Change
	for _, g := range spec.Changes {
		changes = append(changes, g.change())
	}
	for _, disable := range []bool{false, true} {
		dir := t.TempDir()
		copyTree(t, filepath.Join(base, "original"), dir)
		// port is 8888 in the values: not a string.
		schema := `{"type": "object", "properties": {"port": {"type": "string"}}}`
		if err := os.WriteFile(filepath.Join(dir, "charts", "app-template", "values.schema.json"), []byte(schema), 0o644); err != nil {
			t.Fatal(err)
		}
		if disable {
			release := filepath.Join(dir, "apps", "media", "atuin", "helmrelease.yaml")
			data, err := os.ReadFile(release)
			if err != nil {
				t.Fatal(err)
			}
			data = []byte(strings.Replace(string(data), "  interval: 1h\n", "  interval: 1h\n  upgrade:\n    disableSchemaValidation: true\n", 1))
			if err := os.WriteFile(release, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		out, err := Apply(context.Background(), dir, spec.Path, changes)
		if err != nil {
			t.Fatalf("Apply: %v", err)
		}
		r := out.Results[0]
		switch {
		case disable && (r.Err != nil || !r.Changed):
			t.Errorf("disableSchemaValidation: changed %v, err %v; want it written", r.Changed, r.Err)
		case !disable && (r.Err == nil || !strings.Contains(r.Err.Error(), "values don't meet the specifications of the schema")):
			t.Errorf("schema checked: changed %v, err %v; want the schema's refusal", r.Changed, r.Err)
		}
	}
}
