package helm

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
)

// checkSchemas checks values against the values.schema.json of the chart
// and of each subchart that has values, as helm-controller does, and
// returns the schemas that could not be checked: one whose $ref leads out
// of its chart is left out, not a failure, since the proof compares
// renders before and after anyway. Values that break a schema fail as they
// do in Helm.
func checkSchemas(ch *chartv2.Chart, values common.Values) ([]string, error) {
	var unchecked []string
	var broken strings.Builder
	var walk func(ch *chartv2.Chart, values common.Values)
	walk = func(ch *chartv2.Chart, values common.Values) {
		if ch.Schema != nil {
			err := validateSchema(ch, values)
			var invalid invalidValues
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

// schemaURL is where a chart's values schema stands for its $refs, as in
// Helm: a relative $ref names a file of the chart.
const schemaURL = "file:///values.schema.json"

// invalidValues is the error of values that break a schema.
type invalidValues struct{ err error }

func (e invalidValues) Error() string {
	// As Helm says it: without the schema's address, a line after.
	return strings.TrimPrefix(e.err.Error(), "jsonschema validation failed with '"+schemaURL+"#'\n") + "\n"
}

// validateSchema checks values against the values schema of ch as Helm
// does, but resolves $refs only inside the chart: the schema is the
// chart's author's, and the job neither fetches what it points to nor
// reads the job's own files for it, as Helm's validation would
// (file:// from the machine, http from anywhere). A $ref to a URN is
// taken as any value, as Helm takes one it cannot resolve.
func validateSchema(ch *chartv2.Chart, values common.Values) error {
	schema, err := jsonschema.UnmarshalJSON(bytes.NewReader(ch.Schema))
	if err != nil {
		return err
	}
	compiler := jsonschema.NewCompiler()
	compiler.UseLoader(chartFiles{ch})
	if err := compiler.AddResource(schemaURL, schema); err != nil {
		return err
	}
	validator, err := compiler.Compile(schemaURL)
	if err != nil {
		return err
	}
	if err := validator.Validate(values.AsMap()); err != nil {
		return invalidValues{err}
	}
	return nil
}

// chartFiles loads the $refs of a chart's values schema from the chart's
// own files, and nothing else.
type chartFiles struct{ ch *chartv2.Chart }

// Load implements jsonschema.URLLoader.
func (l chartFiles) Load(ref string) (any, error) {
	u, err := url.Parse(ref)
	if err != nil {
		return nil, fmt.Errorf("the $ref %q: %w", ref, err)
	}
	switch u.Scheme {
	case "urn":
		return true, nil
	case "file":
		name := strings.TrimPrefix(u.Path, "/")
		for _, f := range l.ch.Files {
			if f != nil && f.Name == name && u.Host == "" {
				return jsonschema.UnmarshalJSON(bytes.NewReader(f.Data))
			}
		}
		return nil, fmt.Errorf("the $ref %s is not a file of the chart: not read", ref)
	}
	return nil, fmt.Errorf("the $ref %s leads out of the chart: not fetched", ref)
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
