package edits

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
	"github.com/recommend-job/recommend-job/internal/render/yamledit"
)

// SetUtilization splices the utilisation targets us into document doc
// of fe, an HPA's manifest or patch.
func SetUtilization(fe *File, doc int, us []plan.Utilization) (bool, error) {
	docs, err := fe.CurrentDocs()
	if err != nil {
		return false, err
	}
	changed, err := fe.Edit(docs, doc, func(p *yamledit.Planner, d *yaml.Node) error {
		root := yamledit.DocRoot(d)
		p.Step = yamledit.IndentStep(root)
		p.Scopes = []*yaml.Node{root}
		for _, u := range us {
			k, v, err := utilizationNode(root, u)
			if err != nil {
				return err
			}
			if want := strconv.Itoa(int(u.Percent)); v.Value != want {
				p.Replace(k, v, want)
			}
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("%s: %w", fe.Name, err)
	}
	return changed, nil
}

// utilizationNode finds the key and scalar that hold u in an HPA's
// manifest, checking that the metric there is the one u names: the
// manifest may list its metrics differently from the live object.
func utilizationNode(root *yaml.Node, u plan.Utilization) (k, v *yaml.Node, err error) {
	apiVersion, _ := yamledit.ScalarField(root, "apiVersion")
	_, spec, _ := yamledit.Lookup(root, "spec")
	if err := yamledit.UnsafeNode(spec, "spec"); err != nil {
		return nil, nil, err
	}
	if apiVersion == "autoscaling/v1" {
		if u.Index != 0 || u.Resource != corev1.ResourceCPU || u.Container != "" {
			return nil, nil, fmt.Errorf("%w: an autoscaling/v1 HorizontalPodAutoscaler has no metric %d of %s", repoindex.ErrUnsafeFile, u.Index, u.Resource)
		}
		k, v, _ := yamledit.Lookup(spec, "targetCPUUtilizationPercentage")
		if k == nil || v.Kind != yaml.ScalarNode {
			return nil, nil, fmt.Errorf("%w: sets no spec.targetCPUUtilizationPercentage (the default 80%%); set it to let it be adjusted", repoindex.ErrUnsafeFile)
		}
		return k, v, nil
	}
	_, metrics, _ := yamledit.Lookup(spec, "metrics")
	if metrics == nil || metrics.Kind != yaml.SequenceNode {
		return nil, nil, fmt.Errorf("%w: sets no spec.metrics (the default 80%% cpu); set them to let them be adjusted", repoindex.ErrUnsafeFile)
	}
	if u.Index >= len(metrics.Content) {
		return nil, nil, fmt.Errorf("%w: spec.metrics has no item %d, which the live object scales on", repoindex.ErrUnsafeFile, u.Index)
	}
	m := metrics.Content[u.Index]
	field := "resource"
	if u.Container != "" {
		field = "containerResource"
	}
	where := fmt.Sprintf("spec.metrics[%d].%s", u.Index, field)
	_, src, _ := yamledit.Lookup(m, field)
	name, _ := yamledit.ScalarField(src, "name")
	container, _ := yamledit.ScalarField(src, "container")
	if src == nil || name != string(u.Resource) || container != u.Container {
		return nil, nil, fmt.Errorf("%w: %s is not the %s utilization the live object scales on", repoindex.ErrUnsafeFile, where, u.Resource)
	}
	_, target, _ := yamledit.Lookup(src, "target")
	if typ, _ := yamledit.ScalarField(target, "type"); typ != "Utilization" {
		return nil, nil, fmt.Errorf("%w: %s.target is of type %q, not the utilization the live object scales on", repoindex.ErrUnsafeFile, where, typ)
	}
	k, v, dup := yamledit.Lookup(target, "averageUtilization")
	if k == nil || dup || v.Kind != yaml.ScalarNode {
		return nil, nil, fmt.Errorf("%w: %s.target.averageUtilization is not a single number", repoindex.ErrUnsafeFile, where)
	}
	return k, v, nil
}

// MetricsPatch is the body of a strategic-merge patch that sets the HPA's
// metrics: its list is replaced whole, so the patch holds every metric of
// base with the new targets us.
func MetricsPatch(base *yaml.Node, us []plan.Utilization) (func(step int) []string, error) {
	root := yaml.CopyYNode(yamledit.DocRoot(base))
	for _, u := range us {
		_, v, err := utilizationNode(root, u)
		if err != nil {
			return nil, err
		}
		v.Value, v.Tag, v.Style = strconv.Itoa(int(u.Percent)), "", 0
	}
	_, spec, _ := yamledit.Lookup(root, "spec")
	mk, metrics, _ := yamledit.Lookup(spec, "metrics")
	// The patch indents its list as the base does.
	wide := metrics.Column > mk.Column
	doc := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Value: "spec"},
		{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: "metrics"}, metrics}},
	}}
	encode := func(step int) ([]string, error) {
		var buf bytes.Buffer
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(step)
		if wide {
			enc.DefaultSeqIndent()
		}
		if err := enc.Encode(doc); err != nil {
			return nil, err
		}
		if err := enc.Close(); err != nil {
			return nil, err
		}
		return strings.Split(strings.TrimRight(buf.String(), "\n"), "\n"), nil
	}
	if _, err := encode(2); err != nil {
		return nil, fmt.Errorf("writing the HPA's metrics: %w", err)
	}
	return func(step int) []string {
		lines, _ := encode(step) // encodes as it did above, at another step
		return lines
	}, nil
}
