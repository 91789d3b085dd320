package config

import (
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// configurationDoc is the page that holds the settings table.
const configurationDoc = "../../docs/configuration.md"

// TestEveryKeyIsDocumentedAndSettable keeps the configuration reference in
// docs/configuration.md, the flags and the environment variables in step
// with the settings list: each key must have a row in the settings table,
// and setting it by flag or by environment variable must reach the Config
// field of the same name.
func TestEveryKeyIsDocumentedAndSettable(t *testing.T) {
	documented := documentedKeys(t)
	fields := configFields(t)
	for _, s := range settings {
		t.Run(s.key, func(t *testing.T) {
			if !documented[s.key] {
				t.Errorf("%s has no row for %q in its settings table", configurationDoc, s.key)
			}
			field, ok := fields[s.key]
			if !ok {
				t.Fatalf("Config has no field tagged %q", s.key)
			}
			value, want := sampleValue(t, s.value)
			env := EnvPrefix + "_" + strings.ToUpper(strings.ReplaceAll(s.key, "-", "_"))

			for _, via := range []string{"flag", "env"} {
				args := requiredArgs(s.key)
				if via == "flag" {
					args = append(args, "--"+s.key+"="+value)
				} else {
					t.Setenv(env, value)
				}
				cfg, err := Parse(args, io.Discard)
				if err != nil && !strings.Contains(err.Error(), s.key+":") {
					t.Fatalf("set by %s: Parse() error = %v", via, err)
				}
				if cfg == nil {
					// The sample value was refused, naming the key: the key is
					// settable, and validated.
					continue
				}
				if got := fmt.Sprint(reflect.ValueOf(cfg).Elem().FieldByIndex(field.Index).Interface()); got != want {
					t.Errorf("set by %s to %q: field %s = %q, want %q", via, value, field.Name, got, want)
				}
				os.Unsetenv(env)
			}
		})
	}
}

// TestEveryDocumentedKeyIsASetting is the other way round: a row of the
// settings table names a key the job accepts, so the page documents no
// setting that was renamed or removed.
func TestEveryDocumentedKeyIsASetting(t *testing.T) {
	known := map[string]bool{}
	for _, s := range settings {
		known[s.key] = true
	}
	for key := range documentedKeys(t) {
		if !known[key] {
			t.Errorf("%s documents %q, which is no setting", configurationDoc, key)
		}
	}
}

// documentedKeys reads the first column of the settings table of
// docs/configuration.md: the table whose header is "| key | default |
// meaning |", down to its first line that is not a row.
func documentedKeys(t *testing.T) map[string]bool {
	t.Helper()
	doc, err := os.ReadFile(configurationDoc)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	in := false
	for _, line := range strings.Split(string(doc), "\n") {
		switch {
		case strings.HasPrefix(line, "| key | default | meaning |"):
			in = true
		case in && strings.HasPrefix(line, "| --- |"):
		case in && strings.HasPrefix(line, "|"):
			cell, _, _ := strings.Cut(strings.TrimPrefix(line, "|"), "|")
			key := strings.Trim(strings.TrimSpace(cell), "`")
			if keys[key] {
				t.Errorf("%s documents %q twice", configurationDoc, key)
			}
			keys[key] = true
		case in:
			in = false
		}
	}
	if len(keys) == 0 {
		t.Fatalf("%s has no settings table (a header \"| key | default | meaning |\")", configurationDoc)
	}
	return keys
}

// requiredArgs satisfies the required keys other than key.
func requiredArgs(key string) []string {
	var args []string
	if key != "prometheus-url" {
		args = append(args, "--prometheus-url=http://prometheus.example:9090")
	}
	if key != "git-url" {
		args = append(args, "--git-url=https://git.example/repo.git")
	}
	return args
}

// sampleValue is a non-default value for a setting, as text and as the
// field prints it.
func sampleValue(t *testing.T, def any) (string, string) {
	t.Helper()
	switch d := def.(type) {
	case bool:
		return fmt.Sprint(!d), fmt.Sprint(!d)
	case time.Duration:
		v := d + 90*time.Minute
		return v.String(), v.String()
	case int:
		return fmt.Sprint(d + 3), fmt.Sprint(d + 3)
	case float64:
		return fmt.Sprint(d / 2), fmt.Sprint(d / 2)
	case []string:
		return "a,b", "[a b]"
	case string:
		return "http://sample.example/value", "http://sample.example/value"
	default:
		t.Fatalf("no sample for a %T setting", def)
		return "", ""
	}
}

func configFields(t *testing.T) map[string]reflect.StructField {
	t.Helper()
	out := map[string]reflect.StructField{}
	var walk func(typ reflect.Type, index []int)
	walk = func(typ reflect.Type, index []int) {
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			f.Index = append(append([]int(nil), index...), i)
			tag := strings.Split(f.Tag.Get("mapstructure"), ",")[0]
			switch {
			case tag == ",squash" || (tag == "" && f.Anonymous):
				walk(f.Type, f.Index)
			case tag != "":
				out[tag] = f
			}
		}
	}
	walk(reflect.TypeOf(Config{}), nil)
	return out
}
