package discovery

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestWithZone(t *testing.T) {
	for _, c := range []struct{ host, zone, want string }{
		{"fe80::1", "eth1", "fe80::1%eth1"},
		{"fe80::1%eth0", "eth1", "fe80::1%eth1"},
		{"fe80::1%eth0", "", "fe80::1%eth0"},
		{"2001:db8::1%eth0", "eth1", "2001:db8::1"},
		{"::ffff:198.18.0.1", "eth1", "198.18.0.1"},
		{"169.254.1.1", "eth1", "169.254.1.1"},
		{"lookup.lan", "eth1", "lookup.lan"},
	} {
		if got := WithZone(c.host, c.zone); got != c.want {
			t.Errorf("WithZone(%q, %q) = %q, want %q", c.host, c.zone, got, c.want)
		}
	}
}

func TestHostPort(t *testing.T) {
	for _, c := range []struct {
		host string
		port int
		want string
	}{
		{"fe80::1%eth0", 4160, "[fe80::1%eth0]:4160"},
		{"10.0.0.1", 4160, "10.0.0.1:4160"},
		{"2001:db8::1", 0, "[2001:db8::1]:?"},
		{"lookup.lan", 4161, "lookup.lan:4161"},
	} {
		if got := HostPort(c.host, c.port); got != c.want {
			t.Errorf("HostPort(%q, %d) = %q, want %q", c.host, c.port, got, c.want)
		}
	}
}

// The order is fixed whatever order the addresses come in.
func TestCompareAddresses(t *testing.T) {
	want := []string{"2001:db8::2", "2001:db8::10", "10.0.0.2", "192.168.1.1", "fd00::1", "169.254.0.9",
		"fe80::1%eth0", "fe80::1%eth1", "fe80::2%eth0", "lookup.lan"}
	for range 20 {
		got := slices.Clone(want)
		rand.Shuffle(len(got), func(i, j int) { got[i], got[j] = got[j], got[i] })
		slices.SortFunc(got, func(a, b string) int { return CompareAddresses(a, 4160, b, 4160) })
		if !slices.Equal(got, want) {
			t.Fatalf("sorted %q, want %q", got, want)
		}
	}
	if CompareAddresses("10.0.0.1", 4160, "10.0.0.1", 4161) >= 0 {
		t.Error("same host: the lower port should come first")
	}
}
