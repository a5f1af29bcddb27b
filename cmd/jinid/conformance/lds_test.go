package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/discoverytest"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/api/client"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/lds"
)

// ldsEvent is a RemoteDiscoveryEvent as the listener received it.
type ldsEvent struct {
	Source struct {
		Service string `json:"service"`
		ID      string `json:"id"`
	} `json:"source"`
	EventID    int64                `json:"eventID"`
	SeqNum     int64                `json:"seqNum"`
	Handback   []byte               `json:"handback"`
	Type       string               `json:"type"`
	Discarded  bool                 `json:"discarded"`
	Registrars []apitypes.Registrar `json:"registrars"`
	Groups     map[string][]string  `json:"groups"`
}

func (e ldsEvent) ids() []string {
	var out []string
	for _, r := range e.Registrars {
		out = append(out, r.ServiceID)
	}
	slices.Sort(out)
	return out
}

// eventSink is the test's listener, served from inside the client host:
// each registration gets a path of its own, and each path can be told how
// to answer.
type eventSink struct {
	base string
	mu   sync.Mutex
	ch   map[string]chan ldsEvent
	// answer per path: "" (200), "unknown" (410 UnknownEvent), "gone"
	// (404), or "fail:N" (500 for the first N deliveries).
	answer map[string]string
	fails  map[string]int
}

func newEventSink(t *testing.T, h *netlab.Host, ip string) *eventSink {
	var ln net.Listener
	if err := h.Namespace().Do(func() error {
		var err error
		ln, err = net.Listen("tcp", net.JoinHostPort(ip, "0"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	s := &eventSink{base: "http://" + ln.Addr().String(), ch: map[string]chan ldsEvent{}, answer: map[string]string{}, fails: map[string]int{}}
	jinidtest.Serve(t, ln, s)
	return s
}

func (s *eventSink) path(name string) chan ldsEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch[name] == nil {
		s.ch[name] = make(chan ldsEvent, 100)
	}
	return s.ch[name]
}

func (s *eventSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/")
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	ans := s.answer[name]
	var n int
	if strings.HasPrefix(ans, "fail:") {
		fmt.Sscanf(ans, "fail:%d", &n)
		s.fails[name]++
		if s.fails[name] <= n {
			s.mu.Unlock()
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
	}
	s.mu.Unlock()
	switch ans {
	case "unknown":
		w.WriteHeader(http.StatusGone)
		w.Write([]byte(`{"error":{"code":"UnknownEvent","message":"no more"}}`))
		return
	case "gone":
		w.WriteHeader(http.StatusNotFound)
		return
	}
	var ev ldsEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	s.path(name) <- ev
}

// ldsLab is the shared lab of the suite.
type ldsLab struct {
	t        *testing.T
	bin      string
	lab      *netlab.Lab
	ldsHost  *netlab.Host
	ldsDir   string
	ldsArgs  []string
	ldsCmd   interface{ Kill() error }
	ldsWait  func()
	api      string
	c        *client.Client
	hc       *http.Client
	sink     *eventSink
	ids      map[string]string // lookup service name → ServiceID
	addr     map[string]string // lookup service name → IPv4
	lusProcs map[string]interface{ Kill() error }
	lusAdmin map[string]client.Option // each lookup service's admin token
	n        int
}

// reg is a registration made by a case.
type ldsReg struct {
	client.LDSRegistered
	path string
	ch   chan ldsEvent
}

func (l *ldsLab) register(t *testing.T, groups []string, locs []string, handback []byte, dur int64) ldsReg {
	t.Helper()
	l.n++
	path := fmt.Sprintf("r%d", l.n)
	r, err := l.c.LDSRegister(t.Context(), client.LDSRequest{Groups: groups, Locators: locs, Listener: l.sink.base + "/" + path, Handback: handback, Duration: dur})
	if err != nil {
		t.Fatal(err)
	}
	return ldsReg{LDSRegistered: r, path: path, ch: l.sink.path(path)}
}

func (l *ldsLab) loc(name string) string { return "jini://" + l.addr[name] }

// next waits for the registration's next event and checks it.
func (l *ldsLab) next(t *testing.T, r ldsReg, discarded bool, names ...string) ldsEvent {
	t.Helper()
	var want []string
	for _, n := range names {
		want = append(want, l.ids[n])
	}
	slices.Sort(want)
	select {
	case e := <-r.ch:
		if e.Discarded != discarded || !slices.Equal(e.ids(), want) {
			t.Fatalf("event discarded=%v %v; want discarded=%v %v (%v)", e.Discarded, l.names(e.ids()), discarded, names, want)
		}
		return e
	case <-time.After(10 * time.Second):
		t.Fatalf("no event; want discarded=%v %v", discarded, names)
	}
	return ldsEvent{}
}

// discoveredAll takes discovered events until each named one was in one.
func (l *ldsLab) discoveredAll(t *testing.T, r ldsReg, names ...string) []ldsEvent {
	t.Helper()
	missing := map[string]string{}
	for _, n := range names {
		missing[l.ids[n]] = n
	}
	var evs []ldsEvent
	for len(missing) > 0 {
		select {
		case e := <-r.ch:
			if e.Discarded {
				t.Fatalf("discarded %v while waiting for discoveries", l.names(e.ids()))
			}
			for _, id := range e.ids() {
				if _, ok := missing[id]; !ok {
					t.Fatalf("discovered %s, not wanted or twice", l.names([]string{id}))
				}
				delete(missing, id)
			}
			evs = append(evs, e)
		case <-time.After(10 * time.Second):
			t.Fatalf("not discovered: %v", missing)
		}
	}
	return evs
}

func (l *ldsLab) none(t *testing.T, r ldsReg, d time.Duration) {
	t.Helper()
	select {
	case e := <-r.ch:
		t.Fatalf("unexpected event discarded=%v %v", e.Discarded, l.names(e.ids()))
	case <-time.After(d):
	}
}

func (l *ldsLab) names(ids []string) []string {
	var out []string
	for _, id := range ids {
		name := id
		for n, x := range l.ids {
			if x == id {
				name = n
			}
		}
		out = append(out, name)
	}
	return out
}

// raw sends a request to the LDS daemon's API and returns the status and
// error code.
func (l *ldsLab) raw(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), method, l.api+path, bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := l.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var eb struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	json.NewDecoder(resp.Body).Decode(&eb)
	return resp.StatusCode, eb.Error.Code
}

func (l *ldsLab) startLDS() {
	cmd := jinidtest.LabDaemon(l.t, l.bin, l.ldsHost, l.ldsArgs...)
	l.ldsCmd = cmd.Process
	l.ldsWait = func() { cmd.Wait() }
}

const (
	ldsInterval = 500 * time.Millisecond // every lookup service's announcements
	ldsWindow   = 3 * ldsInterval        // the passive discard window
	quiet       = 1500 * time.Millisecond
)

func TestLDSConformance(t *testing.T) {
	t.Parallel()
	netlabLab := netlab.New(t)
	l := &ldsLab{t: t, bin: jinidtest.Binary(t), lab: netlabLab, ids: map[string]string{}, addr: map[string]string{}, lusProcs: map[string]interface{ Kill() error }{}, lusAdmin: map[string]client.Option{}}
	lan := netlabLab.LAN()
	l.ldsHost = netlabLab.Host("lds")
	ll := l.ldsHost.Attach(lan)
	clientHost := netlabLab.Host("client")
	cl := clientHost.Attach(lan)
	lookupServices := []struct {
		name, groups string
		every        time.Duration
	}{
		{"lus1", "a", ldsInterval},
		{"lus2", "a,b", ldsInterval},
		{"lus3", "c", ldsInterval},
		{"lus4", "d", 3 * time.Second}, // slow: several discards before it is found again
		{"lus5", "e", ldsInterval},     // changes groups
		{"lus6", "f", ldsInterval},     // dies
	}
	for _, s := range lookupServices {
		h := netlabLab.Host(s.name)
		link := h.Attach(lan)
		cmd := jinidtest.LabDaemon(t, l.bin, h, "--groups", s.groups, "--public-group=false", "--announce-interval", s.every.String())
		l.addr[s.name] = link.IPv4.String()
		l.lusProcs[s.name] = cmd.Process
		l.lusAdmin[s.name] = client.WithToken(cmd.AdminToken(t))
	}
	l.ldsDir = t.TempDir()
	l.ldsArgs = []string{"--data-dir", l.ldsDir, "--groups", "ldshost", "--public-group=false",
		"--announce-interval", "10s", "--lds-announce-interval", ldsInterval.String()}
	l.startLDS()
	l.api = "http://" + ll.IPv4.String() + ":4162"
	l.c = jinidtest.LabClient(t, clientHost, l.api)
	l.hc = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		err := clientHost.Namespace().Do(func() error {
			var err error
			c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}}}
	l.sink = newEventSink(t, clientHost, cl.IPv4.String())
	for _, s := range lookupServices {
		info, err := jinidtest.LabClient(t, clientHost, "http://"+l.addr[s.name]+":4162").Lookup(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		l.ids[s.name] = info.ServiceID
	}
	// The LDS daemon is a lookup service too (group ldshost): ALL_GROUPS
	// finds it as well.
	self, err := l.c.Lookup(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	l.ids["self"] = self.ServiceID
	any := int64(-1)

	// --- LD.3.1 register: arguments ---------------------------------------
	for _, c := range []struct {
		name, body, code string
	}{
		{"register/listener-null-is-NullArgument", `{"groups":["a"],"leaseDuration":60000}`, "NullArgument"},
		{"register/listener-not-a-URL-is-InvalidArgument", `{"groups":["a"],"listener":{"url":"not a url"},"leaseDuration":60000}`, "InvalidArgument"},
		{"register/lease-zero-is-InvalidArgument", `{"groups":["a"],"listener":{"url":"http://x/"},"leaseDuration":0}`, "InvalidArgument"},
		{"register/lease-negative-is-InvalidArgument", `{"groups":["a"],"listener":{"url":"http://x/"},"leaseDuration":-5}`, "InvalidArgument"},
		{"register/lease-missing-is-NullArgument", `{"groups":["a"],"listener":{"url":"http://x/"}}`, "NullArgument"},
		{"register/null-group-element-is-NullArgument", `{"groups":["a",null],"listener":{"url":"http://x/"},"leaseDuration":60000}`, "NullArgument"},
		{"register/null-locator-element-is-NullArgument", `{"locators":[null],"listener":{"url":"http://x/"},"leaseDuration":60000}`, "NullArgument"},
		{"register/malformed-locator-is-InvalidArgument", `{"locators":["http://x"],"listener":{"url":"http://x/"},"leaseDuration":60000}`, "InvalidArgument"},
		{"register/unknown-field-is-InvalidArgument", `{"groupz":["a"],"listener":{"url":"http://x/"},"leaseDuration":60000}`, "InvalidArgument"},
		// A name that fits no discovery packet would stop the requests of
		// every registration (issue 15, item 3).
		{"register/group-longer-than-a-packet-allows-is-InvalidArgument", `{"groups":["a","` + strings.Repeat("g", 256) + `"],"listener":{"url":"http://x/"},"leaseDuration":60000}`, "InvalidArgument"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if status, code := l.raw(t, "POST", "/v1/lds/registrations", c.body); code != c.code {
				t.Fatalf("HTTP %d %s, want %s", status, code, c.code)
			}
		})
	}
	t.Run("groups/too-long-refused-by-add-and-set-not-remove", func(t *testing.T) {
		r := l.register(t, []string{"x"}, nil, nil, 60000)
		long := `{"groups":["` + strings.Repeat("g", 256) + `"]}`
		for _, method := range []string{"POST", "PUT"} {
			if status, code := l.raw(t, method, "/v1/lds/registrations/"+r.ID+"/groups", long); code != "InvalidArgument" {
				t.Errorf("%s a 256-byte group: HTTP %d %s, want InvalidArgument", method, status, code)
			}
		}
		if status, code := l.raw(t, "DELETE", "/v1/lds/registrations/"+r.ID+"/groups", long); status/100 != 2 {
			t.Errorf("removing a 256-byte group: HTTP %d %s", status, code)
		}
		if status, code := l.raw(t, "PUT", "/v1/lds/registrations/"+r.ID+"/groups", `{"groups":["`+strings.Repeat("g", 255)+`"]}`); status/100 != 2 {
			t.Errorf("setting a 255-byte group: HTTP %d %s", status, code)
		}
	})
	t.Run("register/refused-requests-register-nothing", func(t *testing.T) {
		// Nothing above left a registration: no event reached the sink
		// (http://x/ is unreachable anyway), and a fresh one gets the next
		// event ID with nothing in between but the two made here.
		a := l.register(t, []string{}, nil, nil, 60000)
		b := l.register(t, []string{}, nil, nil, 60000)
		if b.EventID != a.EventID+1 {
			t.Fatalf("event IDs %d then %d", a.EventID, b.EventID)
		}
	})
	t.Run("register/lease-ANY-granted", func(t *testing.T) {
		r := l.register(t, []string{}, nil, nil, any)
		if r.Lease.Remaining <= 0 || r.Lease.Remaining > lds.DefaultPolicy.Max {
			t.Fatalf("granted %d ms", r.Lease.Remaining)
		}
	})
	t.Run("register/lease-FOREVER-capped-at-the-maximum", func(t *testing.T) {
		r := l.register(t, []string{}, nil, nil, 9223372036854775807)
		if r.Lease.Remaining > lds.DefaultPolicy.Max {
			t.Fatalf("granted %d ms, more than the maximum %d", r.Lease.Remaining, lds.DefaultPolicy.Max)
		}
	})
	t.Run("register/duplicates-removed", func(t *testing.T) {
		r := l.register(t, []string{"x", "y", "x"}, []string{"jini://Host.example", "jini://host.example:4160", "jini://h2.example"}, nil, 60000)
		got, err := l.c.LDSGet(t.Context(), r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Groups, []string{"x", "y"}) || len(got.Locators) != 2 {
			t.Fatalf("groups %q, locators %q", got.Groups, got.Locators)
		}
	})
	t.Run("register/null-groups-is-ALL_GROUPS", func(t *testing.T) {
		status, _ := l.raw(t, "POST", "/v1/lds/registrations", `{"groups":null,"listener":{"url":"http://192.0.2.1/"},"leaseDuration":60000}`)
		if status != 200 {
			t.Fatalf("HTTP %d", status)
		}
		r := l.register(t, nil, nil, nil, 60000)
		got, _ := l.c.LDSGet(t.Context(), r.ID)
		if got.Groups != nil {
			t.Fatalf("groups %q, want null (all groups)", got.Groups)
		}
		l.discoveredAll(t, r, "self", "lus1", "lus2", "lus3", "lus4", "lus5", "lus6")
	})
	t.Run("register/empty-groups-is-NO_GROUPS", func(t *testing.T) {
		r := l.register(t, []string{}, nil, nil, 60000)
		got, _ := l.c.LDSGet(t.Context(), r.ID)
		if got.Groups == nil || len(got.Groups) != 0 {
			t.Fatalf("groups %q, want []", got.Groups)
		}
		l.none(t, r, quiet)
	})
	t.Run("events/event-IDs-unique-per-registration", func(t *testing.T) {
		seen := map[int64]bool{}
		for range 5 {
			r := l.register(t, []string{}, nil, nil, 60000)
			if seen[r.EventID] {
				t.Fatalf("event ID %d twice", r.EventID)
			}
			seen[r.EventID] = true
		}
	})

	// --- LD.3.1/3.2 events --------------------------------------------------
	t.Run("events/discovered-by-group", func(t *testing.T) {
		r := l.register(t, []string{"a"}, nil, nil, 60000)
		evs := l.discoveredAll(t, r, "lus1", "lus2")
		if evs[0].Type != "RemoteDiscoveryEvent" || evs[0].Source.Service != "lds" || evs[0].Source.ID != r.ID || evs[0].EventID != r.EventID {
			t.Fatalf("event %+v", evs[0])
		}
		for _, reg := range evs[0].Registrars {
			if reg.Kind != "jinid" || reg.APIURL == nil || !slices.Contains(reg.Groups, "a") {
				t.Fatalf("registrar %+v", reg)
			}
		}
	})
	t.Run("events/discovered-by-locator-alone", func(t *testing.T) {
		r := l.register(t, []string{}, []string{l.loc("lus3")}, nil, 60000)
		l.next(t, r, false, "lus3")
	})
	t.Run("events/initial-discoveries-batched-in-one-event", func(t *testing.T) {
		r := l.register(t, []string{"a"}, nil, nil, 60000)
		e := l.next(t, r, false, "lus1", "lus2") // both known already: one event
		if len(e.Groups) != 2 || !slices.Equal(e.Groups[l.ids["lus2"]], []string{"a", "b"}) {
			t.Fatalf("groups map %v", e.Groups)
		}
	})
	t.Run("events/discovered-once-until-discarded", func(t *testing.T) {
		r := l.register(t, []string{"a"}, nil, nil, 60000)
		l.next(t, r, false, "lus1", "lus2")
		l.none(t, r, 4*ldsInterval) // announcements keep coming: nothing more
	})
	t.Run("events/handback-returned-unchanged", func(t *testing.T) {
		hb := []byte{0, 1, 2, 0xff, 'j', 'i', 'n', 'i'}
		r := l.register(t, []string{"c"}, nil, hb, 60000)
		if e := l.next(t, r, false, "lus3"); !bytes.Equal(e.Handback, hb) {
			t.Fatalf("handback %x, want %x", e.Handback, hb)
		}
	})
	t.Run("events/sequence-numbers-consecutive", func(t *testing.T) {
		r := l.register(t, []string{"a"}, nil, nil, 60000)
		var seqs []int64
		seqs = append(seqs, l.next(t, r, false, "lus1", "lus2").SeqNum)
		l.c.LDSGroups(t.Context(), r.ID, client.Set, []string{"c"})
		seqs = append(seqs, l.next(t, r, false, "lus3").SeqNum, l.next(t, r, true, "lus1", "lus2").SeqNum)
		// (discovered and discarded of one change may come in either order)
		slices.Sort(seqs)
		if seqs[0] != 1 || seqs[1] != 2 || seqs[2] != 3 {
			t.Fatalf("sequence numbers %v, want 1 2 3", seqs)
		}
	})

	// --- LD.4.1 group mutators ---------------------------------------------
	t.Run("groups/add-already-discovered-no-event", func(t *testing.T) {
		r := l.register(t, []string{"a"}, nil, nil, 60000)
		l.next(t, r, false, "lus1", "lus2")
		if _, err := l.c.LDSGroups(t.Context(), r.ID, client.Add, []string{"b"}); err != nil {
			t.Fatal(err)
		}
		l.none(t, r, quiet)
	})
	t.Run("groups/add-discovers-new-members", func(t *testing.T) {
		r := l.register(t, []string{"a"}, nil, nil, 60000)
		l.next(t, r, false, "lus1", "lus2")
		got, err := l.c.LDSGroups(t.Context(), r.ID, client.Add, []string{"c", "c"})
		if err != nil || !slices.Equal(got.Groups, []string{"a", "c"}) {
			t.Fatalf("groups %q, %v", got.Groups, err)
		}
		l.next(t, r, false, "lus3")
	})
	t.Run("groups/add-empty-changes-nothing", func(t *testing.T) {
		r := l.register(t, []string{"a"}, nil, nil, 60000)
		l.next(t, r, false, "lus1", "lus2")
		got, err := l.c.LDSGroups(t.Context(), r.ID, client.Add, []string{})
		if err != nil || !slices.Equal(got.Groups, []string{"a"}) {
			t.Fatalf("groups %q, %v", got.Groups, err)
		}
		l.none(t, r, quiet)
	})
	t.Run("groups/remove-discards-what-no-group-wants", func(t *testing.T) {
		r := l.register(t, []string{"a", "c"}, nil, nil, 60000)
		l.discoveredAll(t, r, "lus1", "lus2", "lus3")
		l.c.LDSGroups(t.Context(), r.ID, client.Remove, []string{"c"})
		l.next(t, r, true, "lus3")
	})
	t.Run("groups/remove-keeps-members-of-remaining-groups", func(t *testing.T) {
		r := l.register(t, []string{"a", "b"}, nil, nil, 60000)
		l.next(t, r, false, "lus1", "lus2")
		l.c.LDSGroups(t.Context(), r.ID, client.Remove, []string{"b"})
		l.none(t, r, quiet) // lus2 is in a too
	})
	t.Run("groups/remove-keeps-what-a-locator-wants", func(t *testing.T) {
		r := l.register(t, []string{"c"}, []string{l.loc("lus3")}, nil, 60000)
		l.next(t, r, false, "lus3")
		l.c.LDSGroups(t.Context(), r.ID, client.Remove, []string{"c"})
		l.none(t, r, quiet)
	})
	t.Run("groups/remove-absent-changes-nothing", func(t *testing.T) {
		r := l.register(t, []string{"c"}, nil, nil, 60000)
		l.next(t, r, false, "lus3")
		got, err := l.c.LDSGroups(t.Context(), r.ID, client.Remove, []string{"zz"})
		if err != nil || !slices.Equal(got.Groups, []string{"c"}) {
			t.Fatalf("groups %q, %v", got.Groups, err)
		}
		l.none(t, r, quiet)
	})
	t.Run("groups/set-replaces", func(t *testing.T) {
		r := l.register(t, []string{"a"}, nil, nil, 60000)
		l.next(t, r, false, "lus1", "lus2")
		l.c.LDSGroups(t.Context(), r.ID, client.Set, []string{"c"})
		got := map[bool][]string{}
		for range 2 {
			select {
			case e := <-r.ch:
				got[e.Discarded] = l.names(e.ids())
			case <-time.After(10 * time.Second):
				t.Fatal("missing events after set")
			}
		}
		if !slices.Equal(got[false], []string{"lus3"}) || len(got[true]) != 2 {
			t.Fatalf("after set: %v", got)
		}
	})
	t.Run("groups/set-null-is-ALL_GROUPS", func(t *testing.T) {
		r := l.register(t, []string{"a"}, nil, nil, 60000)
		l.next(t, r, false, "lus1", "lus2")
		got, err := l.c.LDSGroups(t.Context(), r.ID, client.Set, nil)
		if err != nil || got.Groups != nil {
			t.Fatalf("groups %q, %v", got.Groups, err)
		}
		l.discoveredAll(t, r, "self", "lus3", "lus4", "lus5", "lus6")
	})
	t.Run("groups/set-empty-halts-group-discovery", func(t *testing.T) {
		r := l.register(t, []string{"c"}, nil, nil, 60000)
		l.next(t, r, false, "lus3")
		l.c.LDSGroups(t.Context(), r.ID, client.Set, []string{})
		l.next(t, r, true, "lus3")
		l.none(t, r, quiet)
	})
	t.Run("groups/add-to-ALL_GROUPS-is-UnsupportedOperation", func(t *testing.T) {
		r := l.register(t, nil, nil, nil, 60000)
		if status, code := l.raw(t, "POST", "/v1/lds/registrations/"+r.ID+"/groups", `{"groups":["x"]}`); code != "UnsupportedOperation" {
			t.Fatalf("HTTP %d %s", status, code)
		}
	})
	t.Run("groups/remove-from-ALL_GROUPS-is-UnsupportedOperation", func(t *testing.T) {
		r := l.register(t, nil, nil, nil, 60000)
		if status, code := l.raw(t, "DELETE", "/v1/lds/registrations/"+r.ID+"/groups", `{"groups":["x"]}`); code != "UnsupportedOperation" {
			t.Fatalf("HTTP %d %s", status, code)
		}
	})
	t.Run("groups/null-or-null-element-is-NullArgument", func(t *testing.T) {
		r := l.register(t, []string{}, nil, nil, 60000)
		for _, c := range []struct{ method, body string }{
			{"POST", `{"groups":null}`}, {"DELETE", `{"groups":null}`}, {"PUT", `{"groups":["a",null]}`}, {"POST", `{}`},
		} {
			if status, code := l.raw(t, c.method, "/v1/lds/registrations/"+r.ID+"/groups", c.body); code != "NullArgument" {
				t.Errorf("%s %s: HTTP %d %s", c.method, c.body, status, code)
			}
		}
	})

	// --- LD.4.1 locator mutators -------------------------------------------
	t.Run("locators/add-discovers", func(t *testing.T) {
		r := l.register(t, []string{}, nil, nil, 60000)
		if _, err := l.c.LDSLocators(t.Context(), r.ID, client.Add, []string{l.loc("lus1")}); err != nil {
			t.Fatal(err)
		}
		l.next(t, r, false, "lus1")
	})
	t.Run("locators/add-already-discovered-by-group-no-event", func(t *testing.T) {
		r := l.register(t, []string{"c"}, nil, nil, 60000)
		l.next(t, r, false, "lus3")
		l.c.LDSLocators(t.Context(), r.ID, client.Add, []string{l.loc("lus3")})
		l.none(t, r, quiet)
	})
	t.Run("locators/remove-discards", func(t *testing.T) {
		r := l.register(t, []string{}, []string{l.loc("lus3")}, nil, 60000)
		l.next(t, r, false, "lus3")
		l.c.LDSLocators(t.Context(), r.ID, client.Remove, []string{l.loc("lus3")})
		l.next(t, r, true, "lus3")
	})
	t.Run("locators/remove-keeps-what-a-group-wants", func(t *testing.T) {
		r := l.register(t, []string{"c"}, []string{l.loc("lus3")}, nil, 60000)
		l.next(t, r, false, "lus3")
		l.c.LDSLocators(t.Context(), r.ID, client.Remove, []string{l.loc("lus3")})
		l.none(t, r, quiet)
	})
	t.Run("locators/set-replaces", func(t *testing.T) {
		r := l.register(t, []string{}, []string{l.loc("lus1")}, nil, 60000)
		l.next(t, r, false, "lus1")
		got, err := l.c.LDSLocators(t.Context(), r.ID, client.Set, []string{l.loc("lus3")})
		if err != nil || len(got.Locators) != 1 {
			t.Fatalf("locators %q, %v", got.Locators, err)
		}
		evs := map[bool][]string{}
		for range 2 {
			select {
			case e := <-r.ch:
				evs[e.Discarded] = l.names(e.ids())
			case <-time.After(10 * time.Second):
				t.Fatal("missing events")
			}
		}
		if !slices.Equal(evs[false], []string{"lus3"}) || !slices.Equal(evs[true], []string{"lus1"}) {
			t.Fatalf("after set: %v", evs)
		}
	})
	t.Run("locators/null-is-NullArgument", func(t *testing.T) {
		r := l.register(t, []string{}, nil, nil, 60000)
		for _, m := range []string{"POST", "PUT", "DELETE"} {
			if status, code := l.raw(t, m, "/v1/lds/registrations/"+r.ID+"/locators", `{"locators":null}`); code != "NullArgument" {
				t.Errorf("%s: HTTP %d %s", m, status, code)
			}
		}
	})

	// --- accessors, getRegistrars ------------------------------------------
	t.Run("registrars/match-the-events", func(t *testing.T) {
		r := l.register(t, []string{"a", "c"}, nil, nil, 60000)
		l.discoveredAll(t, r, "lus1", "lus2", "lus3")
		rs, err := l.c.LDSRegistrars(t.Context(), r.ID)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, x := range rs {
			ids = append(ids, x.ServiceID)
		}
		slices.Sort(ids)
		want := []string{l.ids["lus1"], l.ids["lus2"], l.ids["lus3"]}
		slices.Sort(want)
		if !slices.Equal(ids, want) {
			t.Fatalf("registrars %v, want %v", l.names(ids), []string{"lus1", "lus2", "lus3"})
		}
	})
	t.Run("registration/unknown-is-NoSuchObject", func(t *testing.T) {
		for _, c := range []struct{ method, path, body string }{
			{"GET", "/v1/lds/registrations/nope", ""},
			{"GET", "/v1/lds/registrations/nope/registrars", ""},
			{"PUT", "/v1/lds/registrations/nope/groups", `{"groups":[]}`},
			{"POST", "/v1/lds/registrations/nope/locators", `{"locators":[]}`},
			{"POST", "/v1/lds/registrations/nope/discard", `{"serviceID":"` + l.ids["lus1"] + `"}`},
		} {
			if status, code := l.raw(t, c.method, c.path, c.body); code != "NoSuchObject" || status != 404 {
				t.Errorf("%s %s: HTTP %d %s", c.method, c.path, status, code)
			}
		}
	})

	// --- discard -------------------------------------------------------------
	t.Run("discard/discarded-then-rediscovered", func(t *testing.T) {
		r := l.register(t, []string{"c"}, nil, nil, 60000)
		l.next(t, r, false, "lus3")
		if err := l.c.LDSDiscard(t.Context(), r.ID, l.ids["lus3"]); err != nil {
			t.Fatal(err)
		}
		l.next(t, r, true, "lus3")
		l.next(t, r, false, "lus3") // its next announcement
	})
	t.Run("discard/not-in-the-set-does-nothing", func(t *testing.T) {
		r := l.register(t, []string{"c"}, nil, nil, 60000)
		l.next(t, r, false, "lus3")
		if err := l.c.LDSDiscard(t.Context(), r.ID, l.ids["lus1"]); err != nil {
			t.Fatal(err)
		}
		l.none(t, r, quiet)
	})
	t.Run("discard/null-or-bad-serviceID-refused", func(t *testing.T) {
		r := l.register(t, []string{}, nil, nil, 60000)
		if _, code := l.raw(t, "POST", "/v1/lds/registrations/"+r.ID+"/discard", `{}`); code != "NullArgument" {
			t.Errorf("no serviceID: %s", code)
		}
		if _, code := l.raw(t, "POST", "/v1/lds/registrations/"+r.ID+"/discard", `{"serviceID":"xyz"}`); code != "InvalidArgument" {
			t.Errorf("bad serviceID: %s", code)
		}
	})
	t.Run("discard/many-clients-before-rediscovery", func(t *testing.T) {
		// lus4 announces every 3 s: both discards land before it is heard
		// again; only those two registrations hear of its rediscovery.
		a, b, c := l.register(t, []string{"d"}, nil, nil, 60000), l.register(t, []string{"d"}, nil, nil, 60000), l.register(t, []string{"d"}, nil, nil, 60000)
		for _, r := range []ldsReg{a, b, c} {
			l.next(t, r, false, "lus4")
		}
		l.c.LDSDiscard(t.Context(), a.ID, l.ids["lus4"])
		l.c.LDSDiscard(t.Context(), b.ID, l.ids["lus4"])
		l.next(t, a, true, "lus4")
		l.next(t, b, true, "lus4")
		l.next(t, a, false, "lus4")
		l.next(t, b, false, "lus4")
		l.none(t, c, quiet) // c did not discard: it kept it, and hears nothing
	})

	t.Run("discard/only-the-discarding-registration-hears", func(t *testing.T) {
		// LD.4.1: after discard, only the registrations through which it
		// was invoked are told, on discard and on rediscovery; one that
		// holds it by locator alone hears nothing (issue 15, item 2).
		byGroup := l.register(t, []string{"c"}, nil, nil, 60000)
		byLoc := l.register(t, []string{}, []string{l.loc("lus3")}, nil, 60000)
		l.next(t, byGroup, false, "lus3")
		l.next(t, byLoc, false, "lus3")
		if err := l.c.LDSDiscard(t.Context(), byGroup.ID, l.ids["lus3"]); err != nil {
			t.Fatal(err)
		}
		l.next(t, byGroup, true, "lus3")
		l.next(t, byGroup, false, "lus3") // its next announcement
		l.none(t, byLoc, quiet)
		if rs, _ := l.c.LDSRegistrars(t.Context(), byLoc.ID); len(rs) != 1 {
			t.Fatalf("the locator-only registration's set: %v", rs)
		}
	})

	// --- passive discards ----------------------------------------------------
	t.Run("passive/lookup-service-joins-a-group-of-interest", func(t *testing.T) {
		r := l.register(t, []string{"e2"}, nil, nil, 60000)
		l.none(t, r, 2*ldsInterval)
		lc := jinidtest.LabClient(t, clientHost, "http://"+l.addr["lus5"]+":4162", l.lusAdmin["lus5"])
		if err := lc.SetGroups(t.Context(), []string{"e", "e2"}); err != nil {
			t.Fatal(err)
		}
		l.next(t, r, false, "lus5")
	})
	t.Run("passive/no-interest-discard-only-by-group", func(t *testing.T) {
		byGroup := l.register(t, []string{"e"}, nil, nil, 60000)
		byLoc := l.register(t, []string{}, []string{l.loc("lus5")}, nil, 60000)
		l.next(t, byGroup, false, "lus5")
		l.next(t, byLoc, false, "lus5")
		lc := jinidtest.LabClient(t, clientHost, "http://"+l.addr["lus5"]+":4162", l.lusAdmin["lus5"])
		if err := lc.SetGroups(t.Context(), []string{"elsewhere"}); err != nil {
			t.Fatal(err)
		}
		e := l.next(t, byGroup, true, "lus5")
		if !slices.Equal(e.Groups[l.ids["lus5"]], []string{"elsewhere"}) {
			t.Fatalf("discarded with groups %v, want the new ones", e.Groups)
		}
		l.none(t, byLoc, quiet)
	})
	t.Run("passive/communication-discard-to-every-registration-wanting-it-by-group", func(t *testing.T) {
		// LD.3.1: a passive communication discard goes to each
		// registration interested in one of its member groups (through
		// at least group discovery), by locator too or not; only those
		// wanting it by locator alone are spared (issue 15, item 1).
		byGroup := l.register(t, []string{"f"}, nil, nil, 60000)
		byLoc := l.register(t, []string{}, []string{l.loc("lus6")}, nil, 60000)
		both := l.register(t, []string{"f"}, []string{l.loc("lus6")}, nil, 60000)
		for _, r := range []ldsReg{byGroup, byLoc, both} {
			l.next(t, r, false, "lus6")
		}
		// Kill it: no last announcement, the port refuses.
		l.lusProcs["lus6"].Kill()
		killed := time.Now()
		for _, r := range []ldsReg{byGroup, both} {
			l.next(t, r, true, "lus6")
			if took := time.Since(killed); took > ldsWindow+2*time.Second {
				t.Errorf("discarded %v after it died; window %v", took, ldsWindow)
			}
		}
		l.none(t, byLoc, quiet) // locator only: never passively discarded
		l.none(t, both, 100*time.Millisecond)
		if rs, _ := l.c.LDSRegistrars(t.Context(), byLoc.ID); len(rs) != 1 {
			t.Fatalf("locator-only registration's set: %v", rs)
		}
		if rs, _ := l.c.LDSRegistrars(t.Context(), both.ID); len(rs) != 0 {
			t.Fatalf("the set of the registration wanting it by group and locator: %v", rs)
		}
	})

	// --- delivery failures and leases ---------------------------------------
	t.Run("delivery/indefinite-failure-retried-until-delivered", func(t *testing.T) {
		l.n++
		path := fmt.Sprintf("r%d", l.n)
		l.sink.mu.Lock()
		l.sink.answer[path] = "fail:3"
		l.sink.mu.Unlock()
		reg, err := l.c.LDSRegister(t.Context(), client.LDSRequest{Groups: []string{"c"}, Listener: l.sink.base + "/" + path, Duration: 60000})
		if err != nil {
			t.Fatal(err)
		}
		r := ldsReg{LDSRegistered: reg, path: path, ch: l.sink.path(path)}
		l.next(t, r, false, "lus3")
		if _, err := l.c.LDSGet(t.Context(), r.ID); err != nil {
			t.Fatalf("registration after indefinite failures: %v", err)
		}
	})
	for _, c := range []struct{ name, answer string }{
		{"delivery/UnknownEvent-cancels-the-registration", "unknown"},
		{"delivery/bad-object-cancels-the-registration", "gone"},
	} {
		t.Run(c.name, func(t *testing.T) {
			l.n++
			path := fmt.Sprintf("r%d", l.n)
			l.sink.mu.Lock()
			l.sink.answer[path] = c.answer
			l.sink.mu.Unlock()
			reg, err := l.c.LDSRegister(t.Context(), client.LDSRequest{Groups: []string{"c"}, Listener: l.sink.base + "/" + path, Duration: 60000})
			if err != nil {
				t.Fatal(err)
			}
			testenv.Until(t, "the registration cancelled", func() bool {
				_, err := l.c.LDSGet(t.Context(), reg.ID)
				return err != nil && strings.Contains(err.Error(), "NoSuchObject")
			})
		})
	}
	t.Run("lease/expiry-stops-events", func(t *testing.T) {
		r := l.register(t, []string{}, nil, nil, 1000)
		testenv.Until(t, "the lapsed registration gone", func() bool {
			_, err := l.c.LDSGet(t.Context(), r.ID)
			return fault.Is(err, apitypes.NoSuchObject)
		})
		if status, code := l.raw(t, "PUT", "/v1/lds/registrations/"+r.ID+"/groups", `{"groups":["a"]}`); code != "NoSuchObject" {
			t.Fatalf("mutating an expired registration: HTTP %d %s", status, code)
		}
		l.none(t, r, quiet)
	})
	t.Run("lease/cancel-ends-the-registration", func(t *testing.T) {
		r := l.register(t, []string{"c"}, nil, nil, 60000)
		l.next(t, r, false, "lus3")
		if err := l.c.Cancel(t.Context(), r.Lease.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := l.c.LDSGet(t.Context(), r.ID); err == nil {
			t.Fatal("registration survives its lease's cancellation")
		}
	})
	t.Run("lease/renewal-keeps-it", func(t *testing.T) {
		r := l.register(t, []string{"c"}, nil, nil, 1500)
		l.next(t, r, false, "lus3")
		if _, _, err := l.c.Renew(t.Context(), r.Lease.ID, 60000); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second) // past the lease first granted: the renewal is what keeps it
		if _, err := l.c.LDSGet(t.Context(), r.ID); err != nil {
			t.Fatalf("renewed registration: %v", err)
		}
	})

	// --- persistence across a crash -----------------------------------------
	t.Run("restart/registrations-survive-a-crash-without-repeated-events", func(t *testing.T) {
		r := l.register(t, []string{"a"}, []string{l.loc("lus3")}, []byte("hb"), 600000)
		evs := l.discoveredAll(t, r, "lus1", "lus2", "lus3")
		last := evs[len(evs)-1].SeqNum
		l.ldsCmd.Kill()
		l.ldsWait()
		l.startLDS()
		got, err := l.c.LDSGet(t.Context(), r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Groups, []string{"a"}) || len(got.Locators) != 1 || got.SeqNum != last || got.EventID != r.EventID {
			t.Fatalf("after the crash: %+v (sequence %d before)", got, last)
		}
		// Rediscovered after the restart: no second discovered event.
		l.none(t, r, 2*ldsWindow)
		// The next event continues the sequence (a gap would be allowed
		// after a crash, never a repeat).
		l.c.LDSGroups(t.Context(), r.ID, client.Set, []string{})
		e := l.next(t, r, true, "lus1", "lus2")
		if e.SeqNum <= last {
			t.Fatalf("sequence %d after %d", e.SeqNum, last)
		}
		if !bytes.Equal(e.Handback, []byte("hb")) {
			t.Fatalf("handback %q after restart", e.Handback)
		}
	})
}

// TestLDSOverlongGroupBesideValid: one registration's group name too long
// for any discovery packet must not stop the multicast requests made for
// the others (issue 15, item 3). It is refused with InvalidArgument
// naming the limit, and a registration beside it finds a lookup service
// that never announces: only a request finds it.
func TestLDSOverlongGroupBesideValid(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	lh, dh, ch := lab.Host("lus"), lab.Host("lds"), lab.Host("client")
	lh.Attach(lan)
	dl, cl := dh.Attach(lan), ch.Attach(lan)
	lus, err := discoverytest.StartLookupService(discoverytest.LookupServiceConfig{Version: 2, ServiceID: discovery.ServiceID{0x15}, Groups: []string{"h"},
		Announce: -1, Namespace: lh.Namespace()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lus.Close)
	jinidtest.LabDaemon(t, bin, dh, "--groups", "ldshost", "--public-group=false", "--no-dns-sd")
	c := jinidtest.LabClient(t, ch, "http://"+dl.IPv4.String()+":4162")
	sink := newEventSink(t, ch, cl.IPv4.String())

	_, err = c.LDSRegister(t.Context(), client.LDSRequest{Groups: []string{"h2", strings.Repeat("g", 481)}, Listener: sink.base + "/long", Duration: 60000})
	var fe *apitypes.Error
	if !errors.As(err, &fe) || fe.Code != apitypes.InvalidArgument || !strings.Contains(fe.Message, "255") {
		t.Errorf("registering a 481-byte group: %v; want InvalidArgument naming the limit", err)
	}
	if _, err := c.LDSRegister(t.Context(), client.LDSRequest{Groups: []string{"h"}, Listener: sink.base + "/h", Duration: 60000}); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-sink.path("h"):
		if e.Discarded || len(e.Registrars) != 1 || !slices.Contains(e.Registrars[0].Groups, "h") {
			t.Fatalf("event %+v, want the lookup service of group h discovered", e)
		}
		// Found by a request: the lookup service counts its answer once
		// it is written, which may be after the event (it raced under
		// CI's load).
		testenv.Until(t, "the lookup service's answer to a request counted", func() bool { return lus.ConnectBacks() > 0 })
	case <-time.After(10 * time.Second):
		t.Fatal("the lookup service that only answers requests was not found: no request was sent for group h")
	}
}
