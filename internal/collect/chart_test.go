package collect

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
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
		"deepCopy": func(v any) (any, error) {
			b, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			var out any
			return out, json.Unmarshal(b, &out)
		},
		"dict": func(kv ...any) map[string]any {
			m := map[string]any{}
			for i := 0; i+1 < len(kv); i += 2 {
				m[fmt.Sprint(kv[i])] = kv[i+1]
			}
			return m
		},
		"get":      func(m map[string]any, k string) any { return m[k] },
		"set":      func(m map[string]any, k string, v any) map[string]any { m[k] = v; return m },
		"fail":     func(msg string) (string, error) { return "", errors.New(msg) },
		"toString": func(v any) string { return fmt.Sprint(v) },
		"int":      toInt,
		"atoi":     func(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n },
		"mul":      func(a, b any) int64 { return toInt(a) * toInt(b) },
		"div":      func(a, b any) int64 { return toInt(a) / toInt(b) },
		"max":      func(a, b any) int64 { return max(toInt(a), toInt(b)) },
		"regexMatch": func(re, s string) bool {
			return regexp.MustCompile(re).MatchString(s)
		},
		"regexFind": func(re, s string) string { return regexp.MustCompile(re).FindString(s) },
		"regexReplaceAll": func(re, s, repl string) string {
			return regexp.MustCompile(re).ReplaceAllString(s, repl)
		},
	}
}

// toInt converts a number, or a string holding one, as Sprig's int does.
func toInt(v any) int64 {
	switch n := v.(type) {
	case int:
		return int64(n)
	case int64:
		return n
	case float64:
		return int64(n)
	case string:
		i, _ := strconv.ParseInt(n, 10, 64)
		return i
	}
	return 0
}
