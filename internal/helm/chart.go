package helm

import (
	"crypto/sha256"
	"encoding/hex"
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
