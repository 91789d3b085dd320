package usage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
)

// libraryAPI is Prometheus's client library for the server at address.
func libraryAPI(t testing.TB, address string) promv1.API {
	t.Helper()
	client, err := api.NewClient(api.Config{Address: address})
	if err != nil {
		t.Fatal(err)
	}
	return promv1.NewAPI(client)
}

func newTestClient(t testing.TB, address string) *Client {
	t.Helper()
	c, err := NewClient(address, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestClientAnswersAsTheClientLibrary serves the same answers to the
// client library and to Client: the same matrices, warnings and errors.
func TestClientAnswersAsTheClientLibrary(t *testing.T) {
	tests := []struct {
		name string
		code int
		body string
		// refusePost answers a POST with 405, as some gateways do.
		refusePost bool
		// sameType compares only the errors' types, their messages being
		// each decoder's own.
		sameType bool
	}{
		{name: "matrix", code: 200, body: `{"status":"success","data":{"resultType":"matrix","result":[` +
			`{"metric":{"pod":"web-1","container":"app","esc":"q\"b\\s\/\u00e9\ud83d\ude00\n\t"},"values":[[1700000000,"0.5"],[1700000060.5,"NaN"],[1700000120.123,"+Inf"],[1700000180.1239,"-Inf"],[1700000240,"1e-7"]]},` +
			`{"metric":{},"values":[]}]},"warnings":["w1","w2"]}`},
		{name: "pretty, members in another order, unknown ones", code: 200, body: "{\n  \"data\" : {\n    \"result\" : [ {\n      \"values\" : [ [ 1, \"2\" ] ],\n" +
			"      \"metric\" : { \"pod\" : \"a\" }\n    } ],\n    \"resultType\" : \"matrix\", \"extra\": [1, {\"x\": null}, true, false, -1.5e3, \"\\u00e9\"]\n  },\n  \"status\" : \"success\", \"stats\": {\"timings\": {}}\n}\n"},
		{name: "empty", code: 200, body: `{"status":"success","data":{"resultType":"matrix","result":[]}}`},
		{name: "refused POST", code: 200, refusePost: true, body: `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"pod":"a"},"values":[[1,"1"]]}]}}`},
		{name: "bad data", code: 400, body: `{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:1: parse error"}`},
		{name: "execution error", code: 422, body: `{"status":"error","errorType":"execution","error":"query processing would load too many samples into memory","warnings":["w"]}`},
		{name: "API error without a message", code: 422, body: `{"status":"error"}`},
		{name: "API code, body not the API's", code: 400, body: `Bad Request`},
		{name: "API code, body a success", code: 400, body: `{"status":"success","data":{"resultType":"matrix","result":[]}}`},
		{name: "unavailable", code: 503, body: `upstream connect error`},
		{name: "gateway timeout", code: 504, body: ``},
		{name: "redirect not followed", code: 304, body: ``},
		{name: "error with a success code", code: 200, body: `{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"}`},
		{name: "truncated", code: 200, sameType: true, body: `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"pod":"a"},"values":[[1,"1"],[2,`},
		{name: "not json", code: 200, sameType: true, body: `<html>proxy login</html>`},
		{name: "bad value", code: 200, sameType: true, body: `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"x"]]}]}}`},
		{name: "value not a string", code: 200, sameType: true, body: `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,2]]}]}}`},
		{name: "trailing garbage", code: 200, sameType: true, body: `{"status":"success","data":{"resultType":"matrix","result":[]}} x`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.refusePost && r.Method == http.MethodPost {
					w.WriteHeader(http.StatusMethodNotAllowed)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.code)
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			rng := promv1.Range{Start: time.Unix(0, 0), End: time.Unix(3600, 0), Step: time.Minute}
			want, wantWarnings, _, wantErr := libraryAPI(t, srv.URL).QueryRange(context.Background(), "up", rng)
			got, gotWarnings, _, gotErr := newTestClient(t, srv.URL).QueryRange(context.Background(), "up", rng)
			if diff := cmp.Diff(want, got); sameError(t, gotErr, wantErr, tt.sameType) && diff != "" {
				t.Errorf("matrix differs from the client library's (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantWarnings, gotWarnings); diff != "" {
				t.Errorf("warnings differ (-want +got):\n%s", diff)
			}
		})
	}
}

// TestClientSendsTheLibrarysRequest checks that Client asks what the client
// library asks, under a path prefix too.
func TestClientSendsTheLibrarysRequest(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			t.Error(err)
		}
		got = append(got, fmt.Sprintf("%s %s %s %s", r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.PostForm.Encode()))
		io.WriteString(w, `{"status":"success","data":{"resultType":"matrix","result":[]}}`)
	}))
	defer srv.Close()
	rng := promv1.Range{Start: time.Unix(1700000000, 123456789), End: time.Unix(1700086400, 0), Step: 90 * time.Second}
	query := `max by (pod) (rate(x{namespace="a b"}[5m]))`
	if _, _, _, err := libraryAPI(t, srv.URL+"/prom/").QueryRange(context.Background(), query, rng); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := newTestClient(t, srv.URL+"/prom/").QueryRange(context.Background(), query, rng); err != nil {
		t.Fatal(err)
	}
	// Client also asks Thanos for no partial answer.
	if len(got) == 2 && !strings.Contains(got[1], "partial_response=false&") {
		t.Errorf("request = %q, want partial_response=false", got[1])
	} else if len(got) == 2 {
		got[1] = strings.Replace(got[1], "partial_response=false&", "", 1)
	}
	if len(got) != 2 || got[0] != got[1] || !strings.Contains(got[0], "POST /prom/api/v1/query_range") {
		t.Errorf("requests = %q, want the client library's, a POST to the prefixed path", got)
	}
}

// TestReaderStreamsWhatItWouldHaveRead reads a namespace through Client and
// through the client library: the same histories, which keep no time of
// their own per sample.
func TestReaderStreamsWhatItWouldHaveRead(t *testing.T) {
	end := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	answers := newNamespaceAnswers(end, 3, 24*time.Hour)
	srv := httptest.NewServer(answers)
	defer srv.Close()
	read := func(api RangeQuerier) map[WorkloadRef]Usage {
		t.Helper()
		got, err := NewReader(api, WithWindow(24*time.Hour), WithStep(time.Minute), WithClock(func() time.Time { return end })).Read(context.Background(), "team", answers.workloads)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	want, got := read(libraryAPI(t, srv.URL)), read(newTestClient(t, srv.URL))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("streamed histories differ (-client library +streamed):\n%s", diff)
	}
	cpu := got[answers.workloads[2]]["app"][corev1.ResourceCPU]
	if cpu == nil || len(cpu.Values) != 2*(24*60+1) || cpu.Span() != 24*time.Hour || !cpu.Last.Equal(end) {
		t.Fatalf("cpu of %s = %v, want 2 pods' samples over the day", answers.workloads[2].Name, cpu)
	}
	if cpu.Times != nil || len(cpu.at) != len(cpu.Values) {
		t.Errorf("cpu history holds %d times and %d places for %d values, want places only", len(cpu.Times), len(cpu.at), len(cpu.Values))
	}
	for i := 1; i < len(cpu.Values); i++ {
		if cpu.Time(i).Before(cpu.Time(i - 1)) {
			t.Fatalf("sample %d at %v is before sample %d at %v", i, cpu.Time(i), i-1, cpu.Time(i-1))
		}
	}
	if mem := got[answers.workloads[0]]["app"][corev1.ResourceMemory]; mem == nil || len(mem.Values) != 25 || !mem.Time(24).Equal(end) {
		t.Errorf("memory of %s = %v, want 25 hourly peaks ending at %v", answers.workloads[0].Name, mem, end)
	}
}

// TestReaderStreamingReportsErrors checks the errors of a streamed query:
// the query timeout while the body arrives, and a result of another type.
func TestReaderStreamingReportsErrors(t *testing.T) {
	done := make(chan struct{})
	defer close(done)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if strings.Contains(r.Form.Get("query"), "namespace=\"vector\"") {
			io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
			return
		}
		io.WriteString(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"pod":"web-bcd-x2k4p","container":"app"},"values":[[1,"1"],`)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	defer srv.Close()
	r := NewReader(newTestClient(t, srv.URL), WithQueryTimeout(200*time.Millisecond), WithOwnership(false))
	_, err := r.Read(context.Background(), "shop", []WorkloadRef{{Kind: "Deployment", Namespace: "shop", Name: "web"}})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "querying cpu in namespace shop: no answer within 200ms") {
		t.Errorf("Read() of a stalled body: error = %v, want the query timeout", err)
	}
	_, err = r.Read(context.Background(), "vector", []WorkloadRef{{Kind: "Deployment", Namespace: "vector", Name: "web"}})
	if err == nil || err.Error() != "querying cpu in namespace vector: got vector, want a matrix" {
		t.Errorf("Read() of a vector: error = %v, want the type named", err)
	}
}

// TestDecodeAnswerRoundTrip decodes random matrices as encoded by
// Prometheus's own types, pretty or not.
func TestDecodeAnswerRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	runes := []rune("aZ09-_\"\\/\n\t\x01é€😀\u2028")
	text := func() string {
		var b strings.Builder
		for range rng.IntN(6) {
			b.WriteRune(runes[rng.IntN(len(runes))])
		}
		return b.String()
	}
	values := []float64{0, 1, -1, 0.1, 1e-300, 1e300, math.MaxFloat64, math.SmallestNonzeroFloat64, math.NaN(), math.Inf(1), math.Inf(-1)}
	for i := range 200 {
		var m model.Matrix
		for range rng.IntN(4) {
			s := &model.SampleStream{Metric: model.Metric{}}
			for range rng.IntN(4) {
				s.Metric[model.LabelName(text())] = model.LabelValue(text())
			}
			ts := rng.Int64N(1 << 42)
			for range rng.IntN(5) {
				v := values[rng.IntN(len(values))]
				if rng.IntN(2) == 0 {
					v = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(40)-20))
				}
				s.Values = append(s.Values, model.SamplePair{Timestamp: model.Time(ts), Value: model.SampleValue(v)})
				ts += rng.Int64N(1 << 20)
			}
			m = append(m, s)
		}
		data, err := json.Marshal(map[string]any{"status": "success", "data": map[string]any{"resultType": "matrix", "result": m}})
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, data, "", "  "); err != nil {
				t.Fatal(err)
			}
			data = pretty.Bytes()
		}
		// A reader that hands over one byte at a time tests every
		// boundary of the buffer.
		var src io.Reader = bytes.NewReader(data)
		if i%3 == 0 {
			src = oneByteReader{src}
		}
		var got model.Matrix
		if _, err := decodeAnswer(src, func(s *model.SampleStream) error {
			if len(s.Values) == 0 {
				s.Values = nil
			}
			got = append(got, &model.SampleStream{Metric: s.Metric, Values: append([]model.SamplePair(nil), s.Values...)})
			return nil
		}); err != nil {
			t.Fatalf("decodeAnswer(%s) error = %v", data, err)
		}
		if diff := cmp.Diff(m, got); diff != "" {
			t.Fatalf("decodeAnswer(%s) differs (-want +got):\n%s", data, diff)
		}
	}
}

type oneByteReader struct{ r io.Reader }

func (o oneByteReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}

// FuzzDecodeAnswer feeds the decoder what a broken or hostile server might
// send: it must return, with an error or not, and never panic.
func FuzzDecodeAnswer(f *testing.F) {
	for _, seed := range []string{
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"pod":"a"},"values":[[1,"1"]]}]}}`,
		`{"status":"error","errorType":"bad_data","error":"x"}`,
		`{"data":{"result":[{"values":[[1.5,"NaN"]],"histograms":[[1,{"count":"1"}]]}],"resultType":"matrix"}}`,
		`{"a":"\ud83d\ude00\ud83d\u0041\\"}`,
		`[`, `{"status":`, `{"data":{"resultType":"matrix","result":[{"values":[[1e400,"1"]]}]}}`,
		`{"x":` + strings.Repeat("[", maxDepth+1),
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		series := 0
		_, err := decodeAnswer(bytes.NewReader(data), func(*model.SampleStream) error {
			series++
			return nil
		})
		if err != nil && !errors.Is(err, errSyntax) {
			t.Errorf("decodeAnswer(%q) error = %v, want a syntax error", data, err)
		}
	})
}

func TestMillis(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1": 1000, "1.5": 1500, "1700000000.123": 1700000000123, "1.1239": 1123,
		"1.": 1000, "-2.5": -2500, "1e3": 1000000, "1234567890123456": 1234567890123456000} {
		if got, err := millis([]byte(in)); err != nil || got != want {
			t.Errorf("millis(%s) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-", ".", "1.2.3", "x", "1e999"} {
		if got, err := millis([]byte(in)); err == nil {
			t.Errorf("millis(%q) = %d, want an error", in, got)
		}
	}
}

func TestHistoryKeepsTimesOffItsGrid(t *testing.T) {
	start := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	h := &History{Step: time.Minute}
	h.add(start.Add(2*time.Minute), 2)
	h.add(start, 0)
	h.add(start.Add(time.Minute), 1)
	if h.Times != nil || len(h.at) != 3 {
		t.Fatalf("on the grid: %d times, %d places; want places only", len(h.Times), len(h.at))
	}
	onGrid := *h
	onGrid.at = append([]int32(nil), h.at...)
	onGrid.Values = append([]float64(nil), h.Values...)
	h.add(start.Add(90*time.Second), 1.5)
	if h.at != nil || len(h.Times) != 4 {
		t.Fatalf("off the grid: %d times, %d places; want times only", len(h.Times), len(h.at))
	}
	h.sortByTime()
	onGrid.sortByTime()
	for i, want := range []time.Duration{0, time.Minute, 90 * time.Second, 2 * time.Minute} {
		if got := h.Time(i); !got.Equal(start.Add(want)) || h.Values[i] != float64(want)/float64(time.Minute) {
			t.Errorf("sample %d = %v at %v, want %v at %v", i, h.Values[i], got, float64(want)/float64(time.Minute), start.Add(want))
		}
	}
	if !h.First.Equal(start) || !h.Last.Equal(start.Add(2*time.Minute)) {
		t.Errorf("span %v to %v, want %v to %v", h.First, h.Last, start, start.Add(2*time.Minute))
	}
	// Equal compares times, however they are kept.
	asTimes := &History{Step: time.Minute, Values: onGrid.Values, First: onGrid.First, Last: onGrid.Last,
		Times: []time.Time{start, start.Add(time.Minute), start.Add(2 * time.Minute)}}
	if !onGrid.Equal(asTimes) || !asTimes.Equal(&onGrid) {
		t.Errorf("a history on its grid and the same with times differ")
	}
	asTimes.Times[1] = start.Add(61 * time.Second)
	if onGrid.Equal(asTimes) {
		t.Errorf("histories with a sample at another time are equal")
	}
}

// The request form of a GET fallback carries the query in its URL.
func TestClientFallsBackToGetWithTheQuery(t *testing.T) {
	var got url.Values
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		got = r.URL.Query()
		io.WriteString(w, `{"status":"success","data":{"resultType":"matrix","result":[]}}`)
	}))
	defer srv.Close()
	rng := promv1.Range{Start: time.Unix(60, 0), End: time.Unix(120, 0), Step: time.Minute}
	if _, err := newTestClient(t, srv.URL).QueryRangeSeries(context.Background(), "up", rng, func(*model.SampleStream) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if got.Get("query") != "up" || got.Get("start") != "60" || got.Get("end") != "120" || got.Get("step") != "60" {
		t.Errorf("GET query = %v, want query, start, end and step", got)
	}
}

// sameError checks that the job's client failed as the client library
// did: both or neither, with the same type of API error and detail, and
// the same message unless sameType asks only for the type. It reports
// whether both succeeded, so that their answers can be compared.
func sameError(t *testing.T, got, want error, sameType bool) bool {
	t.Helper()
	if (want == nil) != (got == nil) {
		t.Fatalf("error = %v, want %v", got, want)
	}
	if want == nil {
		return true
	}
	var wantAPI, gotAPI *promv1.Error
	if errors.As(want, &wantAPI) != errors.As(got, &gotAPI) {
		t.Fatalf("error = %#v, want %#v", got, want)
	}
	if sameType {
		if gotAPI == nil || gotAPI.Type != wantAPI.Type {
			t.Errorf("error = %v, want one of type %s like %v", got, wantAPI.Type, want)
		}
	} else if got.Error() != want.Error() {
		t.Errorf("error = %q, want %q", got, want)
	}
	if gotAPI != nil && wantAPI.Detail != gotAPI.Detail {
		t.Errorf("error detail = %q, want %q", gotAPI.Detail, wantAPI.Detail)
	}
	return false
}

// chunkReader hands out src in reads of sizes cycling through 1 to max
// bytes, from an offset, so that the decoder's buffer ends at every
// place of an answer in turn: within a key, right after it, within a value.
type chunkReader struct {
	src       []byte
	max, next int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.src) == 0 {
		return 0, io.EOF
	}
	r.next = r.next%r.max + 1
	n := copy(p[:min(len(p), r.next)], r.src)
	r.src = r.src[n:]
	return n, nil
}

func TestDecodeAnswerInAnyPieces(t *testing.T) {
	text := []byte(`{"status":"success","data":{"resultType":"matrix","result":[` +
		`{"metric":{"container":"app","pod":"web-5f6d-x2k4p","note":"tab\there \u00e9 \"q\""},"values":[[1700000000,"0.25"],[1700000060.5,"1e-3"],[1700000120,"NaN"]]},` +
		`{"metric":{"a_long_label_name_to_cross_reads":"v"},"values":[[1700000000.123,"+Inf"],[1700000060,"12345678901234567890"]]}` +
		`]},"warnings":["partial \"answer\""]}`)
	decode := func(src io.Reader) (answer, []model.SampleStream, error) {
		var got []model.SampleStream
		a, err := decodeAnswer(src, func(s *model.SampleStream) error {
			got = append(got, model.SampleStream{Metric: s.Metric.Clone(), Values: append([]model.SamplePair(nil), s.Values...)})
			return nil
		})
		return a, got, err
	}
	// Whole in the first read: nothing is read again while decoding.
	wantAnswer, want, err := decode(bytes.NewReader(text))
	if err != nil || len(want) != 2 || len(want[0].Values) != 3 || want[0].Metric["note"] != "tab\there é \"q\"" {
		t.Fatalf("decodeAnswer(whole) = %v, %v; want 2 series, the first of 3 samples and its note unescaped", want, err)
	}
	for size := 1; size <= 13; size++ {
		for offset := range size {
			a, got, err := decode(&chunkReader{src: text, max: size, next: offset})
			if err != nil || !cmp.Equal(a, wantAnswer, cmp.AllowUnexported(answer{})) || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("reads of up to %d bytes from %d: %v, %+v, %v; want %+v, %v", size, offset, got, a, err, wantAnswer, want)
			}
		}
	}
}
