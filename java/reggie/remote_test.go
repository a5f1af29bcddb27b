package reggie

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/unicast"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/internal/rig/riverpeer"
	"github.com/jinid/jinid/java/javaio"
	"github.com/jinid/jinid/java/jeri"
	"github.com/jinid/jinid/java/lineage"
)

// A real Reggie called through Remote as a Java client calls it: an item
// registered with types and a Name is found by type and by attribute,
// by jinid and by Java's own client; a service a Java program
// registered (a dynamic proxy) is read with its types; the lease is
// renewed and cancelled, after which it is unknown.
func TestRemoteReggie(t *testing.T) {
	riverpeer.Java(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	rh, ch := lab.Host("reggie"), lab.Host("client")
	rl := rh.Attach(lan)
	ch.Attach(lan)
	reggie := riverpeer.StartReggie(t, rh, rl.IPv4)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		return ch.Namespace().DialContext(ctx, nil, network, addr)
	}
	loc, err := discovery.ParseLocator(reggie.Locator)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := unicast.DialLocator(ctx, dial, loc)
	if err != nil {
		t.Fatal(err)
	}
	r, err := codec(t).NewRemote(resp.Registrar.Marshalled, dial)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.ServiceID().String() != reggie.ServiceID {
		t.Fatalf("ServiceID %s, Reggie says %s", r.ServiceID(), reggie.ServiceID)
	}

	it := Item{ServiceID: "0b5e7e1a-4c1d-4e3f-9a1b-2c3d4e5f6a7b", Types: []string{"org.example.Printer", "org.example.Device"},
		Attributes: []Entry{{Type: "net.jini.lookup.entry.Name", Fields: map[string]any{"name": "printer-1"}}},
		Endpoint:   "ipp://10.0.0.9:631/"}
	ls, err := r.Register(ctx, it, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if ls.Granted <= 0 || ls.Granted > time.Minute {
		t.Fatalf("granted %s for a minute asked", ls.Granted)
	}
	for _, tmpl := range []Template{
		{Types: []string{"org.example.Device"}},
		{Attributes: []Entry{{Type: "net.jini.lookup.entry.Name", Fields: map[string]any{"name": "printer-1"}}}},
		{ServiceID: it.ServiceID},
	} {
		items, total, err := r.Lookup(ctx, tmpl, 10)
		if err != nil {
			t.Fatal(err)
		}
		if total != 1 || len(items) != 1 || items[0].ServiceID != it.ServiceID || items[0].Endpoint != it.Endpoint ||
			!slices.Contains(items[0].Types, "org.example.Printer") || len(items[0].Attributes) != 1 || items[0].Attributes[0].Fields["name"] != "printer-1" {
			t.Fatalf("lookup %+v: %d in all, %+v", tmpl, total, items)
		}
	}
	if items, total, err := r.Lookup(ctx, Template{Types: []string{"org.example.Scanner"}}, 10); err != nil || total != 0 || len(items) != 0 {
		t.Fatalf("a type nothing has: %v %d %v", items, total, err)
	}
	// Java's own client finds it by type.
	out, err := riverpeer.Run(t, ch, 40*time.Second, nil, "RegistrarClient", "lookup", "--locator", reggie.Locator,
		"--type", "org.example.Printer", "--want", it.ServiceID)
	if err != nil {
		t.Fatalf("Java's lookup: %v\n%s", err, out)
	}

	// A service a Java program registered, of a type the JVM defines.
	p := riverpeer.Start(t, ch, nil, "RegistrarClient", "register", "--locator", reggie.Locator, "--type", "com.example.Thermometer", "--name", "t-1", "--secs", "60")
	sid := regexp.MustCompile(`sid=(\S+)`).FindStringSubmatch(p.WaitLine(t, regexp.MustCompile(`STEP register OK`), 40*time.Second))[1]
	items, _, err := r.Lookup(ctx, Template{ServiceID: sid}, 10)
	if err != nil || len(items) != 1 {
		t.Fatalf("the Java service: %v %v", items, err)
	}
	if !slices.Contains(items[0].Types, "com.example.Thermometer") || items[0].Class != "" {
		t.Fatalf("the Java service read as %+v", items[0])
	}

	if g, err := r.Renew(ctx, ls, 2*time.Minute); err != nil || g <= 0 {
		t.Fatalf("renew: %s %v", g, err)
	}
	if err := r.Cancel(ctx, ls); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Renew(ctx, ls, time.Minute); !errors.Is(err, ErrUnknownLease) {
		t.Fatalf("renewing a cancelled lease: %v", err)
	}
	if items, _, err := r.Lookup(ctx, Template{ServiceID: it.ServiceID}, 10); err != nil || len(items) != 0 {
		t.Fatalf("cancelled, still there: %v %v", items, err)
	}
}

// BenchmarkReadMatches: what browse spends reading a Java lookup
// service's answer, per item (a lookup of 100 items with a Name and an
// endpoint each).
func BenchmarkReadMatches(b *testing.B) {
	c := codec(b)
	list := javaio.NewObject(c.l.Classes.Class("java.util.LinkedList"))
	custom := []javaio.Value{javaio.Block{0, 0, 0, 100}}
	for i := range 100 {
		o, err := c.itemRep(Item{ServiceID: fmt.Sprintf("0b5e7e1a-4c1d-4e3f-9a1b-%012d", i), Types: []string{"org.example.Printer"},
			Attributes: []Entry{{Type: "net.jini.lookup.entry.Name", Fields: map[string]any{"name": fmt.Sprintf("printer-%d", i)}}},
			Endpoint:   fmt.Sprintf("ipp://10.0.%d.%d:631/", i/250, i%250)}, nil)
		if err != nil {
			b.Fatal(err)
		}
		custom = append(custom, o)
	}
	list.SetCustom("java.util.LinkedList", custom...)
	m := c.l.New("Matches").Set("items", list).Set("totalMatches", int32(100))
	reply := append([]byte{1}, jeri.Return(func(e *javaio.Encoder) error { return e.WriteObject(m) })...)
	b.SetBytes(int64(len(reply)))
	b.ReportAllocs()
	for b.Loop() {
		d, err := c.readReply(reply)
		if err != nil {
			b.Fatal(err)
		}
		items, total, err := c.readMatches(d, 100)
		if err != nil || total != 100 || len(items) != 100 || items[99].Endpoint == "" {
			b.Fatalf("%d of %d items read: %v", len(items), total, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*100), "ns/item")
}

func codec(t testing.TB) *Codec {
	t.Helper()
	l, err := lineage.JGDMS()
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCodec(l)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A hostile lookup service's answer, small on the wire, that names one
// value again and again by back-reference: one item 250,000 times (more
// than browse asked for), or one item whose attributes are one entry
// 250,000 times. Each is refused with ErrBadReply, reading it bounded
// (before: 250,000 items and 413 MB for a 1.25 MB reply).
func TestReadMatchesAmplified(t *testing.T) {
	c := codec(t)
	item := func(attrs int) *javaio.Object {
		o, err := c.itemRep(Item{ServiceID: "0b5e7e1a-4c1d-4e3f-9a1b-000000000001", Types: []string{"org.example.Printer"},
			Attributes: []Entry{{Type: "net.jini.lookup.entry.Name", Fields: map[string]any{"name": strings.Repeat("x", 200)}}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if attrs > 0 {
			sets := Field(o, "attributeSets").(*javaio.Array)
			one := sets.Elems[0]
			sets.Elems = make([]javaio.Value, attrs)
			for i := range sets.Elems {
				sets.Elems[i] = one
			}
		}
		return o
	}
	reply := func(items ...*javaio.Object) []byte {
		list := javaio.NewObject(c.l.Classes.Class("java.util.LinkedList"))
		custom := []javaio.Value{javaio.Block{0, 0, 0, 0}}
		for _, it := range items {
			custom = append(custom, it)
		}
		list.SetCustom("java.util.LinkedList", custom...)
		m := c.l.New("Matches").Set("items", list).Set("totalMatches", int32(len(items)))
		return append([]byte{1}, jeri.Return(func(e *javaio.Encoder) error { return e.WriteObject(m) })...)
	}
	one := item(0)
	many := make([]*javaio.Object, 250_000)
	for i := range many {
		many[i] = one
	}
	for name, b := range map[string][]byte{
		"one item 250,000 times":                 reply(many...),
		"one item, one attribute 250,000 times":  reply(item(250_000)),
		"1,000 items, one attribute 5,000 times": reply(slices.Repeat([]*javaio.Object{item(5_000)}, 1000)...),
	} {
		t.Run(name, func(t *testing.T) {
			if len(b) > MaxRemoteReply {
				t.Fatalf("the reply is %d bytes, past what a Remote reads", len(b))
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			d, err := c.readReply(b)
			if err != nil {
				t.Fatal(err)
			}
			items, _, err := c.readMatches(d, MaxRemoteMatches)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrBadReply) {
				t.Errorf("%d items read from %d bytes: %v, want ErrBadReply", len(items), len(b), err)
			}
			n := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d bytes read, %d allocated", len(b), n)
			if n > 128<<20 {
				t.Errorf("reading %d bytes allocated %d", len(b), n)
			}
		})
	}
}

// The entry River's services register themselves with names its field:
// browse showed Reggie's as {"0": "Lookup"}.
func TestFieldNamesOfBasicServiceType(t *testing.T) {
	c := codec(t)
	for _, class := range []string{"org.apache.river.lookup.entry.BasicServiceType", "com.sun.jini.lookup.entry.BasicServiceType"} {
		if got := c.FieldNames(class, 1); !slices.Equal(got, []string{"type"}) {
			t.Errorf("%s's fields: %q", class, got)
		}
	}
}
