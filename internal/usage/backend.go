package usage

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
)

// Backend is what a Prometheus-compatible server says of itself: its
// name, version and the limits it tells of that bound a query's size.
type Backend struct {
	Name, Version string
	// Limits are flag=value pairs, as the server names them.
	Limits []string
}

// limitFlags are the flags, by the name each server gives them, that
// bound what one query may read.
var limitFlags = []string{
	"query.max-samples", "query.timeout", "query.max-concurrency", "query.max-concurrent", // Prometheus, Thanos
	"search.maxSamplesPerQuery", "search.maxSamplesPerSeries", "search.maxUniqueTimeseries", // VictoriaMetrics
	"search.maxPointsPerTimeseries", "search.maxQueryDuration", "search.maxConcurrentRequests",
}

// Backend asks the server what it is: Prometheus' build information
// (/api/v1/status/buildinfo; Mimir names itself there), VictoriaMetrics'
// flags (/flags, which only it serves), Thanos' stores (/api/v1/stores),
// and Prometheus' and Thanos' flags (/api/v1/status/flags). Where an
// endpoint is not served, its part is left out; the error is that of the
// build information, which every backend serves.
func (c *Client) Backend(ctx context.Context) (Backend, error) {
	var b Backend
	var info struct {
		Data struct {
			Application string `json:"application"`
			Version     string `json:"version"`
		} `json:"data"`
	}
	body, err := c.get(ctx, "api/v1/status/buildinfo")
	if err != nil {
		return b, err
	}
	if err := json.Unmarshal(body, &info); err != nil {
		return b, &answerError{"build information", err}
	}
	b.Name, b.Version = "Prometheus", info.Data.Version
	switch {
	case info.Data.Application != "":
		b.Name = info.Data.Application
	case c.served(ctx, "api/v1/stores"):
		b.Name = "Thanos"
	}
	if flags, err := c.get(ctx, "flags"); err == nil && b.Name == "Prometheus" && strings.HasPrefix(strings.TrimSpace(string(flags)), "-") {
		// VictoriaMetrics lists the flags set off their defaults, one
		// -name="value" a line.
		b.Name, b.Version = "VictoriaMetrics", ""
		sc := bufio.NewScanner(strings.NewReader(string(flags)))
		for sc.Scan() {
			name, value, _ := strings.Cut(strings.TrimPrefix(sc.Text(), "-"), "=")
			if isLimit(name) {
				b.Limits = append(b.Limits, name+"="+strings.Trim(value, `"`))
			}
		}
		return b, nil
	}
	var flags struct {
		Data map[string]string `json:"data"`
	}
	if body, err := c.get(ctx, "api/v1/status/flags"); err == nil && json.Unmarshal(body, &flags) == nil {
		for _, name := range limitFlags {
			if v, ok := flags.Data[name]; ok {
				b.Limits = append(b.Limits, name+"="+v)
			}
		}
	}
	return b, nil
}

func isLimit(name string) bool {
	for _, l := range limitFlags {
		if l == name {
			return true
		}
	}
	return false
}

// answerError is an answer that could not be decoded.
type answerError struct {
	what string
	err  error
}

func (e *answerError) Error() string { return "decoding the " + e.what + ": " + e.err.Error() }
func (e *answerError) Unwrap() error { return e.err }

// maxStatusAnswer bounds a status answer: build information and flags.
const maxStatusAnswer = 1 << 20

// get reads the answer of a GET of rel, below the API's base, when the
// server answers 200.
func (c *Client) get(ctx context.Context, rel string) ([]byte, error) {
	u := *c.endpoint
	u.Path = path.Join(strings.TrimSuffix(u.Path, "/api/v1/query_range"), rel)
	u.RawQuery = ""
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxStatusAnswer))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		_, msg := errorFor(resp.StatusCode)
		return nil, fmt.Errorf("%s: %s", u.Path, msg)
	}
	return body, nil
}

// served reports whether the server answers a GET of rel with 200.
func (c *Client) served(ctx context.Context, rel string) bool {
	_, err := c.get(ctx, rel)
	return err == nil
}
