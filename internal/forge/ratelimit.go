package forge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrRateLimited means the forge asked the job to wait, longer than the
// call could: no more calls go to it this run, and what they would have
// done is left for the next run.
var ErrRateLimited = errors.New("rate limited by the forge")

// maxRateLimitRetries is how many times one request waits and is sent
// again: a forge that keeps answering with a limit is not asked in a loop.
const maxRateLimitRetries = 2

// defaultLimitWait is the wait a limit answer that names none asks for:
// GitHub's advice for its secondary limits is at least a minute.
const defaultLimitWait = time.Minute

// limiter is an http.RoundTripper that honours a forge's rate limits: a
// 429, or a 403 that says a limit was hit (GitHub's x-ratelimit-remaining
// of 0, a Retry-After, its secondary limit's message), is waited out and
// the request sent again when the wait ends before the request's context
// does; otherwise the forge is left alone until the time it named, and
// every request until then fails with ErrRateLimited without being sent.
type limiter struct {
	next  http.RoundTripper
	now   func() time.Time
	sleep func(context.Context, time.Duration) error

	mu    sync.Mutex
	until time.Time // no request before it
}

// newLimiter returns a limiter over next, http.DefaultTransport if nil.
func newLimiter(next http.RoundTripper) *limiter {
	if next == nil {
		next = http.DefaultTransport
	}
	return &limiter{next: next, now: time.Now, sleep: sleepCtx}
}

func (l *limiter) RoundTrip(req *http.Request) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		if err := l.blocked(req.Context()); err != nil {
			return nil, err
		}
		resp, err := l.next.RoundTrip(req)
		if err != nil {
			return resp, err
		}
		wait, limited := limitOf(resp, l.now())
		if !limited {
			return resp, nil
		}
		drain(resp)
		l.mu.Lock()
		l.until = later(l.until, l.now().Add(wait))
		l.mu.Unlock()
		if attempt == maxRateLimitRetries || !replayable(req) {
			return nil, l.limitedErr(resp.StatusCode)
		}
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			req.Body = body
		}
	}
}

// blocked waits for the forge's limit to end when that fits in ctx, and
// returns ErrRateLimited when it does not.
func (l *limiter) blocked(ctx context.Context) error {
	l.mu.Lock()
	until := l.until
	l.mu.Unlock()
	wait := until.Sub(l.now())
	if wait <= 0 {
		return nil
	}
	if deadline, ok := ctx.Deadline(); ok && l.now().Add(wait).After(deadline) {
		return l.limitedErr(0)
	}
	return l.sleep(ctx, wait)
}

// limitedErr says until when the forge is limited.
func (l *limiter) limitedErr(status int) error {
	l.mu.Lock()
	until := l.until
	l.mu.Unlock()
	why := "the forge asked to wait"
	if status != 0 {
		why = fmt.Sprintf("the forge answered %d", status)
	}
	return fmt.Errorf("%w: %s until %s, past the call's deadline", ErrRateLimited, why, until.UTC().Format(time.RFC3339))
}

// limitOf says whether resp is a rate limit answer, and how long it asks
// to wait.
func limitOf(resp *http.Response, now time.Time) (time.Duration, bool) {
	h := resp.Header
	switch resp.StatusCode {
	case http.StatusTooManyRequests:
	case http.StatusForbidden:
		// GitHub answers its limits with 403: the primary one with no
		// requests remaining, the secondary one with a Retry-After or a
		// message saying so.
		if h.Get("X-Ratelimit-Remaining") != "0" && h.Get("Retry-After") == "" && !secondaryLimit(resp) {
			return 0, false
		}
	default:
		return 0, false
	}
	if s := h.Get("Retry-After"); s != "" {
		if secs, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && secs >= 0 {
			return time.Duration(secs) * time.Second, true
		}
		if t, err := http.ParseTime(s); err == nil {
			return max(t.Sub(now), 0), true
		}
	}
	// GitHub's X-RateLimit-Reset, GitLab's RateLimit-Reset: Unix seconds.
	for _, name := range []string{"X-Ratelimit-Reset", "Ratelimit-Reset"} {
		if secs, err := strconv.ParseInt(strings.TrimSpace(h.Get(name)), 10, 64); err == nil && secs > 0 {
			return max(time.Unix(secs, 0).Sub(now), 0), true
		}
	}
	return defaultLimitWait, true
}

// secondaryLimit reports whether a 403's body is GitHub's secondary rate
// limit message; the body is put back for the client to read.
func secondaryLimit(resp *http.Response) bool {
	if resp.Body == nil {
		return false
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(data))
	return bytes.Contains(bytes.ToLower(data), []byte("secondary rate limit"))
}

// replayable reports whether req can be sent again.
func replayable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// drain reads and closes a response the caller never sees.
func drain(resp *http.Response) {
	if resp.Body != nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
