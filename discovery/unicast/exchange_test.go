package unicast

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/jinid/jinid/discovery"
)

func TestDiscoverAnswer(t *testing.T) {
	id := discovery.ServiceID{9}
	for _, version := range []int{1, 2} {
		client, server := net.Pipe()
		done := make(chan error, 1)
		go func() {
			defer server.Close()
			done <- Answer(t.Context(), server, func(q Request) (*Response, error) {
				return &Response{Version: q.Version, Format: discovery.PlaintextFormat, Host: "192.0.2.1", Port: 4160,
					Groups: []string{"a"}, Registrar: discovery.Registrar{Descriptor: &discovery.Descriptor{ServiceID: id}}}, nil
			})
		}()
		resp, err := Discover(t.Context(), client, version)
		client.Close()
		if err != nil {
			t.Fatalf("v%d: %v", version, err)
		}
		if err := <-done; err != nil {
			t.Fatalf("v%d answer: %v", version, err)
		}
		if !slices.Equal(resp.Groups, []string{"a"}) || resp.Registrar.Descriptor.ServiceID != id {
			t.Fatalf("v%d: %+v", version, resp)
		}
	}
}

func TestDiscoverTimesOut(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	go func() { // reads the request, never answers
		b := make([]byte, 100)
		server.Read(b)
	}()
	_, err := Discover(ctx, client, 2)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want a deadline", err)
	}
}

func TestAnswerNoCommonFormat(t *testing.T) {
	client, server := net.Pipe()
	go func() {
		defer server.Close()
		Answer(t.Context(), server, func(Request) (*Response, error) { t.Error("respond called"); return nil, nil })
	}()
	q, _ := Request{Version: 2, Formats: []discovery.FormatID{discovery.FormatIDOf(discovery.SSLFormatName)}}.Append(nil)
	client.Write(q)
	_, err := ReadResponse(client, DefaultMaxResponseSize)
	if !errors.Is(err, ErrNoFormat) {
		t.Fatalf("error %v, want ErrNoFormat", err)
	}
}

func TestDialable(t *testing.T) {
	ll := netip.MustParseAddrPort("[fe80::9%eth1]:4160")
	v4 := netip.MustParseAddrPort("10.0.0.9:4160")
	for _, c := range []struct {
		host string
		peer netip.AddrPort
		want string
	}{
		{"fe80::2", ll, "fe80::2%eth1"},
		{"fe80::2%en0", ll, "fe80::2%eth1"}, // a Java peer writes its own zone
		{"fe80::2", v4, "10.0.0.9"},         // reached elsewhere: a link-local address reaches nothing
		{"2001:db8::2%en0", ll, "2001:db8::2"},
		{"lookup.lan", ll, "lookup.lan"},
		{"fe80::2", netip.AddrPort{}, "fe80::2"},
	} {
		if got := dialable(c.host, c.peer); got != c.want {
			t.Errorf("dialable(%q, %s) = %q, want %q", c.host, c.peer, got, c.want)
		}
	}
}

func TestZoneURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://[fe80::2]:4162/":       "http://[fe80::2%25eth1]:4162/",
		"http://[fe80::2]/":            "http://[fe80::2%25eth1]/",
		"http://[fe80::2%25eth0]:4162": "http://[fe80::2%25eth0]:4162",
		"http://10.0.0.2:4162/":        "http://10.0.0.2:4162/",
		"http://[2001:db8::2]:4162/":   "http://[2001:db8::2]:4162/",
	} {
		if got := zoneURL(in, "eth1"); got != want {
			t.Errorf("zoneURL(%q) = %q, want %q", in, got, want)
		}
	}
}
