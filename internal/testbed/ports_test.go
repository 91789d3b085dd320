package testbed

import (
	"errors"
	"net"
	"strconv"
	"testing"
)

func TestFreePortsAreBelowTheEphemeralRange(t *testing.T) {
	ports, err := FreePorts(20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p < portRangeStart || p >= portRangeEnd || seen[p] {
			t.Errorf("port %d: outside [%d, %d) or repeated", p, portRangeStart, portRangeEnd)
		}
		seen[p] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Errorf("port %d is not free: %v", p, err)
			continue
		}
		l.Close()
	}
}

func TestStartWithRetry(t *testing.T) {
	clash := errors.New("start etcd: listen tcp 127.0.0.1:20001: bind: address already in use")
	tests := []struct {
		name      string
		failures  int
		failWith  error
		wantCalls int
		wantErr   bool
	}{
		{name: "first try", failures: 0, wantCalls: 1},
		{name: "port taken twice", failures: 2, failWith: clash, wantCalls: 3},
		{name: "port taken every time", failures: 5, failWith: clash, wantCalls: 3, wantErr: true},
		{name: "other errors are not retried", failures: 5, failWith: errors.New("etcd: data dir locked"), wantCalls: 1, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			_, err := startWithRetry(func() (int, error) {
				calls++
				if calls <= tt.failures {
					return 0, tt.failWith
				}
				return 1, nil
			})
			if calls != tt.wantCalls || (err != nil) != tt.wantErr {
				t.Errorf("calls = %d, error = %v; want %d calls, error %v", calls, err, tt.wantCalls, tt.wantErr)
			}
		})
	}
}
