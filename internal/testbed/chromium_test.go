package testbed

import "testing"

func TestWithoutDBus(t *testing.T) {
	log := "[1:2:1127/193222.017707:ERROR:dbus/bus.cc:405] Failed to connect to the bus\n" +
		"[1:1:1127/193222.100000:ERROR:net/socket.cc:10] connection refused\n" +
		"[1:2:1127/193222.766007:ERROR:dbus/object_proxy.cc:572] Failed to call method"
	if got, want := withoutDBus(log), "[1:1:1127/193222.100000:ERROR:net/socket.cc:10] connection refused"; got != want {
		t.Errorf("withoutDBus() = %q, want %q", got, want)
	}
}
