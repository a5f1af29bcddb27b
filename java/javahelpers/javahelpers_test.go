package javahelpers

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/java/javaio"
	"github.com/jinid/jinid/java/javalookup"
	"github.com/jinid/jinid/java/jeri"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/store/storetest"
)

// testFace is the faces' shared part with a grantor on a fake clock.
func testFace(t testing.TB) (*face, *clock.Fake) {
	t.Helper()
	l, err := javalookup.JGDMS()
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.UnixMilli(1_700_000_000_000))
	g := lease.New(storetest.Open(t, t.TempDir()), clk, nil)
	id := javalookup.Identity{Object: jeri.Uuid{1, 2, 3, 4, 5, 6, 0x47, 8, 0x89, 10, 11, 12, 13, 14, 15, 16}, Port: 4170}
	f, err := newFace(Config{Lineage: l, Grantor: g, Identity: id})
	if err != nil {
		t.Fatal(err)
	}
	return f, clk
}

// Every class and method table the faces name is there: the catalogue
// and the four methods tables parse, and each class the code makes
// objects of resolves (Class panics on one missing).
func TestCataloguesAndMethods(t *testing.T) {
	f, _ := testFace(t)
	for name, table := range map[string]string{"norm": normMethods, "mercury": mercuryMethods, "fiddler": fiddlerMethods, "mahalo": mahaloMethods} {
		if f.classes.Lookup(name) == nil {
			t.Errorf("no proxy class %q", name)
		}
		if !strings.Contains(table, "method ") {
			t.Errorf("%s: empty methods table", name)
		}
	}
	for _, c := range []string{
		"org.apache.river.norm.proxy.NormProxy$ConstrainableNormProxy", "org.apache.river.norm.proxy.SetProxy$ConstrainableSetProxy",
		"org.apache.river.norm.proxy.GetLeasesResult", "[Lnet.jini.io.MarshalledInstance;", "org.apache.river.landlord.ConstrainableLandlordLease",
		"org.apache.river.landlord.Landlord$RenewResults", "net.jini.lease.ExpirationWarningEvent", "org.apache.river.lease.BasicRenewalFailureEvent",
		"org.apache.river.proxy.ThrowThis", "net.jini.core.lease.LeaseDeniedException", "java.util.HashMap",
		"org.apache.river.mercury.proxy.MailboxProxy$ConstrainableMailboxProxy", "org.apache.river.mercury.proxy.Registration$ConstrainableRegistration",
		"org.apache.river.mercury.proxy.ListenerProxy$ConstrainableListenerProxy", "org.apache.river.mercury.proxy.RemoteEventData",
		"org.apache.river.mercury.proxy.RemoteEventIteratorData", "net.jini.event.InvalidIteratorException", "java.util.ArrayList",
		"org.apache.river.fiddler.proxy.FiddlerProxy$ConstrainableFiddlerProxy", "org.apache.river.fiddler.proxy.FiddlerRegistration$ConstrainableFiddlerRegistration",
		"org.apache.river.fiddler.proxy.FiddlerLease$ConstrainableFiddlerLease", "org.apache.river.fiddler.proxy.FiddlerRenewResults",
		"net.jini.discovery.RemoteDiscoveryEvent", "[Ljava.rmi.MarshalledObject;", "[Lnet.jini.core.discovery.LookupLocator;",
		"[Lnet.jini.core.lookup.ServiceRegistrar;", "org.apache.river.mahalo.proxy.TxnMgrProxy$ConstrainableTxnMgrProxy",
		"net.jini.core.transaction.server.TransactionManager$Created", "net.jini.core.transaction.server.ServerTransaction",
		"net.jini.core.transaction.UnknownTransactionException", "net.jini.core.transaction.CannotCommitException",
		"net.jini.core.transaction.CannotAbortException", "net.jini.core.transaction.CannotJoinException",
		"net.jini.core.transaction.server.CrashCountException", "net.jini.core.transaction.TimeoutExpiredException",
	} {
		if f.classes.Lookup(c) == nil {
			t.Errorf("class %s is not in the catalogue", c)
		}
	}
}

// A landlord lease jinid hands out, as a Java client hands it back in
// renewFor, is read as the member it becomes: its grantor (the
// landlord's endpoint and object), its cookie, its expiration; the kept
// object is given back with a later expiration, the rest unchanged. A
// set's own lease, and what is not a lease jinid renews, are refused.
func TestJavaLeases(t *testing.T) {
	f, clk := testFace(t)
	n := &Norm{face: f, object: f.cfg.Identity.Derived("norm")}
	landlord := jeri.Uuid{0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x40, 1, 0x80, 2, 3, 4, 5, 6, 7, 8}
	srv := f.l.RemoteRef(f.class("mercury"), javalookup.Endpoint{Host: "198.18.0.9", Port: 40001, Object: landlord})
	const cookie = "0123456789abcdef0123456789abcdef"
	exp := clk.Now().UnixMilli() + 30_000
	ls, err := f.landlordLease(srv, landlord, cookie, exp)
	if err != nil {
		t.Fatal(err)
	}
	b, err := javaio.Encode(ls, true)
	if err != nil {
		t.Fatal(err)
	}
	v, err := javaio.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := n.readLease(t.Context(), v)
	if err != nil {
		t.Fatal(err)
	}
	if cl.Grantor != "jeri://198.18.0.9:40001/"+landlord.String() || cl.ID != "landlord/"+cookie || cl.Expiration != exp || cl.Java == nil {
		t.Fatalf("read as %+v", cl)
	}
	ref, err := parseRef(cl.ID)
	if err != nil || ref.kind != "landlord" || ref.id.String() != "01234567-89ab-cdef-0123-456789abcdef" {
		t.Fatalf("its ID read back: %+v %v", ref, err)
	}
	back, err := n.javaLease(cl.Java, exp+60_000)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := n.expiration(back); got != exp+60_000 {
		t.Errorf("given back expiring at %d, want %d", got, exp+60_000)
	}
	if c2, _ := back.Get("cookie"); c2 == nil {
		t.Error("the cookie was lost")
	}

	big, _ := f.landlordLease(javaio.NewObject(srv.Class).Set("h", mustGet(srv, "h")), landlord, cookie, exp)
	big.Set("methodConstraints", strings.Repeat("x", maxJavaLease))
	own, _ := f.landlordLease(n.server("198.18.0.1"), n.object, cookie, exp)
	for name, v := range map[string]javaio.Value{"null": nil, "a String": "lease", "a set's own lease": own,
		"a Uuid": f.l.Uuid(landlord), "a lease of 16 KiB and more": big} {
		_, err := n.readLease(t.Context(), v)
		if !fault.Is(err, apitypes.InvalidArgument) {
			t.Errorf("%s: %v, want InvalidArgument", name, err)
		}
	}
	for _, bad := range []string{"", "landlord/xyz", "service/00/11", "event/x/0123456789abcdef0123456789abcdef", "other/0123456789abcdef0123456789abcdef"} {
		if _, err := parseRef(bad); err == nil {
			t.Errorf("parseRef(%q) took it", bad)
		}
	}
}

func mustGet(o *javaio.Object, field string) javaio.Value {
	v, _ := o.Get(field)
	return v
}

// A Java generator's event is stored as the JSON HTTP clients pull
// (type java, its class, source, IDs, handback) with its object stream,
// which Java gets back whole; an event an HTTP generator sent reaches
// Java as a plain RemoteEvent, its source the source's JSON as a
// String.
func TestStoredEvents(t *testing.T) {
	f, _ := testFace(t)
	mo := javaio.NewObject(f.l.Classes.Class("java.rmi.MarshalledObject")).Set("hash", int32(7)).
		Set("objBytes", &javaio.Array{Class: f.l.Classes.Class("[B"), Prim: []byte{0xac, 0xed, 0, 5, 't', 0, 1, 'h'}})
	ev := javaio.NewObject(f.l.Classes.Class("net.jini.core.event.RemoteEvent")).
		Set("source", "generator-1").Set("eventID", int64(42)).Set("seqNum", int64(3)).Set("handback", mo)
	body, err := f.eventJSON(ev)
	if err != nil {
		t.Fatal(err)
	}
	var stored javaEventJSON
	if err := json.Unmarshal(body, &stored); err != nil {
		t.Fatal(err)
	}
	if stored.Type != "java" || stored.Class != "net.jini.core.event.RemoteEvent" || stored.Source.Java != "generator-1" ||
		stored.EventID != 42 || stored.SeqNum != 3 || len(stored.Handback) == 0 || len(stored.Source.Digest) != 32 {
		t.Fatalf("stored as %s", body)
	}
	back, err := f.javaEvent(body)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := javaio.Encode(ev, false)
	if got, _ := javaio.Encode(back, false); !bytes.Equal(got, want) {
		t.Error("the event Java gets back is not the one it sent")
	}
	// The unknown-event key is the same for the same source and ID.
	k1, _ := f.key(ev)
	k2, _ := f.key(back)
	if string(k1.Source) != string(k2.Source) || k1.EventID != 42 {
		t.Errorf("keys %+v and %+v", k1, k2)
	}

	plain, err := f.javaEvent([]byte(`{"source":{"service":"sensor","id":"s-1"},"eventID":5,"seqNum":9,"type":"reading"}`))
	if err != nil {
		t.Fatal(err)
	}
	src, _ := plain.Get("source")
	id, _ := plain.Get("eventID")
	seq, _ := plain.Get("seqNum")
	if plain.Class.Name != "net.jini.core.event.RemoteEvent" || src != `{"service":"sensor","id":"s-1"}` || id != int64(5) || seq != int64(9) {
		t.Errorf("an HTTP event to Java: %s %v %v %v", plain.Class.Name, src, id, seq)
	}
	for _, bad := range []string{``, `[]`, `{"java":"AAAA"}`, `{"java":"rO0ABXQAAXg="}`} {
		if _, err := f.javaEvent([]byte(bad)); err == nil {
			t.Errorf("javaEvent(%s) took it", bad)
		}
	}
}

// The ServiceID a registrar proxy carries is read from Reggie's own
// proxy (the captured unicast response's).
func TestRegistrarID(t *testing.T) {
	v2, err := os.ReadFile("../javaio/testdata/reggie-unicast-v2.bin")
	if err != nil {
		t.Fatal(err)
	}
	mi, err := javaio.Decode(v2[36:])
	if err != nil {
		t.Fatal(err)
	}
	ob, _ := mi.(*javaio.Object).Get("objBytes")
	p, err := javaio.Decode(ob.(*javaio.Array).Prim)
	if err != nil {
		t.Fatal(err)
	}
	sid, ok := registrarID(p)
	if !ok || sid.String() != "9b2043d1-e829-40e9-8bb9-1a3992edd610" {
		t.Fatalf("read %v %v", sid, ok)
	}
	if _, ok := registrarID("not a proxy"); ok {
		t.Error("a String read as a registrar")
	}
}

// Whatever a Java client sends as a lease, a stored event, or a
// registrar, reading it fails cleanly or succeeds: no panic, bounded
// work.
func FuzzJavaArguments(f *testing.F) {
	fc, _ := testFace(f)
	n := &Norm{face: fc, object: fc.cfg.Identity.Derived("norm")}
	ls, _ := fc.landlordLease(n.server("10.0.0.1"), jeri.Uuid{9}, "0123456789abcdef0123456789abcdef", 1)
	b, _ := javaio.Encode(ls, false)
	f.Add(b)
	f.Add([]byte(`{"source":"x","eventID":1,"seqNum":2,"java":"rO0ABXQAAXg="}`))
	f.Add([]byte{0xac, 0xed, 0, 5, 0x70})
	f.Fuzz(func(t *testing.T, data []byte) {
		if v, err := javaio.Decode(data); err == nil {
			n.readLease(t.Context(), v)
			registrarID(v)
			remoteEvents(v)
			if o, ok := v.(*javaio.Object); ok {
				fc.eventJSON(o)
			}
		}
		if o, err := fc.javaEvent(data); err == nil && o == nil {
			t.Fatal("no event and no error")
		}
	})
}
