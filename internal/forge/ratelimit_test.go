package forge

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// answers is a RoundTripper that gives its responses in turn and counts
// the requests it was sent.
type answers struct {
	resps []*http.Response
	sent  int
}

func (a *answers) RoundTrip(*http.Request) (*http.Response, error) {
	r := a.resps[min(a.sent, len(a.resps)-1)]
	a.sent++
	return r, nil
}

func answer(status int, header map[string]string, body string) *http.Response {
	h := http.Header{}
	for k, v := range header {
		h.Set(k, v)
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body))}
}

// clock is a fake time: sleeping moves it on.
type clock struct {
	t     time.Time
	slept []time.Duration
}

func (c *clock) now() time.Time { return c.t }
func (c *clock) sleep(_ context.Context, d time.Duration) error {
	c.slept = append(c.slept, d)
	c.t = c.t.Add(d)
	return nil
}

func TestLimiter(t *testing.T) {
	start := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	ok := answer(200, nil, "{}")
	reset := func(d time.Duration) string { return strconv.FormatInt(start.Add(d).Unix(), 10) }
	tests := []struct {
		name     string
		resps    []*http.Response
		deadline time.Duration // of the request's context; 0: none
		wantSent int
		wantErr  bool
		wantWait time.Duration // slept in all
	}{
		{name: "an answer within the limits", resps: []*http.Response{ok}, wantSent: 1},
		{name: "a 429 with Retry-After is waited out", resps: []*http.Response{answer(429, map[string]string{"Retry-After": "7"}, ""), ok},
			deadline: time.Minute, wantSent: 2, wantWait: 7 * time.Second},
		{name: "GitHub's primary limit: no requests remaining until the reset", resps: []*http.Response{
			answer(403, map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset(20 * time.Second)}, `{"message":"API rate limit exceeded"}`), ok},
			deadline: time.Minute, wantSent: 2, wantWait: 20 * time.Second},
		{name: "GitHub's secondary limit by its message", resps: []*http.Response{
			answer(403, nil, `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes."}`), ok},
			deadline: 2 * time.Minute, wantSent: 2, wantWait: time.Minute},
		{name: "GitLab's 429 with its reset", resps: []*http.Response{answer(429, map[string]string{"RateLimit-Reset": reset(5 * time.Second)}, ""), ok},
			deadline: time.Minute, wantSent: 2, wantWait: 5 * time.Second},
		{name: "a wait past the deadline is not waited", resps: []*http.Response{answer(429, map[string]string{"Retry-After": "3600"}, ""), ok},
			deadline: 30 * time.Second, wantSent: 1, wantErr: true},
		{name: "a forge that keeps limiting is not asked in a loop", resps: []*http.Response{answer(429, map[string]string{"Retry-After": "1"}, "")},
			deadline: time.Minute, wantSent: maxRateLimitRetries + 1, wantErr: true, wantWait: maxRateLimitRetries * time.Second},
		{name: "a 403 that is no limit is the client's to read", resps: []*http.Response{answer(403, nil, `{"message":"Resource not accessible by integration"}`)},
			wantSent: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &clock{t: start}
			next := &answers{resps: tt.resps}
			l := &limiter{next: next, now: c.now, sleep: c.sleep}
			ctx := context.Background()
			if tt.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, start.Add(tt.deadline))
				defer cancel()
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://forge.example.com/api", nil)
			resp, err := l.RoundTrip(req)
			if next.sent != tt.wantSent || (err != nil) != tt.wantErr {
				t.Fatalf("sent %d, error %v; want %d sent, error %v", next.sent, err, tt.wantSent, tt.wantErr)
			}
			if tt.wantErr && !errors.Is(err, ErrRateLimited) {
				t.Errorf("error %v, want %v", err, ErrRateLimited)
			}
			if !tt.wantErr && resp.StatusCode == 429 {
				t.Errorf("got the limit answer through")
			}
			var slept time.Duration
			for _, d := range c.slept {
				slept += d
			}
			if slept != tt.wantWait {
				t.Errorf("slept %v, want %v", slept, tt.wantWait)
			}
		})
	}
}

// TestLimiterLeavesTheForgeAlone checks that once the forge asked for a
// wait the run cannot make, later calls fail at once, unsent, until the
// time it named; and go out again after it.
func TestLimiterLeavesTheForgeAlone(t *testing.T) {
	start := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	c := &clock{t: start}
	next := &answers{resps: []*http.Response{answer(429, map[string]string{"Retry-After": "600"}, ""), answer(200, nil, "{}")}}
	l := &limiter{next: next, now: c.now, sleep: c.sleep}
	call := func() error {
		ctx, cancel := context.WithDeadline(context.Background(), c.t.Add(30*time.Second))
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://forge.example.com/api/pulls", nil)
		_, err := l.RoundTrip(req)
		return err
	}
	if err := call(); !errors.Is(err, ErrRateLimited) || !strings.Contains(err.Error(), "12:10:00") {
		t.Fatalf("first call: %v, want rate limited until 12:10:00", err)
	}
	for range 3 {
		if err := call(); !errors.Is(err, ErrRateLimited) {
			t.Fatalf("call during the limit: %v, want %v", err, ErrRateLimited)
		}
	}
	if next.sent != 1 {
		t.Errorf("the forge was sent %d requests during its limit, want 1", next.sent)
	}
	c.t = start.Add(10*time.Minute + time.Second)
	if err := call(); err != nil || next.sent != 2 {
		t.Errorf("after the limit: %v, %d sent; want the request sent", err, next.sent)
	}
}
