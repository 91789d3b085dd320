package testbedtest

import (
	"net"
	"sync"
	"testing"
)

// SilentListener accepts TCP connections on loopback and never says a
// word: a hung server, whose TLS handshake never completes and whose
// requests are never answered, as behind a stalled proxy. It returns the
// listener's address; the listener and its connections close with t.
func SilentListener(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}
