package helmsource

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/recommend-job/recommend-job/internal/tree"
)

// liveFields are the fields of a HelmRelease's spec that say which chart
// it installs and with which values: where the live object and the
// repository's differ there, the file is not what the cluster runs.
var liveFields = [][]string{
	{"chart", "spec", "chart"}, {"chart", "spec", "version"}, {"chart", "spec", "sourceRef", "kind"}, {"chart", "spec", "sourceRef", "name"},
	{"chart", "spec", "valuesFiles"}, {"chart", "spec", "valuesFile"}, {"chartRef", "kind"}, {"chartRef", "name"},
	{"values"}, {"valuesFrom"}, {"releaseName"}, {"targetNamespace"},
}

// checkLive refuses the HelmRelease r, as the repository renders it
// (obj), when the cluster's HelmRelease of that name, which is what Flux
// installs, names another chart or other values: the repository's file
// is stale, or not what deploys it, and editing it would not change the
// release. Where its chart comes from (a chart repository, say) does not
// matter: the values are still the file's.
func (a *Sources) checkLive(r *Release, obj map[string]any) error {
	live, ok := a.Index.LiveHelmRelease(r.Ref.Namespace, r.Ref.Key.Name)
	if !ok {
		return nil
	}
	for _, f := range liveFields {
		mine := normal(tree.Dig(obj, append([]string{"spec"}, f...)...))
		theirs := normal(tree.Dig(live.Object, append([]string{"spec"}, f...)...))
		if f[len(f)-1] == "version" && f[0] == "chart" {
			// The API server defaults a chart's version to "*".
			mine, theirs = orAny(mine), orAny(theirs)
		}
		if data, _ := json.Marshal(mine); bytes.Contains(data, []byte("${")) {
			// Flux's postBuild substitutes variables before applying it:
			// the live object cannot say the same.
			continue
		}
		if !reflect.DeepEqual(mine, theirs) {
			return fmt.Errorf("%s: %s says otherwise at spec.%s, and is what Flux installs: the repository's file is not what deploys the release", r, live.Name(), dotted(f))
		}
	}
	return nil
}

// normal is v as JSON would decode it, so that a file's integers and the
// cluster's numbers compare equal; an empty value is nil.
func normal(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(data, &out) != nil {
		return v
	}
	switch t := out.(type) {
	case map[string]any:
		if len(t) == 0 {
			return nil
		}
	case []any:
		if len(t) == 0 {
			return nil
		}
	case string:
		if t == "" {
			return nil
		}
	}
	return out
}

func dotted(f []string) string {
	s := f[0]
	for _, k := range f[1:] {
		s += "." + k
	}
	return s
}

// orAny is a chart version, "*" when none is set.
func orAny(v any) any {
	if v == nil {
		return "*"
	}
	return v
}
