package helm

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
)

// checkSchemas checks values against the values.schema.json of the chart
// and of each subchart that has values, as helm-controller does, and
// returns the schemas that could not be checked: one whose $ref cannot be
// fetched (a cluster without egress) is left out, not a failure, since the
// proof compares renders before and after anyway. Values that break a
// schema fail as they do in Helm.
func checkSchemas(ch *chartv2.Chart, values common.Values) ([]string, error) {
	var unchecked []string
	var broken strings.Builder
	var walk func(ch *chartv2.Chart, values common.Values)
	walk = func(ch *chartv2.Chart, values common.Values) {
		if ch.Schema != nil {
			err := util.ValidateAgainstSingleSchema(values, ch.Schema)
			var invalid util.JSONSchemaValidationError
			switch {
			case err == nil:
			case errors.As(err, &invalid):
				fmt.Fprintf(&broken, "%s:\n%s", ch.Name(), err)
			default:
				unchecked = append(unchecked, fmt.Sprintf("the values schema of chart %s: %v", ch.Name(), err))
			}
		}
		for _, sub := range ch.Dependencies() {
			if v, ok := values[sub.Name()].(map[string]any); ok {
				walk(sub, v)
			}
		}
	}
	walk(ch, values)
	if broken.Len() > 0 {
		return nil, fmt.Errorf("values don't meet the specifications of the schema(s) in the following chart(s):\n%s", broken.String())
	}
	return unchecked, nil
}

// noteUnchecked records schemas a render of the chart could not check.
func (c *Chart) noteUnchecked(unchecked []string) {
	if len(unchecked) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, u := range unchecked {
		if !slices.Contains(c.unchecked, u) {
			c.unchecked = append(c.unchecked, u)
		}
	}
}

// SchemaUnchecked says which values schemas of the chart its renders could
// not check, and why (a $ref that could not be fetched); nil when every
// render checked them all.
func (c *Chart) SchemaUnchecked() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.unchecked)
}
