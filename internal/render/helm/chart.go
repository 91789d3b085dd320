package helm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
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
	return NewLoadedChart(source, FilesDigest(files), c), nil
}

// NewLoadedChart is a chart the Helm SDK loaded, from a directory, a
// chart repository or a registry. Source says where it came from, digest
// identifies its content (FilesDigest of its files, or its archive's
// sha256). c belongs to the Chart from then on: no one changes it.
func NewLoadedChart(source, digest string, c *chartv2.Chart) *Chart {
	return &Chart{Name: c.Metadata.Name, Version: c.Metadata.Version, Source: source, Digest: digest, chart: c}
}

// Loaded is the chart as the Helm SDK loaded it, shared by every render
// of c: read it, never change it.
func (c *Chart) Loaded() *chartv2.Chart { return c.chart }

// FilesDigest is the hex sha256 of a chart's files in name order, each
// name and length written before its content so that no two sets of files
// give the same stream: NewChart's Digest, and that of the same files
// loaded from a directory.
func FilesDigest(files map[string][]byte) string {
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
