package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/internal/netlab"
	"github.com/jinid/jinid/internal/riverpeer"
	"github.com/jinid/jinid/services/api/client"
)

// TestRealReggieIsOneLookupService: a real Java lookup service (Reggie,
// JGDMS) answers requests in both protocol versions with different
// proxies and announces in version 2 only, always with sequence number 0.
// `jinid discover --watch` and the lookup discovery service each see one
// lookup service: discovered once (under a stand-in ServiceID, as a Java
// proxy hides its own), identified with Reggie's ServiceID by its first
// announcement, kept while it announces, and discarded once, under that
// ServiceID, when it is killed (issue 13, item 9).
func TestRealReggieIsOneLookupService(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	riverpeer.Java(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	rh, wh, dh := lab.Host("reggie"), lab.Host("watcher"), lab.Host("lds")
	rl := rh.Attach(lan)
	wl := wh.Attach(lan)
	dl := dh.Attach(lan)
	const interval = time.Second
	reggie := riverpeer.StartReggie(t, rh, rl.IPv4, "multicastAnnouncementInterval=1000L")
	rid := reggie.ServiceID

	// The lookup discovery service in a daemon of its own (its own lookup
	// service in another group), a registration for group "lab" with a
	// listener in the watcher's host.
	jinidtest.LabDaemon(t, bin, dh, "--groups", "other", "--no-dns-sd", "--lds-announce-interval", interval.String())
	sink := jinidtest.NewSink(t, wh, wl.IPv4.String())
	c := jinidtest.LabClient(t, wh, "http://"+dl.IPv4.String()+":4162")
	ctx := context.Background()
	reg, err := c.LDSRegister(ctx, client.LDSRequest{Groups: []string{"lab"}, Listener: sink.URL + "/reggie", Duration: 600_000})
	if err != nil {
		t.Fatal(err)
	}
	w := startWatch(t, bin, wh, "--groups", "lab", "--announce-interval", interval.String())

	first := w.next(t, "discovered", 20*time.Second)
	if first.Kind != "java" || !first.IDFromProxy {
		t.Fatalf("discovered %+v, want a Java lookup service under a stand-in ServiceID", first.watchLine)
	}
	if id := w.next(t, "identified", 10*time.Second); id.ServiceID != rid || id.StandIn != first.ServiceID {
		t.Fatalf("identified %s from %s, want %s from %s", id.ServiceID, id.StandIn, rid, first.ServiceID)
	}
	var e ldsEvent
	sink.Next(t, "/reggie", 10*time.Second, &e)
	if e.Discarded || len(e.Registrars) != 1 || e.Registrars[0].Kind != "java" {
		t.Fatalf("LDS event %+v, want one Java lookup service discovered", e)
	}

	// Announcing with sequence 0 every second: kept, nothing reported,
	// over more than a discard window (3 intervals).
	w.none(t, 4*interval)
	if n := sink.Pending("/reggie"); n > 0 {
		t.Fatalf("%d unexpected LDS events", n)
	}
	regs, err := c.LDSRegistrars(ctx, reg.ID)
	if err != nil || len(regs) != 1 || regs[0].ServiceID != rid || regs[0].IDFromProxy {
		t.Fatalf("getRegistrars: %+v, %v; want one, %s", regs, err, rid)
	}

	// Killed: no more announcements, no answer: discarded once, under
	// its ServiceID, by both.
	reggie.Kill()
	if d := w.next(t, "discarded", 10*time.Second); d.ServiceID != rid || d.Reason != "communication" {
		t.Fatalf("discarded %s (%s), want %s (communication)", d.ServiceID, d.Reason, rid)
	}
	var gone ldsEvent
	sink.Next(t, "/reggie", 10*time.Second, &gone)
	if !gone.Discarded || !slices.Equal(gone.ids(), []string{rid}) {
		t.Fatalf("LDS event: discarded=%v %v, want %s discarded", gone.Discarded, gone.ids(), rid)
	}
	w.none(t, 2*interval)
}
