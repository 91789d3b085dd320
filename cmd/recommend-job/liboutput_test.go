package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// TestLibraryOutputIsLogged builds, twice, a kustomization with a field
// kustomize deprecates: kustomize prints its warning on os.Stderr itself,
// and the job's stderr must still be JSON lines, the warning among them
// once.
func TestLibraryOutputIsLogged(t *testing.T) {
	var logged bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewJSONHandler(&logged, nil)))

	fs := filesys.MakeFsInMemory()
	for name, content := range map[string]string{
		"app/kustomization.yaml": "resources: [web.yaml]\npatchesStrategicMerge: [patch.yaml]\n",
		"app/web.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  a: \"1\"\n",
		"app/patch.yaml":         "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  a: \"2\"\n",
	} {
		if err := fs.WriteFile(name, []byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	restore := logLibraryOutput()
	for range 2 {
		if _, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "app"); err != nil {
			restore()
			t.Fatal(err)
		}
	}
	restore()

	var texts []string
	for line := range strings.Lines(logged.String()) {
		var entry struct{ Level, Msg, Text string }
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatalf("stderr line %q is not JSON: %v", line, err)
		}
		if entry.Msg == "printed by a library" && entry.Level == "WARN" {
			texts = append(texts, entry.Text)
		}
	}
	if len(texts) != 1 || !strings.Contains(texts[0], "'patchesStrategicMerge' is deprecated") {
		t.Errorf("library lines logged = %q, want kustomize's patchesStrategicMerge warning once", texts)
	}
}

func TestForwardLinesBounded(t *testing.T) {
	var logged bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewJSONHandler(&logged, nil)))
	forwardLines(strings.NewReader("a\nb\n\na\nc\nd\n"), 2)
	got := strings.Count(logged.String(), `"msg":"printed by a library"`)
	if got != 2 || !strings.Contains(logged.String(), "the rest is dropped") {
		t.Errorf("logged:\n%s\nwant a and b, then that the rest is dropped", logged.String())
	}
}
