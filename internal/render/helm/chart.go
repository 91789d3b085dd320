package helm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
)

// NewChart loads a chart from its files, named by their path in the chart
// (Chart.yaml, templates/deployment.yaml, charts/db/Chart.yaml), as Helm
// loads a chart directory. Source says where the files came from.
func NewChart(source string, files map[string][]byte) (*Chart, error) {
	buffered := make([]*archive.BufferedFile, 0, len(files))
	for _, name := range slices.Sorted(maps.Keys(files)) {
		buffered = append(buffered, &archive.BufferedFile{Name: name, Data: files[name]})
	}
	c, err := loader.LoadFiles(buffered)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", source, err)
	}
	return &Chart{Name: c.Metadata.Name, Version: c.Metadata.Version, Source: source, Digest: digestFiles(files), chart: c}, nil
}

// digestFiles is the hex sha256 of the files in name order, each name and
// length written before its content so that no two sets of files give the
// same stream: the same digest LoadDir gives the same files.
func digestFiles(files map[string][]byte) string {
	h := sha256.New()
	for _, name := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(files[name]))
		h.Write(files[name])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// WithDefaults returns a copy of c whose default values are values instead
// of its values.yaml, as Flux's spec.chart.spec.valuesFiles make them;
// its Digest tells it from c. c is not changed.
func (c *Chart) WithDefaults(values map[string]any) (*Chart, error) {
	data, err := json.Marshal(values)
	if err != nil {
		return nil, fmt.Errorf("chart %s defaults: %w", c.Name, err)
	}
	ch := *c.chart
	ch.Values = deepCopyMap(values)
	sum := sha256.Sum256(append([]byte(c.Digest+"\x00"), data...))
	return &Chart{Name: c.Name, Version: c.Version, Source: c.Source, Digest: hex.EncodeToString(sum[:]), chart: &ch}, nil
}

// File returns a file of the chart by its path in the chart
// (values-production.yaml), as Flux reads the valuesFiles of a chart from
// a chart repository.
func (c *Chart) File(name string) ([]byte, bool) {
	if name == "values.yaml" {
		data, err := json.Marshal(c.chart.Values)
		return data, err == nil
	}
	for _, f := range c.chart.Files {
		if f.Name == name {
			return f.Data, true
		}
	}
	return nil, false
}
