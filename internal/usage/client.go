package usage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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
	endpoint *url.URL
	http     *http.Client
}

var (
	_ RangeQuerier  = (*Client)(nil)
	_ SeriesQuerier = (*Client)(nil)
)

// NewClient returns a Client of the API at address (e.g.
// http://prometheus:9090, or with a path prefix), sending requests with
// client; http.DefaultClient when nil.
func NewClient(address string, client *http.Client) (*Client, error) {
	u, err := url.Parse(address)
	if err != nil {
		return nil, err
	}
	if client == nil {
		client = http.DefaultClient
	}
	u.Path = path.Join(strings.TrimRight(u.Path, "/"), "/api/v1/query_range")
	return &Client{endpoint: u, http: client}, nil
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
// library does.
func (c *Client) QueryRangeSeries(ctx context.Context, query string, r promv1.Range, each func(*model.SampleStream) error) (promv1.Warnings, error) {
	form := url.Values{
		"query": {query},
		"start": {formatTime(r.Start)},
		"end":   {formatTime(r.End)},
		"step":  {strconv.FormatFloat(r.Step.Seconds(), 'f', -1, 64)},
	}
	resp, err := c.send(ctx, http.MethodPost, form)
	if err == nil {
		switch resp.StatusCode {
		case http.StatusForbidden, http.StatusMethodNotAllowed, http.StatusNotImplemented:
			resp.Body.Close()
			resp, err = c.send(ctx, http.MethodGet, form)
		}
	}
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return readAnswer(resp, each)
}

func (c *Client) send(ctx context.Context, method string, form url.Values) (*http.Response, error) {
	u := *c.endpoint
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

// readAnswer decodes an answer of the API, handing its series to each.
func readAnswer(resp *http.Response, each func(*model.SampleStream) error) (promv1.Warnings, error) {
	code := resp.StatusCode
	if code/100 != 2 {
		// Prometheus answers 400 and 422 with an error of the API; other
		// codes come from it or from what stands in front of it.
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorDetail))
		typ, msg := errorFor(code)
		if code != http.StatusBadRequest && code != http.StatusUnprocessableEntity {
			return nil, &promv1.Error{Type: typ, Msg: msg, Detail: string(body)}
		}
		a, err := decodeAnswer(bytes.NewReader(body), func(*model.SampleStream) error { return nil })
		switch {
		case err != nil:
			return nil, &promv1.Error{Type: typ, Msg: msg, Detail: string(body)}
		case a.status == "success":
			return a.warnings, &promv1.Error{Type: promv1.ErrBadResponse, Msg: "inconsistent body for response code"}
		}
		if a.errorType == "" {
			a.errorType = string(promv1.ErrClient)
		}
		if a.errorMsg == "" {
			a.errorMsg = fmt.Sprintf("client error: %d", code)
		}
		return a.warnings, &promv1.Error{Type: promv1.ErrorType(a.errorType), Msg: a.errorMsg}
	}
	a, err := decodeAnswer(resp.Body, each)
	switch {
	case errors.Is(err, errSyntax):
		return a.warnings, &promv1.Error{Type: promv1.ErrBadResponse, Msg: err.Error()}
	case err != nil:
		return a.warnings, fmt.Errorf("reading the answer: %w", err)
	case a.status == "error":
		return a.warnings, &promv1.Error{Type: promv1.ErrorType(a.errorType), Msg: a.errorMsg}
	case a.resultType == "":
		return a.warnings, &promv1.Error{Type: promv1.ErrBadResponse, Msg: "answer without a result"}
	case a.resultType != model.ValMatrix.String():
		return a.warnings, fmt.Errorf("got %s, want a matrix", a.resultType)
	}
	return a.warnings, nil
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
