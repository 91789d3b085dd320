package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// Servers a proxy stands in front of.
const (
	ServerAPI        = "apiserver"
	ServerPrometheus = "prometheus"
	ServerGit        = "git"
	// ServerForge is the forge's API, behind the same proxy as its git
	// (StartForgeProxy).
	ServerForge = "forge"
)

// Request is one request that went through a proxy, as the proxy saw it.
type Request struct {
	Server string
	Method string
	// Path and Query are the request's URL path and raw query.
	Path, Query string
	// Form holds a Prometheus request's parameters, from the query and
	// from a form body (query, start, end, step).
	Form url.Values
	// Header is the request's header, without Authorization.
	Header http.Header
	// Start is when the request arrived, End when the last byte of its
	// answer was written.
	Start, End time.Time
	Status     int
	// Bytes is the size of the answer's body as sent, compressed when it
	// was.
	Bytes int64
}

// Recorder keeps the requests of every proxy, in the order they ended.
type Recorder struct {
	mu       sync.Mutex
	requests []Request
}

func (r *Recorder) add(req Request) {
	r.mu.Lock()
	r.requests = append(r.requests, req)
	r.mu.Unlock()
}

// Requests returns the requests to server that started within [from, to),
// in the order they started.
func (r *Recorder) Requests(server string, from, to time.Time) []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Request
	for _, req := range r.requests {
		if req.Server == server && !req.Start.Before(from) && req.Start.Before(to) {
			out = append(out, req)
		}
	}
	slices.SortStableFunc(out, func(a, b Request) int { return a.Start.Compare(b.Start) })
	return out
}

// Proxy is a counting reverse proxy on a loopback port in front of one
// server: it passes every request on as it is and records it.
type Proxy struct {
	// URL is the proxy's base URL, http://127.0.0.1:<port>.
	URL    string
	server string
	// apiPrefix, when set, is the path under which requests are the
	// forge's API, recorded as ServerForge.
	apiPrefix string
	rec       *Recorder
	rp        *httputil.ReverseProxy
	srv       *http.Server
	done      chan struct{}
}

// StartProxy starts a proxy in front of upstream, sending requests through
// transport (http.DefaultTransport when nil) with header set on each, and
// records its requests in rec. Close stops it.
func StartProxy(server, upstream string, transport http.RoundTripper, header http.Header, rec *Recorder) (*Proxy, error) {
	return startProxy(server, "", upstream, transport, header, rec)
}

// StartForgeProxy starts a proxy in front of a forge that serves its git
// repositories and its API at one address, as the job reaches them: it
// records the requests under apiPrefix (Gitea's "/api/v1/") as
// ServerForge, and the others, git's smart HTTP, as ServerGit.
func StartForgeProxy(upstream, apiPrefix string, rec *Recorder) (*Proxy, error) {
	return startProxy(ServerGit, apiPrefix, upstream, nil, nil, rec)
}

func startProxy(server, apiPrefix, upstream string, transport http.RoundTripper, header http.Header, rec *Recorder) (*Proxy, error) {
	target, err := url.Parse(upstream)
	if err != nil {
		return nil, fmt.Errorf("start %s proxy: %w", server, err)
	}
	if transport == nil {
		transport = http.DefaultTransport
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start %s proxy: %w", server, err)
	}
	p := &Proxy{URL: "http://" + ln.Addr().String(), server: server, apiPrefix: apiPrefix, rec: rec, done: make(chan struct{})}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
			for k, v := range header {
				r.Out.Header[k] = v
			}
		},
		Transport: transport,
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: time.Minute}
	go func() {
		defer close(p.done)
		_ = p.srv.Serve(ln)
	}()
	return p, nil
}

// ServeHTTP passes the request on and records it once answered.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req := Request{Server: p.serverOf(r.URL.Path), Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Start: time.Now()}
	req.Header = r.Header.Clone()
	req.Header.Del("Authorization")
	if p.server == ServerPrometheus {
		req.Form = readForm(r)
	}
	cw := &countingWriter{ResponseWriter: w, status: http.StatusOK}
	p.rp.ServeHTTP(cw, r)
	req.End, req.Status, req.Bytes = time.Now(), cw.status, cw.n
	p.rec.add(req)
}

// serverOf is the server a request to path is recorded for.
func (p *Proxy) serverOf(path string) string {
	if p.apiPrefix != "" && strings.HasPrefix(path, p.apiPrefix) {
		return ServerForge
	}
	return p.server
}

// readForm returns the parameters of a Prometheus API request, from its
// URL and its form body, and leaves the body to be sent on.
func readForm(r *http.Request) url.Values {
	form := r.URL.Query()
	if r.Body == nil || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		return form
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return form
	}
	if values, err := url.ParseQuery(string(body)); err == nil {
		for k, v := range values {
			form[k] = append(form[k], v...)
		}
	}
	return form
}

// Close stops the proxy.
func (p *Proxy) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := p.srv.Shutdown(ctx)
	<-p.done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// countingWriter counts the bytes of the answer's body.
type countingWriter struct {
	http.ResponseWriter
	status int
	n      int64
}

func (w *countingWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *countingWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.n += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController flush the underlying writer.
func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
