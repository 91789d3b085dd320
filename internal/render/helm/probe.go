package helm

import (
	"fmt"
	"math"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
)

// A probe is a quantity written at a candidate key so that, where it comes
// out in a render, it names the key. Its number is probeBase plus a small
// serial: ten digits that no real request or limit has. It is recognised
// by its digits, whatever unit the template writes after them or the
// quoting around them, so "7000000003m", 7000000003 and "7000000003Mi"
// are all probe 3.
const probeBase = 7_000_000_000

// probeText is how a probe comes out as a string: its digits and at most
// a two-letter unit.
var probeText = regexp.MustCompile(`^[0-9]{10}[A-Za-z]{0,2}$`)

// probes maps the probes of one render to their keys, and to the
// candidates that wrote them.
type probes struct {
	keys       []Path
	candidates []int
}

// add assigns the next probe to key, written for the candidate of that
// index, and returns its number.
func (p *probes) add(key Path, candidate int) int64 {
	p.keys = append(p.keys, key)
	p.candidates = append(p.candidates, candidate)
	return probeBase + int64(len(p.keys))
}

// probeDigits finds probe numbers in text such as an error message.
var probeDigits = regexp.MustCompile(`[0-9]{10}`)

// culprits returns the candidates whose probes an error message quotes:
// a template that rejects a value usually says which.
func (p *probes) culprits(err error) []int {
	var out []int
	for _, d := range probeDigits.FindAllString(err.Error(), -1) {
		n, _ := strconv.ParseInt(d, 10, 64)
		if n > probeBase && n <= probeBase+int64(len(p.keys)) {
			if c := p.candidates[n-probeBase-1]; !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	return out
}

// key returns the key of a rendered value, if it is one of the probes.
func (p *probes) key(v any) (Path, bool) {
	n, ok := probeNumber(v)
	if !ok || n <= probeBase || n > probeBase+int64(len(p.keys)) {
		return nil, false
	}
	return p.keys[n-probeBase-1], true
}

// probeNumber returns the number of a rendered value that looks like a
// probe: a quantity of ten digits and a unit, or a whole number.
func probeNumber(v any) (int64, bool) {
	switch t := v.(type) {
	case string:
		s := strings.TrimSpace(t)
		if !probeText.MatchString(s) {
			return 0, false
		}
		if _, err := resource.ParseQuantity(s); err != nil {
			return 0, false
		}
		n, err := strconv.ParseInt(strings.TrimRight(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"), 10, 64)
		return n, err == nil
	case float64:
		if t != math.Trunc(t) || t < 0 || t > math.MaxInt64/2 {
			return 0, false
		}
		return int64(t), true
	case int64:
		return t, true
	case int:
		return int64(t), true
	}
	return 0, false
}

// quantityUnit is the unit a quantity ends with: m, Mi, G.
var quantityUnit = regexp.MustCompile(`[A-Za-z]{1,2}$`)

// scalarProbe is the probe value for a scalar key that holds current: a
// number for a number, a string with current's unit for a quantity
// string (so that a template that adds nothing to it writes a valid
// quantity), and a bare string otherwise.
func scalarProbe(n int64, current any, isSet bool) any {
	switch c := current.(type) {
	case string:
		if _, err := resource.ParseQuantity(strings.TrimSpace(c)); err == nil {
			if unit := quantityUnit.FindString(strings.TrimSpace(c)); unit != "" {
				return fmt.Sprintf("%d%s", n, unit)
			}
		}
		return strconv.FormatInt(n, 10)
	default:
		if isSet {
			return n
		}
		return strconv.FormatInt(n, 10)
	}
}

// mappingProbeValues writes, under every candidate mapping, requests and
// limits of cpu and memory, each a probe for its key; and, where the
// mapping has no resources key, the same under resources, which templates
// read relative to a mapping they range over or enter with with. Parents
// go first, so that what a parent writes (P.requests.cpu) wins over a
// candidate below it; a candidate under a scalar, and a requests or
// limits that is not a mapping, are left alone.
func mappingProbeValues(values map[string]any, candidates []Path) (map[string]any, *probes) {
	out := deepCopyMap(values)
	ps := &probes{}
	isCandidate := map[string]bool{}
	for _, p := range candidates {
		isCandidate[p.String()] = true
	}
	ordered := make([]int, len(candidates))
	for i := range ordered {
		ordered[i] = i
	}
	slices.SortStableFunc(ordered, func(a, b int) int { return len(candidates[a]) - len(candidates[b]) })
	for _, i := range ordered {
		p := candidates[i]
		node := ensureMap(out, p)
		if node == nil {
			continue
		}
		writeResourceProbes(node, p, i, ps)
		nested := p.child(Key("resources"))
		if _, state := lookup(values, nested); state == absent && !isCandidate[nested.String()] {
			m := map[string]any{}
			node["resources"] = m
			writeResourceProbes(m, nested, i, ps)
		}
	}
	return out, ps
}

// writeResourceProbes writes requests and limits of cpu and memory into
// node, the mapping at p, as probes written for the candidate of that
// index.
func writeResourceProbes(node map[string]any, p Path, candidate int, ps *probes) {
	for _, section := range []string{"requests", "limits"} {
		m, ok := node[section].(map[string]any)
		if _, exists := node[section]; !exists {
			m, ok = map[string]any{}, true
			node[section] = m
		}
		if !ok {
			continue
		}
		m["cpu"] = fmt.Sprintf("%dm", ps.add(p.child(Key(section)).child(Key("cpu")), candidate))
		m["memory"] = fmt.Sprintf("%dMi", ps.add(p.child(Key(section)).child(Key("memory")), candidate))
	}
}

// scalarProbeValues sets every candidate scalar to a probe for itself.
func scalarProbeValues(values map[string]any, candidates []Path) (map[string]any, *probes) {
	out := deepCopyMap(values)
	ps := &probes{}
	for i, p := range candidates {
		current, state := lookup(values, p)
		if state == blocked {
			continue
		}
		next := probeBase + int64(len(ps.keys)) + 1
		if setPath(out, p, scalarProbe(next, current, state == present)) {
			ps.add(p, i)
		}
	}
	return out, ps
}

// valuesRead matches what a template reads of the values: .Values.a.b,
// $.Values.a.b, $root.Values.a.b.
var valuesRead = regexp.MustCompile(`\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)`)

// templateReads lists the values paths the templates of ch and its
// subcharts read, as paths of the release's values: a subchart's are
// under its name (or alias), its globals are the release's.
func templateReads(ch *chartv2.Chart) []Path {
	seen := map[string]bool{}
	var out []Path
	var walk func(c *chartv2.Chart, prefix Path)
	walk = func(c *chartv2.Chart, prefix Path) {
		for _, t := range c.Templates {
			for _, m := range valuesRead.FindAllStringSubmatch(string(t.Data), -1) {
				var p Path
				for _, k := range strings.Split(strings.TrimPrefix(m[1], "."), ".") {
					p = append(p, Key(k))
				}
				if p[0].Key != "global" {
					p = append(slices.Clone(prefix), p...)
				}
				if s := p.String(); !seen[s] {
					seen[s] = true
					out = append(out, p)
				}
			}
		}
		for _, d := range c.Dependencies() {
			walk(d, prefix.child(Key(d.Name())))
		}
	}
	walk(ch, Path{})
	return out
}

// definesTemplate matches a template that defines named templates.
var definesTemplate = regexp.MustCompile(`\{\{-?\s*define\s`)

// quotedFile matches a file name quoted in a template, as a template that
// includes another whole writes it: (print $.Template.BasePath
// "/configmap.yaml").
var quotedFile = regexp.MustCompile(`"[^"\n]*\.(?:yaml|yml|json|tpl|txt)"`)

// probeChart returns ch without the templates that render none of the
// containers of base, the release's own: no probe needs what they
// render, and they are where most probes break a render (a mapping given
// to b64enc in a Secret, to a field of a custom resource), each costing
// renders to find. Partials are kept, and so are templates that define
// named templates or that a template of their chart quotes by their path
// under templates/, as others use them. ch itself is returned when no
// template goes, else a copy: the loaded chart is shared.
func probeChart(ch *chartv2.Chart, base []podContainer) *chartv2.Chart {
	holds := map[string]bool{}
	for _, c := range base {
		holds[c.id.template] = true
	}
	// quoted holds, by path in the release's chart, the templates that a
	// template of their chart quotes, as "/x.yaml" or
	// "<chart>/templates/x.yaml".
	quoted := map[string]bool{}
	var scan func(c *chartv2.Chart, prefix string)
	scan = func(c *chartv2.Chart, prefix string) {
		for _, t := range c.Templates {
			for _, q := range quotedFile.FindAllString(string(t.Data), -1) {
				q = strings.Trim(q, `"`)
				if _, under, ok := strings.Cut(q, "templates/"); ok {
					q = under
				}
				quoted[prefix+"templates/"+strings.TrimPrefix(q, "/")] = true
			}
		}
		for _, d := range c.Dependencies() {
			scan(d, prefix+"charts/"+d.Name()+"/")
		}
	}
	scan(ch, "")
	keep := func(name string, t *common.File) bool {
		return holds[name] || quoted[name] || strings.HasPrefix(path.Base(t.Name), "_") || definesTemplate.Match(t.Data)
	}
	if !dropsTemplates(ch, "", keep) {
		return ch
	}
	out := cloneChart(ch)
	dropTemplates(out, "", keep)
	return out
}

// dropsTemplates reports whether keep refuses a template of ch or of its
// subcharts; prefix is where ch's files are in the release's chart.
func dropsTemplates(ch *chartv2.Chart, prefix string, keep func(name string, t *common.File) bool) bool {
	for _, t := range ch.Templates {
		if !keep(prefix+t.Name, t) {
			return true
		}
	}
	return slices.ContainsFunc(ch.Dependencies(), func(d *chartv2.Chart) bool {
		return dropsTemplates(d, prefix+"charts/"+d.Name()+"/", keep)
	})
}

// dropTemplates leaves out of ch, a copy, and of its subcharts the
// templates keep refuses.
func dropTemplates(ch *chartv2.Chart, prefix string, keep func(name string, t *common.File) bool) {
	ch.Templates = slices.DeleteFunc(slices.Clone(ch.Templates), func(t *common.File) bool { return !keep(prefix+t.Name, t) })
	for _, d := range ch.Dependencies() {
		dropTemplates(d, prefix+"charts/"+d.Name()+"/", keep)
	}
}

// missingTemplate reports whether a render failed for want of a template
// a probe chart left out: one the chart includes after all.
func missingTemplate(err error) bool {
	return strings.Contains(err.Error(), "no template ") || strings.Contains(err.Error(), " not defined")
}

// candidates are the keys probed in each phase.
type candidates struct {
	// mappings are every mapping of the values.
	mappings []Path
	// unsetMappings are every path, with its prefixes, that the templates
	// read and the values do not set.
	unsetMappings []Path
	// scalars are every string and number of the values.
	scalars []Path
	// unsetReads are the paths the templates read and the values do not
	// set, without those that are a prefix of another.
	unsetReads []Path
}

// findCandidates lists the candidate keys of a release's coalesced values.
func findCandidates(values map[string]any, reads []Path) candidates {
	c := candidates{mappings: mappingPaths(values), scalars: scalarPaths(values)}
	seen := map[string]bool{}
	for _, r := range reads {
		for i := 1; i <= len(r); i++ {
			_, state := lookup(values, r[:i])
			if state == blocked {
				break
			}
			if state == present {
				continue
			}
			q := slices.Clone(r[:i])
			if !seen[q.String()] {
				seen[q.String()] = true
				c.unsetMappings = append(c.unsetMappings, q)
			}
			if i == len(r) {
				c.unsetReads = append(c.unsetReads, q)
			}
		}
	}
	var leaves []Path
	for _, p := range c.unsetReads {
		if !slices.ContainsFunc(c.unsetReads, func(q Path) bool { return len(q) > len(p) && q.hasPrefix(p) }) {
			leaves = append(leaves, p)
		}
	}
	c.unsetReads = leaves
	return c
}
