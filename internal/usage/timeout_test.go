package usage

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// hangingAPI never answers: each query waits until its context ends and
// then fails with err(ctx), as an HTTP client does.
type hangingAPI struct {
	err          func(ctx context.Context) error
	hadDeadline  bool
	deadlineLeft time.Duration
}

func (h *hangingAPI) QueryRange(ctx context.Context, _ string, _ promv1.Range, _ ...promv1.Option) (model.Value, promv1.Warnings, promv1.Infos, error) {
	if d, ok := ctx.Deadline(); ok {
		h.hadDeadline, h.deadlineLeft = true, time.Until(d)
	}
	<-ctx.Done()
	return nil, nil, nil, h.err(ctx)
}

func TestQueryTimeout(t *testing.T) {
	errCutShort := errors.New("run deadline of 200ms exceeded")
	ctxErr := func(ctx context.Context) error { return ctx.Err() }
	tests := []struct {
		name string
		// timeout is the reader's query timeout.
		timeout time.Duration
		// ctx is the caller's context.
		ctx func(t *testing.T) context.Context
		// err is what the API returns once the query's context ended.
		err     func(ctx context.Context) error
		wantIs  []error
		wantNot []error
		wantMsg string
	}{
		{name: "query times out", timeout: 100 * time.Millisecond, ctx: func(*testing.T) context.Context { return context.Background() },
			err: ctxErr, wantIs: []error{context.DeadlineExceeded}, wantNot: []error{context.Canceled},
			wantMsg: "querying cpu in namespace shop: no answer within 100ms: context deadline exceeded"},
		{name: "client error that does not say it timed out", timeout: 100 * time.Millisecond,
			ctx:    func(*testing.T) context.Context { return context.Background() },
			err:    func(context.Context) error { return errors.New("net/http: request canceled") },
			wantIs: []error{context.DeadlineExceeded}, wantMsg: "no answer within 100ms"},
		{name: "caller's deadline names its cause", timeout: time.Hour,
			ctx: func(t *testing.T) context.Context {
				ctx, cancel := context.WithTimeoutCause(context.Background(), 200*time.Millisecond, errCutShort)
				t.Cleanup(cancel)
				return ctx
			},
			err: ctxErr, wantIs: []error{errCutShort}, wantMsg: "querying cpu in namespace shop: run deadline of 200ms exceeded"},
		{name: "caller cancelled is not a timeout", timeout: time.Hour,
			ctx: func(t *testing.T) context.Context {
				ctx, cancel := context.WithCancelCause(context.Background())
				time.AfterFunc(100*time.Millisecond, func() { cancel(context.Canceled) })
				t.Cleanup(func() { cancel(nil) })
				return ctx
			},
			err: ctxErr, wantIs: []error{context.Canceled}, wantNot: []error{context.DeadlineExceeded}, wantMsg: "context canceled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := &hangingAPI{err: tt.err}
			r := NewReader(api, WithQueryTimeout(tt.timeout), WithOwnership(false))
			start := time.Now()
			_, err := r.Read(tt.ctx(t), "shop", []WorkloadRef{{Kind: "Deployment", Namespace: "shop", Name: "web"}})
			// Generous: the bound is 100ms or 200ms.
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("Read() took %s", took)
			}
			if err == nil {
				t.Fatal("Read() of a Prometheus that never answers succeeded")
			}
			for _, target := range tt.wantIs {
				if !errors.Is(err, target) {
					t.Errorf("Read() error = %v, want it to be %v", err, target)
				}
			}
			for _, target := range tt.wantNot {
				if errors.Is(err, target) {
					t.Errorf("Read() error = %v, want it not to be %v", err, target)
				}
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("Read() error = %q, want it to contain %q", err, tt.wantMsg)
			}
			if !api.hadDeadline || api.deadlineLeft > tt.timeout {
				t.Errorf("query context deadline %v (set %v), want one within the %s timeout", api.deadlineLeft, api.hadDeadline, tt.timeout)
			}
		})
	}
}

func TestNoQueryTimeout(t *testing.T) {
	api := &hangingAPI{err: func(ctx context.Context) error { return ctx.Err() }}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	r := NewReader(api, WithQueryTimeout(0), WithOwnership(false))
	if _, err := r.Read(ctx, "shop", []WorkloadRef{{Kind: "Deployment", Namespace: "shop", Name: "web"}}); !errors.Is(err, context.Canceled) {
		t.Errorf("Read() error = %v, want the caller's cancellation", err)
	}
	if api.hadDeadline {
		t.Errorf("a query had a deadline with WithQueryTimeout(0)")
	}
}
