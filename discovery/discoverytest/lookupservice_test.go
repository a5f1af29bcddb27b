package discoverytest

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/mcast"
	"github.com/jinid/jinid/discovery/unicast"
	"github.com/jinid/jinid/internal/rig/netlab"
)

// Per WIRE.md: a request naming groups is answered only by lookup services
// in one of them, and never by a lookup service whose ServiceID it lists.
func TestRequestFiltering(t *testing.T) {
	t.Parallel()
	for _, version := range []int{1, 2} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			t.Parallel()
			requestFiltering(t, version)
		})
	}
}

func requestFiltering(t *testing.T, version int) {
	lab := netlab.New(t)
	lan := lab.LAN()
	client, lh := lab.Host("client"), lab.Host("lus")
	cl := client.Attach(lan)
	lh.Attach(lan)
	id := discovery.ServiceID{7}
	l, err := StartLookupService(LookupServiceConfig{Version: version, ServiceID: id, Groups: []string{"lab", "ops"}, Namespace: lh.Namespace(), Announce: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	host, err := mcast.NewNetlinkHost(mcast.HostConfig{Namespace: client.Namespace(), NoIPv6: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Shutdown(context.Background()) })
	if err := host.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	tr, err := host.Open(mcast.PortConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var ln net.Listener
	if err := client.Namespace().Do(func() error { ln, err = net.Listen("tcp", ":0"); return err }); err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	answered := make(chan *unicast.Response, 10)
	accepting := make(chan struct{})
	go func() {
		defer close(accepting)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			resp, err := unicast.Discover(t.Context(), c, version)
			c.Close()
			if err == nil {
				select {
				case answered <- resp:
				default: // more than asked for: the check that asked fails anyway
				}
			}
		}
	}()
	t.Cleanup(func() { ln.Close(); <-accepting })
	ask := func(groups []string, known []discovery.ServiceID, expect bool) bool {
		for len(answered) > 0 {
			<-answered
		}
		err := tr.Send(mcast.Requests, func(mcast.Joined) ([][]byte, error) {
			r := discovery.Request{Version: version, Port: port, Groups: groups, Known: known}
			if version == 2 {
				r.Host = cl.IPv4.String()
			}
			return r.Encode(512)
		})
		if err != nil {
			t.Fatal(err)
		}
		wait := 700 * time.Millisecond // long enough to see a wrong answer
		if expect {
			wait = 5 * time.Second // however busy the machine is
		}
		select {
		case <-answered:
			return true
		case <-time.After(wait):
			return false
		}
	}
	for _, tc := range []struct {
		name   string
		groups []string
		known  []discovery.ServiceID
		want   bool
	}{
		{"any group", nil, nil, true},
		{"one of its groups", []string{"elsewhere", "ops"}, nil, true},
		{"none of its groups", []string{"elsewhere"}, nil, false},
		{"the public group only", []string{""}, nil, false},
		{"its ServiceID known", nil, []discovery.ServiceID{{1}, id}, false},
		{"its group, but known", []string{"lab"}, []discovery.ServiceID{id}, false},
		{"others known", []string{"lab"}, []discovery.ServiceID{{1}}, true},
	} {
		if got := ask(tc.groups, tc.known, tc.want); got != tc.want {
			t.Errorf("v%d %s: answered=%v, want %v", version, tc.name, got, tc.want)
		}
	}
}
