package collect

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/template"

	"sigs.k8s.io/yaml"
)

// chartDir is the Helm chart, relative to this package.
const chartDir = "../../charts/recommend-job"

// renderChartTemplate renders one template of the chart with its
// values.yaml and set merged over them, as `helm template` would for the
// release recommend-job in namespace ns. It implements the few Sprig
// functions the chart's helpers use; an unknown one fails the parse, and
// so the test.
func renderChartTemplate(t *testing.T, name, ns string, set map[string]any) []byte {
	t.Helper()
	values := map[string]any{}
	readYAML(t, filepath.Join(chartDir, "values.yaml"), &values)
	for k, v := range set {
		if m, ok := v.(map[string]any); ok {
			if base, ok := values[k].(map[string]any); ok {
				for kk, vv := range m {
					base[kk] = vv
				}
				continue
			}
		}
		values[k] = v
	}
	chart := map[string]any{}
	readYAML(t, filepath.Join(chartDir, "Chart.yaml"), &chart)

	root := template.New("chart").Option("missingkey=zero")
	root.Funcs(sprigSubset(root))
	for _, f := range []string{"templates/_helpers.tpl", "templates/" + name} {
		b, err := os.ReadFile(filepath.Join(chartDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := root.New(f).Parse(string(b)); err != nil {
			t.Fatalf("parse %s: %v", f, err)
		}
	}
	data := map[string]any{
		"Values":  values,
		"Release": map[string]any{"Name": "recommend-job", "Namespace": ns, "Service": "Helm"},
		"Chart":   map[string]any{"Name": chart["name"], "Version": chart["version"], "AppVersion": chart["appVersion"]},
	}
	var out bytes.Buffer
	if err := root.ExecuteTemplate(&out, "templates/"+name, data); err != nil {
		t.Fatalf("render %s: %v", name, err)
	}
	// Helm prints a missing value as nothing.
	return bytes.ReplaceAll(out.Bytes(), []byte("<no value>"), nil)
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// sprigSubset is the part of Sprig and Helm's functions the chart uses,
// with their argument order.
func sprigSubset(root *template.Template) template.FuncMap {
	toYAML := func(v any) string {
		b, err := yaml.Marshal(v)
		if err != nil {
			return ""
		}
		return strings.TrimSuffix(string(b), "\n")
	}
	indent := func(n int, s string) string {
		pad := strings.Repeat(" ", n)
		return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
	}
	return template.FuncMap{
		"include": func(name string, data any) (string, error) {
			var b bytes.Buffer
			err := root.ExecuteTemplate(&b, name, data)
			return b.String(), err
		},
		"indent":     indent,
		"nindent":    func(n int, s string) string { return "\n" + indent(n, s) },
		"toYaml":     toYAML,
		"toJson":     func(v any) string { b, _ := json.Marshal(v); return string(b) },
		"quote":      func(v any) string { return fmt.Sprintf("%q", fmt.Sprint(v)) },
		"trunc":      func(n int, s string) string { return s[:min(n, len(s))] },
		"trimSuffix": func(suffix, s string) string { return strings.TrimSuffix(s, suffix) },
		"replace":    func(old, new, s string) string { return strings.ReplaceAll(s, old, new) },
		"default": func(def any, given ...any) any {
			if len(given) == 0 || given[0] == nil || given[0] == "" || given[0] == false {
				return def
			}
			return given[0]
		},
		"list":   func(v ...any) []any { return v },
		"append": func(l []any, v any) []any { return append(slices.Clone(l), v) },
		"uniq": func(l []any) []any {
			var out []any
			for _, v := range l {
				if !slices.Contains(out, v) {
					out = append(out, v)
				}
			}
			return out
		},
		"fromJsonArray": func(s string) []any {
			var out []any
			_ = json.Unmarshal([]byte(s), &out)
			return out
		},
		"sha256sum": func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) },
	}
}
