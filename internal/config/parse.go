package config

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// parsePaths reads namespace=path entries, as the render-paths setting
// holds them, for render.WithPaths.
func parsePaths(entries []string) (map[string]string, error) {
	out := map[string]string{}
	for _, e := range entries {
		ns, p, ok := strings.Cut(e, "=")
		ns, p = strings.TrimSpace(ns), strings.TrimSpace(p)
		switch {
		case !ok || ns == "" || p == "":
			return nil, fmt.Errorf("%q: want namespace=path", e)
		case !filepath.IsLocal(filepath.FromSlash(p)):
			return nil, fmt.Errorf("%q: path %q is not inside the repository", e, p)
		case out[ns] != "":
			return nil, fmt.Errorf("%q: namespace %s is mapped twice", e, ns)
		}
		out[ns] = p
	}
	return out, nil
}

// parseSize reads a size, as max-file-size and the chart render limits
// hold it: a Kubernetes quantity ("4Mi", "500k") or a number of bytes; it
// must be positive.
func parseSize(s string) (int64, error) {
	q, err := resource.ParseQuantity(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q: want a size such as 4Mi or 4194304: %w", s, err)
	}
	if q.Sign() <= 0 {
		return 0, fmt.Errorf("%q: must be positive", s)
	}
	n, ok := q.AsInt64()
	if !ok {
		return 0, fmt.Errorf("%q: not a whole number of bytes", s)
	}
	return n, nil
}

// Auto is the value of a setting the job measures itself.
const Auto = "auto"

// parseAuto reads a duration that may be auto (zero): prometheus-step and
// prometheus-rate-window; a duration must be positive.
func parseAuto(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == Auto {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q: want auto or a duration such as 1m: %w", s, err)
	}
	if d <= 0 {
		return 0, fmt.Errorf("must be positive, got %v", d)
	}
	return d, nil
}
