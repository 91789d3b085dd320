package usage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
)

// TestClientSeriesAnswersAsTheClientLibrary serves the same answers of the
// series endpoint to the client library and to Client: the same label
// sets, warnings, infos and errors.
func TestClientSeriesAnswersAsTheClientLibrary(t *testing.T) {
	tests := []struct {
		name       string
		code       int
		body       string
		refusePost bool
		// sameType compares only the errors' types, their messages being
		// each decoder's own.
		sameType bool
	}{
		{name: "label sets", code: 200, body: `{"status":"success","data":[` +
			`{"__name__":"kube_pod_owner","namespace":"shop","pod":"web-1","owner_kind":"ReplicaSet","owner_name":"web-7c9d5"},` +
			`{"__name__":"kube_replicaset_owner","esc":"q\"b\\s\/\u00e9\ud83d\ude00\n\t"},{}],"warnings":["w1"],"infos":["i1","i2"]}`},
		{name: "pretty, members in another order, unknown ones", code: 200,
			body: "{\n  \"data\" : [ { \"a\" : \"1\" } ],\n  \"extra\": [1, {\"x\": null}, true],\n  \"status\" : \"success\"\n}\n"},
		{name: "empty", code: 200, body: `{"status":"success","data":[]}`},
		{name: "null", code: 200, body: `{"status":"success","data":null}`},
		{name: "no data", code: 200, body: `{"status":"success"}`},
		{name: "refused POST", code: 200, refusePost: true, body: `{"status":"success","data":[{"pod":"a"}]}`},
		{name: "bad data", code: 400, body: `{"status":"error","errorType":"bad_data","error":"invalid parameter \"match[]\": 1:2: parse error"}`},
		{name: "execution error", code: 422, body: `{"status":"error","errorType":"execution","error":"too many series","warnings":["w"]}`},
		{name: "API code, body a success", code: 400, body: `{"status":"success","data":[]}`},
		{name: "API code, body not the API's", code: 400, body: `Bad Request`},
		{name: "not found", code: 404, body: `404 page not found`},
		{name: "unavailable", code: 503, body: `upstream connect error`},
		{name: "error with a success code", code: 200, body: `{"status":"error","errorType":"timeout","error":"query timed out"}`},
		{name: "value not a string", code: 200, sameType: true, body: `{"status":"success","data":[{"pod":1}]}`},
		{name: "a matrix", code: 200, sameType: true, body: `{"status":"success","data":{"resultType":"matrix","result":[]}}`},
		{name: "truncated", code: 200, sameType: true, body: `{"status":"success","data":[{"pod":"a"},{"pod":`},
		{name: "not json", code: 200, sameType: true, body: `<html>proxy login</html>`},
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
			matches := []string{`{__name__="kube_pod_owner"}`}
			start, end := time.Unix(0, 0), time.Unix(3600, 0)
			want, wantWarnings, wantInfos, wantErr := libraryAPI(t, srv.URL).Series(context.Background(), matches, start, end)
			got, gotWarnings, gotInfos, gotErr := newTestClient(t, srv.URL).Series(context.Background(), matches, start, end)
			if diff := cmp.Diff(want, got); sameError(t, gotErr, wantErr, tt.sameType) && diff != "" {
				t.Errorf("label sets differ from the client library's (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantWarnings, gotWarnings); diff != "" {
				t.Errorf("warnings differ (-want +got):\n%s", diff)
			}
			if wantErr == nil {
				if diff := cmp.Diff(wantInfos, gotInfos); diff != "" {
					t.Errorf("infos differ (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestClientSeriesSendsTheLibrarysRequest checks that Client asks the
// series endpoint what the client library asks, in a POST form under a
// path prefix, and in a GET when POST is refused.
func TestClientSeriesSendsTheLibrarysRequest(t *testing.T) {
	var got []string
	refuse := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuse && r.Method == http.MethodPost {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		if err := r.ParseForm(); err != nil {
			t.Error(err)
		}
		got = append(got, fmt.Sprintf("%s %s %s %s", r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.Form.Encode()))
		io.WriteString(w, `{"status":"success","data":[]}`)
	}))
	defer srv.Close()
	matches := []string{`{__name__=~"kube_pod_owner|kube_job_owner",namespace="a b"}`, `up{job="x"}`}
	start, end := time.Unix(1700000000, 123456789), time.Unix(1700604800, 0)
	for _, refuse = range []bool{false, true} {
		got = nil
		if _, _, _, err := libraryAPI(t, srv.URL+"/prom/").Series(context.Background(), matches, start, end); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := newTestClient(t, srv.URL+"/prom/").Series(context.Background(), matches, start, end); err != nil {
			t.Fatal(err)
		}
		method := "POST"
		if refuse {
			method = "GET"
		}
		want := method + " /prom/api/v1/series "
		// Client also asks Thanos for no partial answer.
		if len(got) == 2 && !strings.Contains(got[1], "&partial_response=false") {
			t.Errorf("request = %q, want partial_response=false", got[1])
		} else if len(got) == 2 {
			got[1] = strings.Replace(got[1], "&partial_response=false", "", 1)
		}
		if len(got) != 2 || got[0] != got[1] || !strings.HasPrefix(got[0], want) ||
			!strings.Contains(got[0], "match%5B%5D=up%7Bjob%3D%22x%22%7D") || !strings.Contains(got[0], "start=1700000000.123") || !strings.Contains(got[0], "end=1700604800") {
			t.Errorf("requests = %q, want the client library's, a %s to the prefixed path with both matches, start and end", got, method)
		}
	}
	if _, _, _, err := newTestClient(t, srv.URL).Series(context.Background(), matches, start, end, promv1.WithLimit(1)); err == nil {
		t.Error("Series() with an option: no error")
	}
}

// TestClientSeriesBoundsTheAnswer lists series from a server whose answer
// goes on past maxSeriesAnswer: the listing fails instead of reading on.
func TestClientSeriesBoundsTheAnswer(t *testing.T) {
	for _, tt := range []struct {
		name    string
		padding int // white space within the answer
		wantErr bool
	}{
		{name: "at the bound", padding: maxSeriesAnswer - len(`{"status":"success","data":[{"a":"b"}]}`)},
		{name: "past it", padding: maxSeriesAnswer, wantErr: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, `{"status":"success","data":[{"a":"b"}]`)
				spaces := strings.Repeat(" ", 1<<20)
				for left := tt.padding; left > 0; left -= len(spaces) {
					if _, err := io.WriteString(w, spaces[:min(left, len(spaces))]); err != nil {
						return
					}
				}
				io.WriteString(w, `}`)
			}))
			defer srv.Close()
			got, _, _, err := newTestClient(t, srv.URL).Series(context.Background(), []string{"up"}, time.Time{}, time.Time{})
			switch {
			case tt.wantErr && (!errors.Is(err, errAnswerTooLarge) || !strings.Contains(err.Error(), "reading the answer: the answer is larger than 64 MiB")):
				t.Errorf("Series() error = %v, want the answer too large", err)
			case !tt.wantErr && (err != nil || len(got) != 1):
				t.Errorf("Series() = %v, %v; want the one label set", got, err)
			}
		})
	}
}

// listingAPI is recordingAPI that also lists series, from canned label
// sets, and records each listing.
type listingAPI struct {
	recordingAPI
	listed [][]string
	starts []time.Time
	ends   []time.Time
	sets   []model.LabelSet
	err    error
}

func (l *listingAPI) Series(_ context.Context, matches []string, start, end time.Time, _ ...promv1.Option) ([]model.LabelSet, promv1.Warnings, promv1.Infos, error) {
	l.listed = append(l.listed, matches)
	l.starts, l.ends = append(l.starts, start), append(l.ends, end)
	if l.err != nil {
		return nil, nil, nil, l.err
	}
	return l.sets, nil, nil, nil
}

// TestReaderListsOwnership reads ownership from the listing of its series
// when the API lists series: no ownership query is sent, the listing
// selects the namespace and the label filter over the window (and the CPU
// series, from a rate window earlier), and the owners resolve as the
// query's do.
func TestReaderListsOwnership(t *testing.T) {
	set := func(name string, labels ...string) model.LabelSet {
		s := model.LabelSet{model.MetricNameLabel: model.LabelValue(name), "namespace": "ns"}
		for i := 0; i < len(labels); i += 2 {
			s[model.LabelName(labels[i])] = model.LabelValue(labels[i+1])
		}
		return s
	}
	api := &listingAPI{sets: []model.LabelSet{
		// web-db-x2k4p fits Deployment web's pattern, but belongs to the
		// DaemonSet web-db, which is not in the batch.
		set("kube_pod_owner", "pod", "web-db-x2k4p", "owner_kind", "DaemonSet", "owner_name", "web-db"),
		set("kube_pod_owner", "pod", "web-7c9d5-x2k4p", "owner_kind", "ReplicaSet", "owner_name", "web-7c9d5", "uid", "1"),
		// The same pod again, from another kube-state-metrics.
		set("kube_pod_owner", "pod", "web-7c9d5-x2k4p", "owner_kind", "ReplicaSet", "owner_name", "web-7c9d5", "uid", "1", "instance", "b"),
		// A scrape target's pod label on a ReplicaSet's series: the
		// metric's name says its subject is the ReplicaSet.
		set("kube_replicaset_owner", "replicaset", "web-7c9d5", "owner_kind", "Deployment", "owner_name", "web", "pod", "kube-state-metrics-0"),
		// A Job of CronJob nightly and its pod.
		set("kube_job_owner", "job_name", "nightly-29000000", "owner_kind", "CronJob", "owner_name", "nightly"),
		set("kube_pod_owner", "pod", "nightly-29000000-abcde", "owner_kind", "Job", "owner_name", "nightly-29000000"),
		// A bare pod says it has no owner: its pattern decides.
		set("kube_pod_owner", "pod", "web-8f8f8-x2k4p", "owner_kind", "<none>", "owner_name", "<none>"),
	}}
	api.answer = func(q string) model.Matrix {
		if strings.Contains(q, "container_cpu_usage_seconds_total") {
			return model.Matrix{series("web-db-x2k4p", "c", 1), series("web-7c9d5-x2k4p", "c", 2), series("web-8f8f8-x2k4p", "c", 3),
				series("nightly-29000000-abcde", "c", 4), series("kube-state-metrics-0", "c", 5)}
		}
		return nil
	}
	end := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	web := WorkloadRef{Kind: "Deployment", Namespace: "ns", Name: "web"}
	nightly := WorkloadRef{Kind: "CronJob", Namespace: "ns", Name: "nightly"}
	got, err := NewReader(api, WithWindow(48*time.Hour), WithLabelFilter(`cluster="prod"`), WithClock(func() time.Time { return end })).
		Read(context.Background(), "ns", []WorkloadRef{web, nightly})
	if err != nil {
		t.Fatal(err)
	}
	if h := got[web]["c"][corev1.ResourceCPU]; h == nil || !slices.Equal(h.Values, []float64{2, 3}) {
		t.Errorf("web cpu = %+v, want [2 3]: its own pod and the one without an owner, not web-db's", h)
	}
	if h := got[nightly]["c"][corev1.ResourceCPU]; h == nil || !slices.Equal(h.Values, []float64{4}) {
		t.Errorf("nightly cpu = %+v, want [4], its Job's pod", h)
	}
	want := [][]string{{`{__name__=~"kube_pod_owner|kube_replicaset_owner|kube_job_owner",namespace="ns",cluster="prod"}`,
		`container_cpu_usage_seconds_total{container!="",container!="POD",namespace="ns",pod=~"nightly-[0-9]+-[bcdfghjklmnpqrstvwxz2456789]{5}|web-[bcdfghjklmnpqrstvwxz2456789]{1,10}-[bcdfghjklmnpqrstvwxz2456789]{5}",cluster="prod"}`}}
	if diff := cmp.Diff(want, api.listed); diff != "" {
		t.Errorf("listings differ (-want +got):\n%s", diff)
	}
	// The CPU series are listed back to the first point's rate window.
	if start := end.Add(-48*time.Hour - DefaultRateWindow - DefaultStep); len(api.starts) != 1 || !api.starts[0].Equal(start) || !api.ends[0].Equal(end) {
		t.Errorf("listed from %v to %v, want the window and a rate window and step before it, %v to %v", api.starts, api.ends, start, end)
	}
	for _, q := range api.queries {
		if strings.Contains(q, "owner") {
			t.Errorf("ownership query %s sent, want only the listing", q)
		}
	}
	if len(api.queries) != 4 {
		t.Errorf("queries = %d, want CPU, memory, OOM kills and startup peaks", len(api.queries))
	}

	// Its failure is the read's, as a query's is.
	api.err = &promv1.Error{Type: promv1.ErrClient, Msg: "client error: 404"}
	if _, err := NewReader(api).Read(context.Background(), "ns", []WorkloadRef{web}); err == nil || err.Error() != "querying ownership in namespace ns: client_error: client error: 404" {
		t.Errorf("Read() with a failing listing: error = %v, want it named the ownership query's", err)
	}
}

// TestReaderBoundsTheListing lists ownership from a Prometheus that never
// answers: the query timeout ends the listing, as it ends a query.
func TestReaderBoundsTheListing(t *testing.T) {
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/api/v1/series") {
			t.Errorf("request to %s, want the series listing first", r.URL.Path)
		}
		_ = r.ParseForm() // the listing; then the server notices a client that leaves
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	defer srv.Close()
	defer close(done)
	r := NewReader(newTestClient(t, srv.URL), WithQueryTimeout(200*time.Millisecond))
	start := time.Now()
	_, err := r.Read(context.Background(), "shop", []WorkloadRef{{Kind: "Deployment", Namespace: "shop", Name: "web"}})
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("Read() took %s with a 200ms query timeout", took)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "querying ownership in namespace shop: no answer within 200ms") {
		t.Errorf("Read() error = %v, want the listing cut by the query timeout", err)
	}
}

func TestBoundedBody(t *testing.T) {
	read := func(body string, left int64) (string, error) {
		b, err := io.ReadAll(&boundedBody{ReadCloser: io.NopCloser(strings.NewReader(body)), left: left})
		return string(b), err
	}
	if got, err := read("abc", 3); got != "abc" || err != nil {
		t.Errorf("3 bytes within 3: %q, %v", got, err)
	}
	if got, err := read("abcd", 3); got != "abc" || !errors.Is(err, errAnswerTooLarge) {
		t.Errorf("4 bytes within 3: %q, %v; want the first 3 and errAnswerTooLarge", got, err)
	}
}

// Where the series endpoint is not served, ownership is queried instead.
func TestOwnershipQueriedWhereSeriesAreNotServed(t *testing.T) {
	var listings, queries int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/api/v1/series") {
			listings++
			http.NotFound(w, r)
			return
		}
		queries++
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[`+
			`{"metric":{"pod":"web-7d4b9c8f6d-x2k4p","owner_kind":"ReplicaSet","owner_name":"web-7d4b9c8f6d"},"values":[[1700000000,"1"]]},`+
			`{"metric":{"replicaset":"web-7d4b9c8f6d","owner_kind":"Deployment","owner_name":"web"},"values":[[1700000000,"1"]]}]}}`)
	}))
	defer srv.Close()
	client, err := NewClient(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	web := WorkloadRef{Kind: "Deployment", Namespace: "shop", Name: "web"}
	got, _, err := NewReader(client).ownership(t.Context(), "shop", []WorkloadRef{web}, "", 0)
	if err != nil {
		t.Fatalf("ownership() error = %v", err)
	}
	if w := got["web-7d4b9c8f6d-x2k4p"]; w == nil || *w != web || listings != 1 || queries != 1 {
		t.Errorf("ownership() = %v after %d listings and %d queries, want the pod to be web's after one of each", got, listings, queries)
	}
}
