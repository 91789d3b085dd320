package markdown

import (
	"bytes"
	"compress/flate"
	"encoding/base64"
	"encoding/json"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// proposedPrefix starts the hidden line of a pull request body that
// records the values it proposes, so that a run can tell, once a person
// closed the pull request, whether its recommendations moved since.
const proposedPrefix = "<!-- recommend-job: proposed "

// maxProposedLength bounds that line (see MaxBodyLength). Values past it
// are not recorded, and a value not recorded counts as moved: a group of
// more than about a thousand changed values is not held by a person's
// closing.
const maxProposedLength = 12000

// maxProposedData bounds what a line inflates to when read: a body is
// anyone's to edit.
const maxProposedData = 1 << 20

// Proposed is the values a pull request proposes, by
// namespace/name/container/resource (and /limit for a limit).
type Proposed map[string]resource.Quantity

// ProposedOf returns the values p writes: the changed requests and limits
// of the rendered items.
func ProposedOf(p *plan.Plan) Proposed {
	out := Proposed{}
	for _, it := range p.Items {
		if it.Source != nil && it.Source.Error != "" {
			continue
		}
		for _, c := range it.Containers {
			for _, r := range c.Resources {
				if !r.Changed || r.Recommended == nil {
					continue
				}
				key := it.Namespace + "/" + it.Name + "/" + c.Name + "/" + string(r.Resource)
				out[key] = *r.Recommended
				if r.RecommendedLimit != nil {
					out[key+"/limit"] = *r.RecommendedLimit
				}
			}
		}
	}
	return out
}

// Line is the hidden line that records the values: "" when there are
// none. They are JSON, deflated (the names repeat) and base64-encoded, so
// that no name from the cluster can end the comment early.
func (v Proposed) Line() string {
	if len(v) == 0 {
		return ""
	}
	keys := slices.Sorted(maps.Keys(v))
	line := func(n int) string {
		values := make(map[string]string, n)
		for _, k := range keys[:n] {
			q := v[k]
			values[k] = q.String()
		}
		data, err := json.Marshal(values)
		if err != nil {
			return ""
		}
		var b bytes.Buffer
		w, _ := flate.NewWriter(&b, flate.BestCompression)
		if _, err := w.Write(data); err != nil || w.Close() != nil {
			return ""
		}
		return proposedPrefix + proposedDeflated + base64.RawURLEncoding.EncodeToString(b.Bytes()) + " -->"
	}
	// The most keys, in order, whose line fits.
	n := sort.Search(len(keys), func(n int) bool { return len(line(n+1)) > maxProposedLength })
	if n == 0 {
		return ""
	}
	return line(n)
}

// proposedDeflated starts a line whose values are deflated; a line
// without it holds them as plain JSON, as earlier versions wrote them.
const proposedDeflated = "z:"

// ParseProposed reads the values a pull request body records; nil when
// it records none, or not in a form the job wrote.
func ParseProposed(body string) Proposed {
	for _, line := range strings.Split(body, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), proposedPrefix)
		if !ok {
			continue
		}
		encoded, deflated := strings.CutPrefix(strings.TrimSuffix(rest, " -->"), proposedDeflated)
		data, err := base64.RawURLEncoding.DecodeString(encoded)
		if err != nil {
			return nil
		}
		if deflated {
			r := flate.NewReader(bytes.NewReader(data))
			data, err = io.ReadAll(io.LimitReader(r, maxProposedData+1))
			if err != nil || len(data) > maxProposedData {
				return nil
			}
		}
		var values map[string]string
		if json.Unmarshal(data, &values) != nil {
			return nil
		}
		out := Proposed{}
		for k, s := range values {
			q, err := resource.ParseQuantity(s)
			if err != nil {
				return nil
			}
			out[k] = q
		}
		return out
	}
	return nil
}

// Moved reports whether v moved beyond threshold (a fraction) from
// before: it holds a value before does not record, or one that differs
// from before's by more than threshold of it.
func (v Proposed) Moved(before Proposed, threshold float64) bool {
	for k, q := range v {
		old, ok := before[k]
		if !ok {
			return true
		}
		o, n := old.AsApproximateFloat64(), q.AsApproximateFloat64()
		if o == 0 {
			if n != 0 {
				return true
			}
			continue
		}
		if d := (n - o) / o; d > threshold || d < -threshold {
			return true
		}
	}
	return false
}
