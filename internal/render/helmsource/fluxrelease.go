package helmsource

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/strvals"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/recommend-job/recommend-job/internal/tree"
)

// FluxHelmRelease is what a HelmRelease says about its chart and values.
type FluxHelmRelease struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		ReleaseName     string `json:"releaseName"`
		TargetNamespace string `json:"targetNamespace"`
		Chart           *struct {
			Spec struct {
				Chart                    string   `json:"chart"`
				Version                  string   `json:"version"`
				ValuesFiles              []string `json:"valuesFiles"`
				ValuesFile               string   `json:"valuesFile"`
				IgnoreMissingValuesFiles bool     `json:"ignoreMissingValuesFiles"`
				SourceRef                struct {
					Kind      string `json:"kind"`
					Name      string `json:"name"`
					Namespace string `json:"namespace"`
				} `json:"sourceRef"`
			} `json:"spec"`
		} `json:"chart"`
		ChartRef *struct {
			Kind      string `json:"kind"`
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"chartRef"`
		Values        map[string]any     `json:"values"`
		PostRenderers []FluxPostRenderer `json:"postRenderers"`
		Install       struct {
			DisableSchemaValidation bool `json:"disableSchemaValidation"`
		} `json:"install"`
		Upgrade struct {
			DisableSchemaValidation bool `json:"disableSchemaValidation"`
		} `json:"upgrade"`
		ValuesFrom []struct {
			Kind       string `json:"kind"`
			Name       string `json:"name"`
			ValuesKey  string `json:"valuesKey"`
			TargetPath string `json:"targetPath"`
			Optional   bool   `json:"optional"`
		} `json:"valuesFrom"`
	} `json:"spec"`
}

// ReleaseName is helm-controller's name for the release: spec.releaseName,
// else the target namespace and the HelmRelease's name, shortened as
// helm-controller does above 53 characters.
func (hr *FluxHelmRelease) ReleaseName() string {
	name := hr.Spec.ReleaseName
	if name == "" {
		name = hr.Metadata.Name
		if hr.Spec.TargetNamespace != "" {
			name = hr.Spec.TargetNamespace + "-" + name
		}
	}
	if len(name) > 53 {
		sum := sha256.Sum256([]byte(name))
		name = name[:40] + "-" + hex.EncodeToString(sum[:])[:12]
	}
	return name
}

// ValuesFrom reads the values a HelmRelease takes from a ConfigMap the
// same build renders (as kustomize generates them from values files).
func ValuesFrom(kind, name, key, targetPath, ns string, out map[string]map[string]any) (Layer, error) {
	if key == "" {
		key = "values.yaml"
	}
	what := fmt.Sprintf("valuesFrom %s %s/%s key %s", kind, ns, name, key)
	if kind != "ConfigMap" {
		return Layer{}, fmt.Errorf("%s: only ConfigMaps the repository renders can be read", what)
	}
	// The ConfigMap of that very name, else the one kustomize generated
	// from it; of several generated, which one the release reads is not
	// the job's to choose.
	var cm map[string]any
	generated := map[string]map[string]any{}
	for id, obj := range out {
		n, _ := tree.Dig(obj, "metadata", "name").(string)
		switch {
		case !strings.HasPrefix(id, "/ConfigMap/"+ns+"/"):
		case n == name:
			cm = obj
		case GeneratedName(n, name):
			generated[n] = obj
		}
	}
	if cm == nil && len(generated) > 1 {
		return Layer{}, fmt.Errorf("%s: the build renders several ConfigMaps generated from it (%s)", what, strings.Join(slices.Sorted(maps.Keys(generated)), ", "))
	}
	for _, obj := range generated {
		if cm == nil {
			cm = obj
		}
	}
	if cm == nil {
		return Layer{}, fmt.Errorf("%s: the ConfigMap is not rendered with the HelmRelease", what)
	}
	text, ok := tree.Dig(cm, "data", key).(string)
	if !ok {
		return Layer{}, fmt.Errorf("%s: the ConfigMap has no such key", what)
	}
	if targetPath != "" {
		// As helm-controller sets it: a quoted value is a string.
		parse := strvals.ParseInto
		if len(text) >= 2 && (text[0] == '"' || text[0] == '\'') && text[len(text)-1] == text[0] {
			parse, text = strvals.ParseIntoString, text[1:len(text)-1]
		}
		vals := map[string]any{}
		if err := parse(targetPath+"="+text, vals); err != nil {
			return Layer{}, fmt.Errorf("%s: targetPath %q: %w", what, targetPath, err)
		}
		return Layer{What: what, Values: vals}, nil
	}
	var vals map[string]any
	if err := sigsyaml.Unmarshal([]byte(text), &vals); err != nil {
		return Layer{}, fmt.Errorf("%s: %w", what, err)
	}
	return Layer{What: what, Values: vals}, nil
}

// GeneratedName reports whether n is name with the hash suffix kustomize's
// generators add.
func GeneratedName(n, name string) bool {
	rest, ok := strings.CutPrefix(n, name+"-")
	return ok && len(rest) == 10 && !strings.ContainsAny(rest, "-.")
}
