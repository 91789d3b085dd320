package kinds

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// PodPrint is a pod template's fingerprint: what tells one build of a
// workload from another beyond its resources. It holds each container's
// and init container's image, command, args and literal env values (env
// from valueFrom is left out), and the volumes' names, in a canonical
// order: two templates that differ only in resources, or in the order of
// their containers, env or volumes, have equal prints. The live workload's
// print is compared with each candidate source's built object when
// several could define it. "" means unknown.
type PodPrint string

// entry is one fact of a print: "container app image" and its value.
type entry [2]string

// PodPrintOf returns the print of the pod template of obj, an object of
// group and kind as decoded from YAML or JSON, from where PodSpecPaths
// says it keeps its pod spec; ok is false when obj has none.
func PodPrintOf(group, kind string, obj map[string]any) (PodPrint, bool) {
	for _, path := range PodSpecPaths(group, kind) {
		if spec, found := dig(obj, path).(map[string]any); found {
			return PodSpecPrint(spec), true
		}
	}
	return "", false
}

// PodSpecPrint returns the print of a pod spec.
func PodSpecPrint(spec map[string]any) PodPrint {
	var entries []entry
	for _, list := range []struct{ field, what string }{{"containers", "container"}, {"initContainers", "init container"}} {
		items, _ := spec[list.field].([]any)
		var named []map[string]any
		for _, item := range items {
			if c, ok := item.(map[string]any); ok {
				named = append(named, c)
			}
		}
		slices.SortStableFunc(named, func(x, y map[string]any) int { return strings.Compare(text(x["name"]), text(y["name"])) })
		for _, c := range named {
			entries = append(entries, containerEntries(list.what+" "+text(c["name"]), c)...)
		}
	}
	var volumes []string
	items, _ := spec["volumes"].([]any)
	for _, item := range items {
		if v, ok := item.(map[string]any); ok {
			volumes = append(volumes, text(v["name"]))
		}
	}
	slices.Sort(volumes)
	for _, v := range volumes {
		entries = append(entries, entry{"volume " + v, ""})
	}
	data, _ := json.Marshal(entries) // strings only: cannot fail
	return PodPrint(data)
}

// containerEntries are the facts of container c, named key: that it is
// there, then its image, command, args and literal env values by name.
func containerEntries(key string, c map[string]any) []entry {
	out := []entry{{key, ""}, {key + " image", text(c["image"])}}
	for _, field := range []string{"command", "args"} {
		if list, _ := c[field].([]any); len(list) > 0 {
			words := make([]string, len(list))
			for i, w := range list {
				words[i] = text(w)
			}
			data, _ := json.Marshal(words)
			out = append(out, entry{key + " " + field, string(data)})
		}
	}
	env := map[string]string{}
	items, _ := c["env"].([]any)
	for _, item := range items {
		e, _ := item.(map[string]any)
		if e == nil || e["valueFrom"] != nil {
			continue
		}
		// A name set twice takes its last value, as the kubelet does.
		env[text(e["name"])] = text(e["value"])
	}
	names := make([]string, 0, len(env))
	for n := range env {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		out = append(out, entry{key + " env " + n, env[n]})
	}
	return out
}

// Diff describes the first difference between p, a candidate source's
// print, and live, the live workload's, such as
// "container app image nginx:1.27, live nginx:1.26"; "" when they are
// equal. A print that does not decode differs as a whole.
func (p PodPrint) Diff(live PodPrint) string {
	if p == live {
		return ""
	}
	var mine, theirs []entry
	if json.Unmarshal([]byte(p), &mine) != nil || json.Unmarshal([]byte(live), &theirs) != nil {
		return "the pod template cannot be compared"
	}
	liveByKey := map[string]string{}
	for _, e := range theirs {
		liveByKey[e[0]] = e[1]
	}
	mineByKey := map[string]bool{}
	for _, e := range mine {
		mineByKey[e[0]] = true
		v, ok := liveByKey[e[0]]
		switch {
		case !ok:
			return strings.TrimSpace(e[0]+" "+e[1]) + ", live has none"
		case v != e[1]:
			return fmt.Sprintf("%s %s, live %s", e[0], shown(e[1]), shown(v))
		}
	}
	for _, e := range theirs {
		if !mineByKey[e[0]] {
			if e[1] == "" {
				return "no " + e[0] + ", live has one"
			}
			return fmt.Sprintf("no %s, live %s", e[0], e[1])
		}
	}
	return "" // the same facts, written differently
}

// shown is a value as a difference names it: "" quoted.
func shown(v string) string {
	if v == "" {
		return `""`
	}
	return v
}

// text is a scalar of decoded YAML or JSON as a string.
func text(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	}
	return fmt.Sprint(v)
}

// dig returns the value at path in obj, or nil.
func dig(obj map[string]any, path []string) any {
	var cur any = obj
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}
