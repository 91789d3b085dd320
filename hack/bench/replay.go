package bench

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// statsParam asks Prometheus for the query's statistics, the samples it
// read among them (data.stats.samples.totalQueryableSamples).
const statsParam = "all"

// Replayed is one request sent again, alone: its time from sending it to
// the last byte of its answer, the answer's size and, for a PromQL query,
// the samples Prometheus read.
type Replayed struct {
	// Index is the request's place among those replayed.
	Index   int
	Request Request
	Wall    time.Duration
	Bytes   int64
	Samples int64
}

// replayClient sends requests as recorded: it asks for gzip itself (when
// the recorded request did) and reads the answer as it came.
var replayClient = &http.Client{Transport: &http.Transport{
	DisableCompression:  true,
	MaxIdleConnsPerHost: 16,
	Proxy:               nil,
}}

// ReplayAPI sends the recorded GET requests to the apiserver through base
// (the proxy, which authenticates them), one after the other. A list
// page's continue token is the one the replayed previous page answered,
// the recorded one having expired by now.
func ReplayAPI(ctx context.Context, base string, reqs []Request) ([]Replayed, error) {
	tokens := map[string]string{}
	var out []Replayed
	for i, r := range reqs {
		if r.Method != http.MethodGet {
			continue
		}
		query, _ := url.ParseQuery(r.Query)
		key := r.Path + "?" + withoutContinue(query)
		if query.Get("continue") != "" && tokens[key] != "" {
			query.Set("continue", tokens[key])
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+r.Path+"?"+query.Encode(), nil)
		if err != nil {
			return nil, fmt.Errorf("replay %s: %w", r.Path, err)
		}
		req.Header = r.Header.Clone()
		rep, body, err := send(req, r)
		if err != nil {
			return nil, err
		}
		tokens[key] = continueToken(body)
		rep.Index = i
		out = append(out, rep)
	}
	return out, nil
}

func withoutContinue(q url.Values) string {
	c := url.Values{}
	for k, v := range q {
		if k != "continue" {
			c[k] = v
		}
	}
	return c.Encode()
}

// protobufMagic starts the apiserver's protobuf answers, which the job's
// metadata client asks for.
var protobufMagic = []byte("k8s\x00")

// continueToken returns metadata.continue of a list, JSON or protobuf, ""
// when there is none or the answer is neither.
func continueToken(body []byte) string {
	if raw, ok := bytes.CutPrefix(body, protobufMagic); ok {
		// Every list's first field is its ListMeta; the items, which
		// PartialObjectMetadataList does not know whole, are skipped.
		var envelope runtime.Unknown
		var list metav1.PartialObjectMetadataList
		if envelope.Unmarshal(raw) != nil || list.Unmarshal(envelope.Raw) != nil {
			return ""
		}
		return list.Continue
	}
	var list struct {
		Metadata struct {
			Continue string `json:"continue"`
		} `json:"metadata"`
	}
	if json.Unmarshal(body, &list) != nil {
		return ""
	}
	return list.Metadata.Continue
}

// ReplayPromQL sends the recorded queries and series listings to
// Prometheus through base (the proxy), parallel at a time (one after the
// other when 1), in the form the job sent them, the queries with the
// statistics asked for, and reads the samples each query scanned (a
// listing reads none). It returns them in the recorded order, and the
// time from the first sent to the last answered.
func ReplayPromQL(ctx context.Context, base string, reqs []Request, parallel int) ([]Replayed, time.Duration, error) {
	var queries []int
	for i, r := range reqs {
		if isQuery(r) || isListing(r) {
			queries = append(queries, i)
		}
	}
	out := make([]Replayed, len(queries))
	began := time.Now()
	err := forEachN(ctx, max(parallel, 1), queries, func(k int) error {
		i := queries[k]
		r := reqs[i]
		form := url.Values{}
		for name, v := range r.Form {
			form[name] = append([]string(nil), v...)
		}
		if isListing(r) {
			rep, err := listSeries(ctx, base+r.Path, form, r)
			rep.Index = i
			out[k] = rep
			return err
		}
		form.Set("stats", statsParam)
		rep, err := queryPrometheus(ctx, base+r.Path, form, r)
		rep.Index = i
		out[k] = rep
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	return out, time.Since(began), nil
}

// MaxOverlap returns how many of reqs were in flight at once, at most.
func MaxOverlap(reqs []Request) int {
	most := 0
	for _, r := range reqs {
		n := 0
		for _, o := range reqs {
			if !o.Start.After(r.Start) && o.End.After(r.Start) {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// isQuery says whether r is a PromQL query.
func isQuery(r Request) bool {
	return strings.HasSuffix(r.Path, "/api/v1/query_range") || strings.HasSuffix(r.Path, "/api/v1/query")
}

// isListing says whether r lists series (the job's ownership), which
// Prometheus answers from its index, scanning no sample.
func isListing(r Request) bool {
	return strings.HasSuffix(r.Path, "/api/v1/series")
}

// listSeries posts a series listing's form to endpoint, as the job does,
// and returns its time and size.
func listSeries(ctx context.Context, endpoint string, form url.Values, r Request) (Replayed, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return Replayed{}, fmt.Errorf("list series: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept-Encoding", "gzip")
	rep, _, err := send(req, r)
	return rep, err
}

// queryPrometheus posts a query form to endpoint, as the job does, and
// returns its time, size and scanned samples.
func queryPrometheus(ctx context.Context, endpoint string, form url.Values, r Request) (Replayed, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return Replayed{}, fmt.Errorf("query prometheus: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept-Encoding", "gzip")
	rep, body, err := send(req, r)
	if err != nil {
		return Replayed{}, err
	}
	rep.Samples, err = scannedSamples(body)
	if err != nil {
		return Replayed{}, fmt.Errorf("query %q: %w", form.Get("query"), err)
	}
	return rep, nil
}

// send sends req, reads its whole answer and returns it decompressed,
// with the time and size of the answer as it came.
func send(req *http.Request, r Request) (Replayed, []byte, error) {
	began := time.Now()
	resp, err := replayClient.Do(req)
	if err != nil {
		return Replayed{}, nil, fmt.Errorf("replay %s: %w", req.URL.Path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	wall := time.Since(began)
	if err != nil {
		return Replayed{}, nil, fmt.Errorf("replay %s: %w", req.URL.Path, err)
	}
	body := raw
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return Replayed{}, nil, fmt.Errorf("replay %s: %w", req.URL.Path, err)
		}
		if body, err = io.ReadAll(zr); err != nil {
			return Replayed{}, nil, fmt.Errorf("replay %s: %w", req.URL.Path, err)
		}
	}
	// The run's own answer may have been another: a list of a kind the
	// cluster does not serve (the deployers' kinds) is a 404 to the job too.
	if resp.StatusCode != http.StatusOK && resp.StatusCode != r.Status {
		return Replayed{}, nil, fmt.Errorf("replay %s: %s: %.200s", req.URL.Path, resp.Status, body)
	}
	return Replayed{Request: r, Wall: wall, Bytes: int64(len(raw))}, body, nil
}

// scannedSamples reads data.stats.samples.totalQueryableSamples of a
// Prometheus answer; the statistics come after the result, so the last
// occurrence of the key is theirs.
func scannedSamples(body []byte) (int64, error) {
	const key = `"totalQueryableSamples":`
	i := bytes.LastIndex(body, []byte(key))
	if i < 0 {
		return 0, fmt.Errorf("no query statistics in the answer: %.200s", body)
	}
	rest := body[i+len(key):]
	end := bytes.IndexAny(rest, ",}")
	if end < 0 {
		return 0, fmt.Errorf("malformed query statistics: %.200s", rest)
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(rest[:end])), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("malformed query statistics: %w", err)
	}
	return n, nil
}

// StoredSamples returns how many samples Prometheus at base holds of each
// metric in the window ending at end.
func StoredSamples(ctx context.Context, base string, metrics []string, window time.Duration, end time.Time) (map[string]int64, error) {
	out := map[string]int64{}
	for _, m := range metrics {
		form := url.Values{
			"query": {fmt.Sprintf("sum(count_over_time(%s[%ds]))", m, int64(window.Seconds()))},
			"time":  {formatTime(end)},
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/query", strings.NewReader(form.Encode()))
		if err != nil {
			return nil, fmt.Errorf("count stored samples: %w", err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		_, body, err := send(req, Request{})
		if err != nil {
			return nil, fmt.Errorf("count stored samples of %s: %w", m, err)
		}
		var answer struct {
			Data struct {
				Result []struct {
					Value [2]any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &answer); err != nil {
			return nil, fmt.Errorf("count stored samples of %s: %w", m, err)
		}
		if len(answer.Data.Result) == 0 {
			out[m] = 0
			continue
		}
		s, _ := answer.Data.Result[0].Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("count stored samples of %s: %w", m, err)
		}
		out[m] = int64(v)
	}
	return out, nil
}

// formatTime formats t as Prometheus's API takes it, seconds with
// milliseconds.
func formatTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', -1, 64)
}
