//go:build !jinid_omit_tools

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/manager"
)

func TestWatchFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"discover", "--announce-interval", "5s", "--no-multicast", "--locator", "jini://127.0.0.1:1"}, "--announce-interval applies to --watch only"},
		{[]string{"discover", "--watch", "--announce-interval", "0s"}, "--announce-interval 0s: must be positive"},
		{[]string{"discover", "--watch", "--dns-sd"}, "--dns-sd applies to one-shot discovery, not to --watch"},
		{[]string{"discover", "--watch", "--no-multicast"}, "--no-multicast leaves nothing to do without --locator"},
		{[]string{"discover", "--watch", "--timeout", "-1s", "--no-multicast", "--locator", "jini://127.0.0.1:1"}, "--timeout -1s: must be positive"},
	} {
		_, _, err := run(t, nil, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.args, err, c.want)
		}
	}
}

// TestWatchPrinter checks the text line of each kind of event.
func TestWatchPrinter(t *testing.T) {
	at := time.Date(2026, 11, 21, 10, 0, 0, 123_000_000, time.UTC)
	loc := discovery.Locator{Host: "10.0.0.2", Port: 4160}
	jinid := discovery.LookupService{ID: discovery.ServiceID{1}, Host: "10.0.0.1", Port: 4160, Groups: []string{"", "lab"}, Interface: "eth0",
		Registrar: discovery.Registrar{Descriptor: &discovery.Descriptor{APIURL: "http://10.0.0.1:4162"}}}
	java := discovery.LookupService{ID: discovery.ServiceID{2}, Host: "10.0.0.2", Port: 4160, Groups: []string{},
		Registrar: discovery.Registrar{Marshalled: make([]byte, 377)}}
	var b strings.Builder
	p := &eventPrinter{w: &b}
	p.print(manager.Event{Event: discovery.Event{Kind: discovery.Discovered, At: at, LookupService: jinid}, ByGroup: true})
	p.print(manager.Event{Event: discovery.Event{Kind: discovery.Changed, At: at, LookupService: java, Locator: &loc}, ByLocator: true})
	p.print(manager.Event{Event: discovery.Event{Kind: discovery.Discarded, At: at, LookupService: jinid, Reason: discovery.ReasonCommunication}})
	custom := java
	custom.ID, custom.StandIn, custom.Groups = discovery.ServiceID{0xa5}, discovery.ServiceID{0xa5}, []string{"lab"}
	p.print(manager.Event{Event: discovery.Event{Kind: discovery.Discarded, At: at, LookupService: custom, Reason: discovery.ReasonIdentified}, ByGroup: true})
	v6 := jinid
	v6.Host, v6.Groups = "fe80::1%eth0", []string{"lab"}
	p.print(manager.Event{Event: discovery.Event{Kind: discovery.Changed, At: at, LookupService: v6}, ByGroup: true})
	v6.Groups = []string{}
	p.print(manager.Event{Event: discovery.Event{Kind: discovery.Discarded, At: at, LookupService: v6, Reason: discovery.ReasonNoInterest}, ByGroup: true})
	want := `2026-11-21T10:00:00.123Z  discovered  01000000-0000-0000-0000-000000000000  10.0.0.1:4160  groups=(public),lab  interface=eth0  by=group  jinid http://10.0.0.1:4162
2026-11-21T10:00:00.123Z  gone        02000000-0000-0000-0000-000000000000  10.0.0.2:4160  groups=(none)  by=locator  java (proxy 377 bytes)
2026-11-21T10:00:00.123Z  discarded   01000000-0000-0000-0000-000000000000  10.0.0.1:4160  groups=(public),lab  interface=eth0  reason=communication  jinid http://10.0.0.1:4162
2026-11-21T10:00:00.123Z  discarded   a5000000-0000-0000-0000-000000000000  10.0.0.2:4160  groups=lab  by=group  reason=identified  stand-in  java (proxy 377 bytes)
2026-11-21T10:00:00.123Z  changed     01000000-0000-0000-0000-000000000000  [fe80::1%eth0]:4160  groups=lab  interface=eth0  by=group  jinid http://10.0.0.1:4162
2026-11-21T10:00:00.123Z  gone        01000000-0000-0000-0000-000000000000  [fe80::1%eth0]:4160  groups=(none)  interface=eth0  by=group  reason=no-interest  jinid http://10.0.0.1:4162
`
	if b.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", b.String(), want)
	}
}
