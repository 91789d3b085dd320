package usage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// SeriesQuerier runs a range query and hands each series of its matrix to
// each as it is decoded, so that the whole answer is never held; the
// series is only valid during the call. A Reader whose RangeQuerier is
// also a SeriesQuerier, as Client is, reads this way.
type SeriesQuerier interface {
	QueryRangeSeries(ctx context.Context, query string, r promv1.Range, each func(*model.SampleStream) error) (promv1.Warnings, error)
}

// Client queries the range query API of a Prometheus-compatible server.
// It reads each answer once, as it arrives, where Prometheus's client
// library reads the whole body, checks it and then decodes it twice. The
// HTTP client brings authentication, TLS and headers; the context of a
// query bounds it, its answer's body included. Its errors are the client
// library's (*promv1.Error, with the same types and messages), or those
// of the HTTP client.
type Client struct {
	endpoint *url.URL // of range queries
	series   *url.URL // of series listings
	http     *http.Client
	log      *slog.Logger // receives the answers' infos
}

// ClientOption configures a Client.
type ClientOption func(*Client)

// WithInfoLog logs the infos of the answers (PromQL's notes, e.g. that a
// metric might not be a counter) to l; they change no value, unlike
// warnings, which the Reader turns into a *PartialError.
func WithInfoLog(l *slog.Logger) ClientOption { return func(c *Client) { c.log = l } }

var (
	_ RangeQuerier  = (*Client)(nil)
	_ SeriesQuerier = (*Client)(nil)
	_ SeriesLister  = (*Client)(nil)
	// The client library lists series as Client does.
	_ SeriesLister = promv1.API(nil)
)

// NewClient returns a Client of the API at address (e.g.
// http://prometheus:9090, or with a path prefix), sending requests with
// client; http.DefaultClient when nil.
func NewClient(address string, client *http.Client, opts ...ClientOption) (*Client, error) {
	u, err := url.Parse(address)
	if err != nil {
		return nil, err
	}
	if client == nil {
		client = http.DefaultClient
	}
	base := strings.TrimRight(u.Path, "/")
	series := *u
	u.Path = path.Join(base, "/api/v1/query_range")
	series.Path = path.Join(base, "/api/v1/series")
	c := &Client{endpoint: u, series: &series, http: client, log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// QueryRange runs a range query and returns its matrix. Options are not
// supported.
func (c *Client) QueryRange(ctx context.Context, query string, r promv1.Range, opts ...promv1.Option) (model.Value, promv1.Warnings, promv1.Infos, error) {
	if len(opts) > 0 {
		return nil, nil, nil, errors.New("range query options are not supported")
	}
	var m model.Matrix
	warnings, err := c.QueryRangeSeries(ctx, query, r, func(s *model.SampleStream) error {
		series := &model.SampleStream{Metric: s.Metric}
		if len(s.Values) > 0 {
			series.Values = slices.Clone(s.Values)
		}
		m = append(m, series)
		return nil
	})
	if err != nil {
		return nil, warnings, nil, err
	}
	if m == nil {
		m = model.Matrix{}
	}
	return m, warnings, nil, nil
}

// QueryRangeSeries runs a range query and hands over its series one at a
// time; see SeriesQuerier. It sends the query in a POST form, and again
// as a GET when the server refuses POST (403, 405 or 501), as the client
// library does. It asks for no partial answer (partial_response=false,
// which Thanos reads and the others ignore): a store that cannot be
// reached then fails the query instead of leaving its series out.
func (c *Client) QueryRangeSeries(ctx context.Context, query string, r promv1.Range, each func(*model.SampleStream) error) (promv1.Warnings, error) {
	form := url.Values{
		"query": {query},
		"start": {formatTime(r.Start)},
		"end":   {formatTime(r.End)},
		"step":  {strconv.FormatFloat(r.Step.Seconds(), 'f', -1, 64)},
		// Thanos' default may be to answer what the reachable stores hold.
		"partial_response": {"false"},
	}
	resp, err := c.post(ctx, c.endpoint, form)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	a, err := readAnswer(resp, each)
	c.logInfos(ctx, a.infos)
	return a.warnings, err
}

// logInfos logs an answer's infos.
func (c *Client) logInfos(ctx context.Context, infos []string) {
	if len(infos) > 0 {
		c.log.InfoContext(ctx, "prometheus answered with infos", "infos", len(infos), "first", cleanWarning(infos[0]))
	}
}

// maxSeriesAnswer bounds the answer of a series listing, decompressed:
// label sets only, a few hundred bytes each, so that 64 MiB are well over
// 100,000 series. A listing that matches more fails rather than fill
// the job's memory.
const maxSeriesAnswer = 64 << 20

// Series lists the label sets of the series that match any of matches
// and have samples between start and end (either left out when zero), as
// Prometheus's client library does: Prometheus answers from its index,
// without reading a sample. It sends the request in a POST form, and
// again as a GET when the server refuses POST, as QueryRangeSeries does;
// its errors are those of QueryRangeSeries, and an answer of more than
// maxSeriesAnswer bytes is one. Options are not supported.
func (c *Client) Series(ctx context.Context, matches []string, start, end time.Time, opts ...promv1.Option) ([]model.LabelSet, promv1.Warnings, promv1.Infos, error) {
	if len(opts) > 0 {
		return nil, nil, nil, errors.New("series options are not supported")
	}
	form := url.Values{"match[]": slices.Clone(matches), "partial_response": {"false"}}
	if !start.IsZero() {
		form.Set("start", formatTime(start))
	}
	if !end.IsZero() {
		form.Set("end", formatTime(end))
	}
	resp, err := c.post(ctx, c.series, form)
	if err != nil {
		return nil, nil, nil, err
	}
	defer resp.Body.Close()
	resp.Body = &boundedBody{ReadCloser: resp.Body, left: maxSeriesAnswer}
	var sets []model.LabelSet
	a, err := readEnvelope(resp, func(d *decoder, _ *answer) error {
		var err error
		sets, err = d.labelSets()
		return err
	})
	c.logInfos(ctx, a.infos)
	if err != nil {
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusNotImplemented {
			err = unserved{err}
		}
		return nil, a.warnings, a.infos, err
	}
	return sets, a.warnings, a.infos, nil
}

// ErrSeriesUnsupported is wrapped by the error of Series when the server
// does not serve the series endpoint (404 or 501), as some gateways in
// front of Prometheus-compatible stores do not.
var ErrSeriesUnsupported = errors.New("the series endpoint is not served")

// unserved is the error of a series listing the server does not serve:
// the client library's error, which it also is, as ErrSeriesUnsupported.
type unserved struct{ err error }

func (e unserved) Error() string   { return e.err.Error() }
func (e unserved) Unwrap() []error { return []error{e.err, ErrSeriesUnsupported} }

// errAnswerTooLarge is the error of an answer longer than its bound.
var errAnswerTooLarge = fmt.Errorf("the answer is larger than %d MiB", maxSeriesAnswer>>20)

// boundedBody reads an answer's body up to left bytes, and fails with
// errAnswerTooLarge when more follow.
type boundedBody struct {
	io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		if n, err := b.ReadCloser.Read(one[:]); n == 0 {
			return 0, err
		}
		return 0, errAnswerTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// post sends form to endpoint in a POST, and again as a GET when the
// server refuses POST (403, 405 or 501), as the client library does.
func (c *Client) post(ctx context.Context, endpoint *url.URL, form url.Values) (*http.Response, error) {
	resp, err := c.send(ctx, endpoint, http.MethodPost, form)
	if err == nil {
		switch resp.StatusCode {
		case http.StatusForbidden, http.StatusMethodNotAllowed, http.StatusNotImplemented:
			resp.Body.Close()
			resp, err = c.send(ctx, endpoint, http.MethodGet, form)
		}
	}
	return resp, err
}

func (c *Client) send(ctx context.Context, endpoint *url.URL, method string, form url.Values) (*http.Response, error) {
	u := *endpoint
	var body io.Reader
	if method == http.MethodGet {
		u.RawQuery = form.Encode()
	} else {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		// A query changes nothing: the transport may send it again on a
		// connection that closed under it.
		req.Header["Idempotency-Key"] = nil
	}
	return c.http.Do(req)
}

// maxErrorDetail bounds how much of an error answer is read: an error of
// the API is short, and the detail of another is kept for debugging.
const maxErrorDetail = 64 << 10

// readAnswer decodes the answer of a range query, handing its series to
// each; the answer holds its warnings and infos.
func readAnswer(resp *http.Response, each func(*model.SampleStream) error) (answer, error) {
	a, err := readEnvelope(resp, func(d *decoder, a *answer) error { return d.data(a, each) })
	switch {
	case err != nil:
		return a, err
	case a.resultType == "":
		return a, &promv1.Error{Type: promv1.ErrBadResponse, Msg: "answer without a result"}
	case a.resultType != model.ValMatrix.String():
		return a, fmt.Errorf("got %s, want a matrix", a.resultType)
	}
	return a, nil
}

// readEnvelope decodes an answer of the API, reading its data with data,
// and returns the API's error, or the client library's for an answer
// that is not the API's.
func readEnvelope(resp *http.Response, data func(*decoder, *answer) error) (answer, error) {
	code := resp.StatusCode
	if code/100 != 2 {
		// Prometheus answers 400 and 422 with an error of the API; other
		// codes come from it or from what stands in front of it.
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorDetail))
		typ, msg := errorFor(code)
		if code != http.StatusBadRequest && code != http.StatusUnprocessableEntity {
			return answer{}, &promv1.Error{Type: typ, Msg: msg, Detail: string(body)}
		}
		// The data of an error does not matter.
		a, err := decodeEnvelope(bytes.NewReader(body), func(d *decoder, _ *answer) error { return d.skip() })
		switch {
		case err != nil:
			return answer{}, &promv1.Error{Type: typ, Msg: msg, Detail: string(body)}
		case a.status == "success":
			return a, &promv1.Error{Type: promv1.ErrBadResponse, Msg: "inconsistent body for response code"}
		}
		if a.errorType == "" {
			a.errorType = string(promv1.ErrClient)
		}
		if a.errorMsg == "" {
			a.errorMsg = fmt.Sprintf("client error: %d", code)
		}
		return a, &promv1.Error{Type: promv1.ErrorType(a.errorType), Msg: a.errorMsg}
	}
	a, err := decodeEnvelope(resp.Body, data)
	switch {
	case errors.Is(err, errSyntax):
		return a, &promv1.Error{Type: promv1.ErrBadResponse, Msg: err.Error()}
	case err != nil:
		return a, fmt.Errorf("reading the answer: %w", err)
	case a.status == "error":
		return a, &promv1.Error{Type: promv1.ErrorType(a.errorType), Msg: a.errorMsg}
	}
	return a, nil
}

// errorFor is the type and message of an error answer that is not the
// API's, as the client library makes them.
func errorFor(code int) (promv1.ErrorType, string) {
	switch code / 100 {
	case 4:
		return promv1.ErrClient, fmt.Sprintf("client error: %d", code)
	case 5:
		return promv1.ErrServer, fmt.Sprintf("server error: %d", code)
	}
	return promv1.ErrBadResponse, fmt.Sprintf("bad response code %d", code)
}

// formatTime formats t as the client library does: seconds, with as many
// decimals as it needs.
func formatTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.Unix())+float64(t.Nanosecond())/1e9, 'f', -1, 64)
}
